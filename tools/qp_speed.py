"""Speed of the batched QP solver on quadruped force-distribution QPs (12 variables, 20 rows):
QPs solved per second, one solve captured in a CUDA graph and replayed (on a CPU: solves one
after another), per solver backend (torch steps, eager and with `--compile` compiled; one Warp
kernel), batch size and ADMM iteration count; the residuals it reached; and, where proxsuite is
installed, proxsuite's time per QP on one CPU core (the reference solver, run one problem after
another).

    python tools/qp_speed.py [--batches 1024,4096,16384,65536] [--iterations 200,25] [--backends torch,warp]
        [--block-dims 32,64,256] [--compile] [--device cuda|cpu] [--out F.json]

--out writes a bench.json, whose table (`bench-table qp` in the docs, through `phalanx bench
docs`) has a row per solver and step count, a column per batch.

The constraint matrix is the same for every problem (friction pyramids and normal-force rows),
so the solver's products with it are one matrix product for the batch. Problems: random feet
around a 0.7 x 0.5 m stance 0.5 m below the center of mass, a wrench around a 50 kg robot's
weight, half of them with two diagonal feet in swing. Every timed solve is warm-started from the
previous one, each robot's desired wrench scaled by a random factor of about 1 +- 0.002 (g is
linear in it), as in a control loop from one step to the next: `--iterations 25` is such a
loop's budget.
"""

# ruff: noqa: N806, E741

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from phalanx.bench.machine import tool_bench
from phalanx.control.force_qp import force_distribution_qp
from phalanx.control.host_qp import proxsuite_problem
from phalanx.control.qp import BatchedQP, QPSettings
from phalanx.core.files import write_text_atomic


def problems(batch: int, device: torch.device, seed: int = 0, dtype=torch.float32):
    g = torch.Generator(device="cpu").manual_seed(seed)
    feet = torch.tensor([[0.35, 0.25, -0.5], [0.35, -0.25, -0.5], [-0.35, 0.25, -0.5], [-0.35, -0.25, -0.5]])
    feet = feet + 0.05 * torch.randn(batch, 4, 3, generator=g)
    wrench = torch.randn(batch, 6, generator=g) * torch.tensor([40, 40, 60, 10, 10, 5.0])
    wrench[:, 2] += 50.0 * 9.81
    stance = torch.ones(batch, 4, dtype=torch.bool)
    stance[: batch // 2, 0] = stance[: batch // 2, 3] = False
    qp = force_distribution_qp(feet.double(), wrench.double(), stance, mu=0.6, f_max=500.0)
    return [t.to(device, dtype).contiguous() for t in qp]


def time_solves(
    batch: int, iterations: int, backend: str, compile_solve: bool, device: torch.device, block_dim: int
) -> dict:
    H, g, A, l, u = problems(batch, device)
    settings = QPSettings(iterations=iterations, backend=backend, block_dim=block_dim)
    solver = BatchedQP(batch, 12, 20, settings, compile=compile_solve, device=device)
    solve = solver.solve

    def jittered():  # the next control step's problem: each robot's desired wrench scaled by ~0.2 %
        return solve(H, g * (1 + 0.002 * torch.randn_like(g[:, :1])), A, l, u)

    start = time.perf_counter()
    for _ in range(3):  # loads the kernel, and warms the solution up to the steady state of a control loop
        solution = jittered()
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else lambda device: None
    sync(device)
    first_s = time.perf_counter() - start
    if cuda:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            solution = jittered()
        step = graph.replay
        step()
    else:
        step = jittered
    sync(device)
    reps = max(5, min(200, int((2e6 if cuda else 2e5) // (batch * iterations) + 5)))
    start = time.perf_counter()
    for _ in range(reps):
        solution = step() or solution
    sync(device)
    per_solve = (time.perf_counter() - start) / reps
    return {
        "backend": backend,
        "compile": compile_solve,
        "block_dim": block_dim if backend == "warp" else None,
        "batch": batch,
        "iterations": iterations,
        "solve_ms": 1e3 * per_solve,
        "qps_per_s": batch / per_solve,
        "first_three_solves_s": first_s,
        "primal_residual_max": float(solution.primal_residual.max()),
        "dual_residual_median": float(solution.dual_residual.median()),
        "dual_residual_max": float(solution.dual_residual.max()),
        "flagged": int((solution.primal_infeasible | solution.dual_infeasible).sum()),
    }


def time_proxsuite(count: int = 2000) -> dict | None:
    try:
        import proxsuite
    except ImportError:
        return None
    qps = (t.double().numpy() for t in problems(count, torch.device("cpu"), seed=1, dtype=torch.float64))
    H, g, _, _, A, l, u = proxsuite_problem(*qps)
    start = time.perf_counter()
    for b in range(count):  # A: one matrix for every problem
        proxsuite.proxqp.dense.solve(H[b], g[b], None, None, A, l[b], u[b], eps_abs=1e-6)
    per_qp = (time.perf_counter() - start) / count
    return {"solver": f"proxsuite {proxsuite.__version__} (dense, eps_abs 1e-6, one core)", "per_qp_us": 1e6 * per_qp}


def reference_row(reference: dict) -> dict:
    """proxsuite's time per QP as a result row: one problem at a time (a batch of 1)."""
    per_qp_s = reference["per_qp_us"] / 1e6
    return {"backend": reference["solver"], "compile": False, "block_dim": None, "batch": 1, "iterations": None} | {
        "solve_ms": 1e3 * per_qp_s,
        "qps_per_s": 1 / per_qp_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1024,4096,16384,65536")
    parser.add_argument("--iterations", default="200,25")
    parser.add_argument("--backends", default="torch,warp")
    parser.add_argument("--compile", action="store_true", help="also time the torch steps compiled")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--block-dims", default=str(QPSettings.block_dim), help="the warp backend's threads per block")
    parser.add_argument("--out", help="write the results here as a bench.json (`bench-table qp` in the docs)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device(args.device)
    rows = []
    block_dims = [int(d) for d in args.block_dims.split(",")]
    default = QPSettings.block_dim  # the torch steps launch no kernel of their own
    ways = [(b, False, d) for b in args.backends.split(",") for d in (block_dims if b == "warp" else [default])]
    ways += [("torch", True, default)] if args.compile and "torch" in args.backends.split(",") else []
    for backend, compile_solve, block_dim in ways:
        for iterations in (int(i) for i in args.iterations.split(",")):
            for batch in (int(b) for b in args.batches.split(",")):
                row = time_solves(batch, iterations, backend, compile_solve, device, block_dim)
                rows.append(row)
                print(json.dumps(row), flush=True)
    reference = time_proxsuite()
    print(json.dumps({"reference": reference}), flush=True)
    if args.out:
        results = rows + ([reference_row(reference)] if reference else [])
        bench = tool_bench("qp", "force QP", "qp_speed.py", sys.argv[1:], str(device), results=results)
        write_text_atomic(args.out, json.dumps(bench, indent=1) + "\n")


if __name__ == "__main__":
    main()
