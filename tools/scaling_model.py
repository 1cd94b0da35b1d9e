"""A paper model of phalanx's data-parallel scaling beyond the measured hosts (issue #62).

    python tools/scaling_model.py --sweep ENVS.json --collectives COUNTS.json [--probe TIME.json]
        [--measured SCALING.json ...] [--envs 4096] [--total-envs 65536] [--gpus 2,4,8,16,64]

An iteration on k GPUs takes

    T(k) = T1(n) + C(k) + J(k)

- T1(n): one GPU's iteration at n envs, interpolated (log-log) from a `phalanx bench envs` sweep;
  n = --envs per GPU (weak scaling) or --total-envs / k (strong scaling).
- C(k): the iteration's all-reduces (`tools/collectives.py count`: how many, how large), each
  t(S, k) = a + 2(k-1)/k S/b inside a node (NVLink: a and b from `tools/collectives.py time` on
  the measured host where given, else the stated defaults); across m nodes of g GPUs NCCL adds
  its inter-node stage: 2 a_net per level of a tree over the nodes (ceil(log2 m) levels) and
  2(m-1)/m (S/g)/b_net, each GPU of a node sending its 1/g of the data through its own NIC.
- J(k): the rest of what k ranks cost over one (waiting for the slowest rank at each of the
  iteration's collectives): the weak-scaling measurement's T(4) - T1 - C(4) where given (else 0),
  grown as the expected maximum of k normal variates, sqrt(ln k / ln 4).

Efficiency: weak T1(n) / T(k); strong T1(N) / (k T(k)). The defaults state the interconnect:
nodes of 8 GPUs on NVLink (a 15 us, b 300 GB/s bus bandwidth), one 400 Gb/s InfiniBand NIC per
GPU (a_net 10 us per tree level, b_net 45 GB/s).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def sweep_times(path: Path) -> list[tuple[int, float]]:
    """(envs, seconds per iteration) of a `phalanx bench envs` run, by env count."""
    results = json.loads(path.read_text())["results"]
    return sorted((r["num_envs"], r["iteration_s"]) for r in results if r.get("valid", True))


def t1(points: list[tuple[int, float]], envs: float) -> float:
    """One GPU's iteration at `envs`, log-log between the sweep's points (the end segments
    extended beyond them)."""
    for (n0, t0), (n1, t1_) in zip(points, points[1:], strict=False):
        if envs <= n1 or (n1, t1_) == points[-1]:
            slope = math.log(t1_ / t0) / math.log(n1 / n0)
            return t0 * (envs / n0) ** slope
    return points[0][1]


def all_reduce_s(size_bytes: float, k: int, args: argparse.Namespace) -> float:
    """One all-reduce of `size_bytes` over k GPUs in nodes of args.node_gpus."""
    g = min(k, args.node_gpus)
    intra = 0.0 if g == 1 else args.a_us * 1e-6 + 2 * (g - 1) / g * size_bytes / (args.b_gbs * 1e9)
    nodes = math.ceil(k / args.node_gpus)
    if nodes == 1:
        return intra
    levels = math.ceil(math.log2(nodes))
    inter = 2 * levels * args.a_net_us * 1e-6 + 2 * (nodes - 1) / nodes * size_bytes / g / (args.b_net_gbs * 1e9)
    return intra + inter


def size_bytes(entry: dict) -> int:
    """The bytes of a collective that tools/collectives.py recorded (its element count and dtype)."""
    width = 8 if "64" in entry["dtype"] else 2 if "16" in entry["dtype"] else 4
    return entry["numel"] * width


def collectives_s(counts: dict, k: int, args: argparse.Namespace) -> float:
    """The iteration's all-reduces on k GPUs."""
    return sum(entry["calls"] * all_reduce_s(size_bytes(entry), k, args) for entry in counts["per_iteration"])


def jitter_s(k: int, j4: float) -> float:
    return 0.0 if k == 1 else j4 * math.sqrt(math.log(k) / math.log(4))


def measured(path: Path | None) -> dict[int, dict]:
    """GPUs -> row of a `phalanx bench scaling` run (its valid rows)."""
    if path is None:
        return {}
    return {r["gpus"]: r for r in json.loads(path.read_text())["results"] if r["valid"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", type=Path, required=True, help="`phalanx bench envs` bench.json (one GPU)")
    parser.add_argument("--collectives", type=Path, required=True, help="tools/collectives.py count's JSON")
    parser.add_argument("--probe", type=Path, help="tools/collectives.py time's JSON on the measured node")
    parser.add_argument("--weak-measured", type=Path, help="`bench scaling --mode weak` bench.json: J(4), and a check")
    parser.add_argument("--strong-measured", type=Path, help="`bench scaling --mode strong` bench.json, a check")
    parser.add_argument("--envs", type=int, default=4096, help="envs per GPU, weak scaling")
    parser.add_argument("--total-envs", type=int, default=65536, help="envs in all, strong scaling")
    parser.add_argument("--gpus", default="1,2,4,8,16,64")
    parser.add_argument("--node-gpus", type=int, default=8)
    parser.add_argument("--a-us", type=float, default=15.0)
    parser.add_argument("--b-gbs", type=float, default=300.0)
    parser.add_argument("--a-net-us", type=float, default=10.0)
    parser.add_argument("--b-net-gbs", type=float, default=45.0)
    parser.add_argument(
        "--out", type=Path, help="write the predictions here, as a bench.json (`bench-table scaling-model`)"
    )
    args = parser.parse_args()
    points = sweep_times(args.sweep)
    counts = json.loads(args.collectives.read_text())
    if args.probe is not None:  # a and b of this node: the smallest and the largest all-reduce timed
        rows = json.loads(args.probe.read_text())
        timed = sorted((size_bytes(r), r.get("graph_us", r["eager_us"])) for r in rows["all_reduces"])
        k = rows["world_size"]
        args.a_us = timed[0][1]
        if timed[-1][0] > timed[0][0] and timed[-1][1] > timed[0][1]:
            args.b_gbs = 2 * (k - 1) / k * (timed[-1][0] - timed[0][0]) / ((timed[-1][1] - timed[0][1]) * 1e-6) / 1e9
    weak_seen, strong_seen = measured(args.weak_measured), measured(args.strong_measured)
    j4 = 0.0
    if 1 in weak_seen and 4 in weak_seen:
        j4 = max(0.0, weak_seen[4]["epoch_s"] - weak_seen[1]["epoch_s"] - collectives_s(counts, 4, args))
    strong_1, weak_1 = t1(points, args.total_envs), t1(points, args.envs)
    results = []
    for k in (int(x) for x in args.gpus.split(",")):
        c, j = collectives_s(counts, k, args), jitter_s(k, j4)
        strong = t1(points, args.total_envs / k) + c + j
        results.append(
            {
                "gpus": k,
                "collectives_ms": c * 1e3,
                "jitter_ms": j * 1e3,
                "weak_envs_per_gpu": args.envs,
                "weak_ms": (weak_1 + c + j) * 1e3,
                "weak_efficiency": weak_1 / (weak_1 + c + j),
                "weak_measured": weak_seen[k]["efficiency"] if k in weak_seen else None,
                "strong_envs_per_gpu": args.total_envs / k,
                "strong_ms": strong * 1e3,
                "strong_efficiency": strong_1 / (k * strong),
                "strong_measured": strong_seen[k]["efficiency"] if k in strong_seen else None,
            }
        )
    config = {name: getattr(args, name) for name in ("node_gpus", "a_us", "b_gbs", "a_net_us", "b_net_gbs")}
    config |= {"jitter_4_ms": j4 * 1e3, "total_envs": args.total_envs, "collectives": counts["per_iteration"]}
    for r in results:
        print(json.dumps(r))
    if args.out is not None:
        from phalanx.bench.machine import tool_bench
        from phalanx.core.files import write_text_atomic

        bench = tool_bench("scaling-model", counts["task"], "scaling_model.py", sys.argv[1:], "model", config=config)
        write_text_atomic(args.out, json.dumps(bench | {"results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
