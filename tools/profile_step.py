"""Where the GPU time of one eager env step goes, by phase (torch profiler, CUDA activity).

python tools/profile_step.py --task ant --num-envs 4096
python tools/profile_step.py --task anymal-stones-qp --ranges actions.low_level.controller.step terrain.height_at

A range is a dotted path from the env to a method (`sim.step`: `env.sim.step`). Its time is that
of the kernels inside its span on the GPU. The profiler builds that span from the kernels launched
in the range itself, not in a range within it: an outer range (`actions.apply`) can show less
than the ranges it calls. With `--compile`, ranges inside the compiled code are not recorded.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import functools

import torch
import warp as wp
from torch.profiler import ProfilerActivity, profile, record_function

import phalanx

RANGES = (
    "sim.step", "sim.check_worlds", "sim.reset_", "_compute_obs", "_reset_envs", "actions.apply",
    "terminations.compute", "rewards.values", "events.step", "commands.step",
)  # fmt: skip


def _wrap(env, path: str) -> None:
    """Names the method at `path` (dotted, from the env) as a profiler range."""
    *parents, name = path.split(".")
    obj = functools.reduce(getattr, parents, env)
    fn = getattr(obj, name)

    def wrapped(*args, **kwargs):
        with record_function(path):
            return fn(*args, **kwargs)

    setattr(obj, name, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="ant")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--compile", action="store_true", help="torch.compile the term arithmetic")
    parser.add_argument("--rows", type=int, default=0, help="rows of the per-kernel table (0: none)")
    parser.add_argument("--ranges", nargs="*", default=[], help="more methods to time, as dotted paths from the env")
    args = parser.parse_args()
    wp.config.log_level = wp.LOG_WARNING
    env = phalanx.make(
        args.task, num_envs=args.num_envs, device="cuda", verbose=False, capture=False, compile=args.compile
    )
    ranges = tuple(dict.fromkeys((*RANGES, *args.ranges)))  # each method wrapped once
    for path in ranges:
        _wrap(env, path)
    actions = torch.empty(env.num_envs, env.action_dim, device=env.device)
    for _ in range(20):
        env.step(actions.uniform_(-1, 1))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            env.step(actions.uniform_(-1, 1))
        torch.cuda.synchronize()
    cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels = sorted((e for e in cuda if e.name not in ranges), key=lambda e: e.time_range.start)
    total_us = sum(e.device_time for e in kernels)
    print(
        f"{args.task} {args.num_envs} envs: {len(kernels) / args.steps:.0f} kernels per step, "
        f"{total_us / args.steps:.0f} us GPU time per step"
    )
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for e in kernels:
        kind = (
            "warp"
            if "cuda_kernel_forward" in e.name
            else "triton (compiled)"
            if e.name.startswith("triton")
            else "torch eager"
        )
        by_kind[kind][0] += 1
        by_kind[kind][1] += e.device_time
    for kind, (count, us) in by_kind.items():
        print(f"  {kind:20s} {count / args.steps:5.0f} kernels/step {us / args.steps:8.0f} us/step")
    # A range's time: its kernels' (those that ran inside its span on the GPU), not the span,
    # which also holds the GPU's idle gaps between launches.
    starts = [e.time_range.start for e in kernels]
    by_range = collections.defaultdict(lambda: [0, 0.0])
    for span in cuda:
        if span.name in ranges:
            first, end = span.time_range.start, span.time_range.end
            inside = kernels[bisect.bisect_left(starts, first) : bisect.bisect_right(starts, end)]
            by_range[span.name][0] += 1
            by_range[span.name][1] += sum(e.device_time for e in inside if e.time_range.end <= end)
    print("  kernel time by range:")
    for name, (calls, us) in sorted(by_range.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:36s} {calls / args.steps:4.1f} calls/step {us / args.steps:8.0f} us/step")
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
