"""Where the GPU time of one eager env step goes, by phase (torch profiler, CUDA activity).

python bench/profile_step.py --task ant --num-envs 4096
"""

from __future__ import annotations

import argparse
import collections

import torch
import warp as wp
from torch.profiler import ProfilerActivity, profile, record_function

import phalanx

PHASES = {  # (part of the env, method): timed as "part.method"
    "sim": ["step", "check_worlds", "reset_"],
    "env": ["_compute_obs", "_reset_envs"],
    "terminations": ["compute"],
    "rewards": ["values"],
    "events": ["step"],
    "commands": ["step"],
}


def _wrap(obj, name: str, label: str) -> None:
    fn = getattr(obj, name)

    def wrapped(*args, **kwargs):
        with record_function(label):
            return fn(*args, **kwargs)

    setattr(obj, name, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="ant")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--compile", action="store_true", help="torch.compile the term arithmetic")
    parser.add_argument("--rows", type=int, default=0, help="rows of the per-kernel table (0: none)")
    args = parser.parse_args()
    wp.config.log_level = wp.LOG_WARNING
    env = phalanx.make(
        args.task, num_envs=args.num_envs, device="cuda", verbose=False, capture=False, compile=args.compile
    )
    for part, names in PHASES.items():
        for name in names:
            _wrap(env if part == "env" else getattr(env, part), name, f"{part}.{name}")
    actions = torch.empty(env.num_envs, env.action_dim, device=env.device)
    for _ in range(20):
        env.step(actions.uniform_(-1, 1))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            env.step(actions.uniform_(-1, 1))
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total_us = sum(e.device_time for e in kernels)
    print(
        f"{args.task} {args.num_envs} envs: {len(kernels) / args.steps:.0f} kernels per step, "
        f"{total_us / args.steps:.0f} us GPU time per step"
    )
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for e in kernels:
        kind = (
            "warp (physics)"
            if "cuda_kernel_forward" in e.name
            else "triton (compiled)"
            if e.name.startswith("triton")
            else "torch eager"
        )
        by_kind[kind][0] += 1
        by_kind[kind][1] += e.device_time
    for kind, (count, us) in by_kind.items():
        print(f"  {kind:20s} {count / args.steps:5.0f} kernels/step {us / args.steps:8.0f} us/step")
    by_range = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.name.startswith(tuple(f"{part}." for part in PHASES)):
            by_range[e.name][0] += 1
            by_range[e.name][1] += e.device_time_total
    for name, (calls, us) in sorted(by_range.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:28s} {calls / args.steps:4.1f} calls/step {us / args.steps:8.0f} us/step")
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
