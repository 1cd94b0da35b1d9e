"""ADMM or a primal-dual interior point for the batched force-distribution QP: which one to ship.

phalanx.control.qp solves with OSQP's ADMM. This probe holds the alternative, a batched
primal-dual interior point (Mehrotra's predictor-corrector on a fixed iteration count, the
method of qpth/OptNet), and measures both on tools/qp_speed.py's problems (12 forces, 20 rows,
half of the robots trotting) against proxsuite run to 1e-10:
- cold: each method from scratch, after k iterations: the largest relative error of the
  solution and of the objective, the largest constraint violation;
- warm, as in a control loop: 20 solves of a desired wrench drifting 0.2 % per solve, each
  warm-started from the last (an interior point restarts from its initial point: a warm start
  near the boundary stalls it);
- the work of one solve: kernels launched (torch's operators, counted by its dispatcher, plus
  the one Warp kernel of ADMM's warp backend) and, on CUDA, the time of one solve captured in a
  CUDA graph.

    python tools/qp_methods.py [--batch 1024] [--device cpu|cuda] [--dtype float64|float32]
        [--admm-backend torch|warp] [--out F]
"""

# The QP literature's names (H, A, l, u) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from phalanx.bench.physics import captured_seconds
from phalanx.control.host_qp import proxsuite_problem
from phalanx.control.qp import BatchedQP, QPSettings
from qp_speed import problems


def interior_point(H, g, A, l, u, iterations: int) -> torch.Tensor:
    """(B, n) solutions of min 1/2 x'Hx + g'x s.t. l <= Ax <= u after `iterations` Mehrotra
    predictor-corrector steps from x = 0, for a constraint matrix A (m, n) shared by the batch.
    The rows become Gx <= h with G = [A; -A], h = [u; -l]; a row with an infinite bound is masked
    out (no slack, no multiplier). Graph-safe: fixed work, Cholesky without a status read."""
    G = torch.cat([A, -A])  # (2m, n)
    h = torch.cat([u, -l], dim=-1)  # (B, 2m)
    active = torch.isfinite(h)
    h = torch.where(active, h, 0.0)
    mask = active.to(H.dtype)
    rows = mask.sum(-1, keepdim=True).clamp_min(1.0)
    x = torch.zeros_like(g)
    s = torch.where(active, (h - x @ G.mT).clamp_min(1.0), 1.0)
    z = mask.clone()

    def newton(K_chol, r_d, r_p, r_c):
        """(dx, ds, dz) of the Newton system; K = H + G' diag(z/s) G factored."""
        rhs = -r_d - (mask * (z * r_p - r_c) / s) @ G
        # Two triangular solves rather than torch.cholesky_solve, which may read status back to
        # the host on CUDA (not allowed inside a CUDA graph capture).
        half = torch.linalg.solve_triangular(K_chol, rhs[..., None], upper=False)
        dx = torch.linalg.solve_triangular(K_chol.mT, half, upper=True).squeeze(-1)
        ds = -(r_p + dx @ G.mT) * mask
        dz = (-r_c - z * ds) / s * mask
        return dx, ds, dz

    def step_to_boundary(v, dv):
        """(B, 1) the largest step in [0, 1] that keeps v + step dv >= 0 where masked in."""
        ratio = torch.where((dv < 0) & active, -v / dv.clamp_max(-torch.finfo(v.dtype).tiny), 1.0)
        return ratio.amin(-1, keepdim=True).clamp_max(1.0)

    eps = torch.finfo(H.dtype).eps
    # A problem stops where its complementarity reaches rounding: in float32, the weights z / s
    # of the active rows would otherwise outgrow the Cholesky factorization (NaN).
    done_below = 10 * eps * h.abs().amax(-1, keepdim=True).clamp_min(1.0)
    eye = torch.eye(H.shape[-1], dtype=H.dtype, device=H.device)
    for _ in range(iterations):
        r_d = x @ H.mT if H.dim() == 2 else (H @ x[..., None]).squeeze(-1)
        r_d = r_d + g + (mask * z) @ G
        r_p = (x @ G.mT + s - h) * mask
        mu = (s * z * mask).sum(-1, keepdim=True) / rows
        K = H + G.mT @ ((mask * z / s)[..., None] * G)
        K = K + 10 * eps * K.diagonal(dim1=-2, dim2=-1).amax(-1)[:, None, None] * eye
        K_chol, _ = torch.linalg.cholesky_ex(K)
        dx, ds, dz = newton(K_chol, r_d, r_p, s * z * mask)  # affine scaling (predictor)
        alpha = torch.minimum(step_to_boundary(s, ds), step_to_boundary(z, dz))
        mu_aff = ((s + alpha * ds) * (z + alpha * dz) * mask).sum(-1, keepdim=True) / rows
        sigma = (mu_aff / mu.clamp_min(torch.finfo(mu.dtype).tiny)).clamp(0.0, 1.0) ** 3
        r_c = (s * z + ds * dz - sigma * mu) * mask  # corrector and centering
        dx, ds, dz = newton(K_chol, r_d, r_p, r_c)
        alpha = 0.99 * torch.minimum(step_to_boundary(s, ds), step_to_boundary(z, dz))
        alpha = torch.where((mu > done_below) & torch.isfinite(alpha), alpha, 0.0)
        dx, ds, dz = (torch.nan_to_num(d) for d in (dx, ds, dz))
        x, s, z = x + alpha * dx, torch.where(active, s + alpha * ds, 1.0), z + alpha * dz
    return x


def references(H, g, A, l, u) -> tuple[np.ndarray, np.ndarray] | None:
    """proxsuite's solutions and objectives (float64), one problem after another; None without
    proxsuite (then only the times, kernels and violations are measured)."""
    try:
        import proxsuite
    except ImportError:
        return None

    xs, objectives = [], []
    for b in range(len(g)):
        Hb, gb, lb, ub = (t[b].double().cpu().numpy() for t in (H, g, l, u))
        Ab = A.double().cpu().numpy()
        result = proxsuite.proxqp.dense.solve(*proxsuite_problem(Hb, gb, Ab, lb, ub), eps_abs=1e-10, eps_rel=0.0)
        xs.append(result.x)
        objectives.append(0.5 * result.x @ Hb @ result.x + gb @ result.x)
    return np.array(xs), np.array(objectives)


def errors(H, g, A, l, u, x, reference) -> dict:
    """Largest relative errors of solution and objective against the reference, and the largest
    constraint violation (N); only the violation without a reference."""
    x = x.double().cpu().numpy()
    Ax = x @ A.double().cpu().numpy().T
    violation = np.maximum(Ax - u.double().cpu().numpy(), l.double().cpu().numpy() - Ax).clip(min=0).max()
    if reference is None:
        return {"violation": float(violation)}
    x_ref, objective_ref = reference
    Hn, gn = H.double().cpu().numpy(), g.double().cpu().numpy()
    objective = 0.5 * np.einsum("bi,bij,bj->b", x, Hn, x) + (gn * x).sum(-1)
    scale = np.maximum(np.abs(x_ref).max(-1), 1.0)
    return {
        "solution_rel": float((np.abs(x - x_ref).max(-1) / scale).max()),
        "objective_rel": float((np.abs(objective - objective_ref) / np.maximum(np.abs(objective_ref), 1.0)).max()),
        "violation": float(violation),
    }


class KernelCount(TorchDispatchMode):
    """Counts the operators that launch work (views, allocations and scalars left out)."""

    VIEWS = {"t", "slice", "view", "expand", "squeeze", "detach", "unsqueeze", "select", "unbind", "alias",
             "_unsafe_view", "as_strided", "scalar_tensor", "transpose", "permute", "split", "empty",
             "empty_like", "empty_strided"}  # fmt: skip

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ not in self.VIEWS:
            self.count += 1
        return func(*args, **(kwargs or {}))


def admm_solver(batch: int, iterations: int, device, dtype, backend: str) -> BatchedQP:
    return BatchedQP(batch, 12, 20, QPSettings(iterations=iterations, backend=backend), device=device, dtype=dtype)


def kernels(solve) -> int:
    with KernelCount() as counter:
        solve()
    return counter.count


def graph_ms(solve, device) -> float | None:
    """ms of one solve captured in a CUDA graph and replayed (None on the CPU)."""
    return captured_seconds(solve, device, replays=20) * 1e3 if device.type == "cuda" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--admm-backend", default="torch", choices=["torch", "warp"])
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    H, g, A, l, u = problems(args.batch, device, dtype=dtype)
    A = A[0] if A.dim() == 3 else A
    reference = references(H, g, A, l, u)
    rows = []

    def row(method, mode, iterations, x, solve, g=g):
        entry = {"method": method, "mode": mode, "iterations": iterations, **errors(H, g, A, l, u, x, reference)}
        entry["kernels"] = kernels(solve) + (method == "ADMM" and args.admm_backend == "warp")  # its Warp kernel
        try:
            entry["graph_ms"] = graph_ms(solve, device)
        except RuntimeError as error:  # e.g. an operator that cannot run inside a CUDA graph capture
            entry["graph_ms"], entry["graph_error"] = None, str(error).splitlines()[0]
        entry["qps_per_s"] = args.batch / entry["graph_ms"] * 1e3 if entry["graph_ms"] else None
        rows.append(entry)
        print(json.dumps(entry), flush=True)

    for k in (5, 10, 15, 20, 30):
        row("interior point", "cold", k, interior_point(H, g, A, l, u, k), lambda k=k: interior_point(H, g, A, l, u, k))
    for k in (25, 100, 200, 400):
        solver = admm_solver(args.batch, k, device, dtype, args.admm_backend)
        row("ADMM", "cold", k, solver.solve(H, g, A, l, u).x, lambda s=solver: s.solve(H, g, A, l, u))

    # A control loop: the desired wrench (g is linear in it) drifts 0.2 % per solve.
    gen = torch.Generator(device="cpu").manual_seed(1)
    drift = [1 + 0.002 * torch.randn(args.batch, 1, generator=gen, dtype=dtype).to(device) for _ in range(20)]
    for k in (10, 25):
        solver = admm_solver(args.batch, k, device, dtype, args.admm_backend)
        solver.solve(H, g, A, l, u)
        solver.settings = QPSettings(iterations=200, backend=args.admm_backend)
        solver.solve(H, g, A, l, u)  # the loop's steady state: converged on the first problem
        solver.settings = QPSettings(iterations=k, backend=args.admm_backend)
        gk = g
        for factor in drift:
            gk = gk * factor
            x = solver.solve(H, gk, A, l, u).x
        reference = references(H, gk, A, l, u)
        row("ADMM", "warm, 20 drifting solves", k, x, lambda s=solver, gk=gk: s.solve(H, gk, A, l, u), g=gk)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"batch": args.batch, "device": str(device), "dtype": args.dtype, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
