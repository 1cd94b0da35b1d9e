"""The collectives of a data-parallel training iteration, counted and timed (issue #62).

    torchrun --nproc_per_node K tools/collectives.py count OUT.json TASK [phalanx train flags]
    torchrun --nproc_per_node K tools/collectives.py time OUT.json COUNTS.json [REPEATS]

`count` trains TASK in this process (`phalanx train TASK --distributed`, its update and rollout
not captured, so that every collective is a Python call) and records, per iteration, each
torch.distributed call rank 0 makes: its kind, element count and dtype. The sizes depend on the
task's networks and observations, not on the device: a CPU run over gloo gives the GPU's.

`time` joins a job of its own (NCCL on CUDA, gloo on the CPU) and times an all-reduce of each
size that `count` found in a steady iteration: `eager` (one call after another, as an uncaptured
trainer makes them) and, on CUDA, `graph` (20 calls captured in a CUDA graph and replayed, as the
captured trainer makes them), in microseconds per call; then the iteration's sum of them.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

KINDS = ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor")


def count(out: Path, task: str, flags: list[str]) -> None:
    from phalanx.cli import main
    from phalanx.training import trainer as trainer_module

    calls: list[dict] = []
    iteration = [-1]  # before the first iteration: start-up (parameter broadcast, checks)

    def recording(kind: str, original):
        def call(tensor, *args, **kwargs):
            if dist.get_rank() == 0:
                calls.append(
                    {"iteration": iteration[0], "kind": kind, "numel": tensor.numel(), "dtype": str(tensor.dtype)}
                )
            return original(tensor, *args, **kwargs)

        return call

    for kind in KINDS:
        setattr(dist, kind, recording(kind, getattr(dist, kind)))
    iterate = trainer_module.Trainer.iterate

    def counted(self):
        iteration[0] = self.iteration
        metrics = iterate(self)
        if dist.get_rank() == 0:  # after every iteration: a finished rank ends without returning
            _write_counts(out, task, flags, calls)
        return metrics

    trainer_module.Trainer.iterate = counted
    sys.exit(main(["train", task, "--distributed", "--capture-update", "False", "--capture-rollout", "False", *flags]))


def _write_counts(out: Path, task: str, flags: list[str], calls: list[dict]) -> None:
    """The last iteration's collectives (past any first-iteration work) by kind and size, and
    how many each iteration made."""
    by_iteration = collections.defaultdict(list)
    for c in calls:
        by_iteration[c["iteration"]].append(c)
    steady = by_iteration[max(by_iteration)]
    sizes = collections.Counter((c["kind"], c["numel"], c["dtype"]) for c in steady)
    summary = {
        "task": task,
        "flags": flags,
        "world_size": dist.get_world_size(),
        "iteration": max(by_iteration),
        "per_iteration": [{"kind": k, "numel": n, "dtype": d, "calls": m} for (k, n, d), m in sorted(sizes.items())],
        "calls_by_iteration": {str(i): len(v) for i, v in sorted(by_iteration.items())},
    }
    out.write_text(json.dumps(summary, indent=1) + "\n")


def _seconds(fn, repeats: int, cuda: bool) -> float:
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def time_sizes(out: Path, counts: Path, repeats: int) -> None:
    from phalanx.dist.context import init_distributed

    context, device = init_distributed(None)
    cuda = device.startswith("cuda")
    found = json.loads(counts.read_text())
    rows = []
    for entry in found["per_iteration"]:
        if entry["kind"] != "all_reduce":
            continue
        tensor = torch.ones(entry["numel"], dtype=getattr(torch, entry["dtype"].removeprefix("torch.")), device=device)
        for _ in range(10):
            dist.all_reduce(tensor)
        eager = _seconds(lambda t=tensor: dist.all_reduce(t), repeats, cuda) / repeats
        row = {**entry, "eager_us": eager * 1e6}
        if cuda:
            graph, per_graph = torch.cuda.CUDAGraph(), 20
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                dist.all_reduce(tensor)  # NCCL's first call on this stream, outside the capture
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(graph):
                for _ in range(per_graph):
                    dist.all_reduce(tensor)
            replays = max(1, repeats // per_graph)
            row["graph_us"] = _seconds(graph.replay, replays, cuda) / (replays * per_graph) * 1e6
            del graph
        rows.append(row)
    if context.is_main:
        key = "graph_us" if cuda else "eager_us"
        total = sum(r[key] * r["calls"] for r in rows)
        summary = {
            "counts": str(counts),
            "task": found["task"],
            "world_size": context.world_size,
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "nccl_hostid": os.environ.get("NCCL_HOSTID"),
            "all_reduces": rows,
            f"per_iteration_{key}": total,
        }
        out.write_text(json.dumps(summary, indent=1) + "\n")
        print(json.dumps(summary, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    mode, out = sys.argv[1], Path(sys.argv[2])
    if mode == "count":
        count(out, sys.argv[3], sys.argv[4:])
    elif mode == "time":
        time_sizes(out, Path(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 200)
    else:
        sys.exit(f"usage: {__doc__.strip().splitlines()[2]}")
