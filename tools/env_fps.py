"""Env-step throughput of each task with random actions, next to the raw MuJoCo Warp step rate.

    python tools/env_fps.py --tasks cartpole ant humanoid --num-envs 4096 16384 --out RESULTS/bench.json

For each task and env count: the raw physics rate (the same model, world count and buffer sizes,
stepped by the same captured graph with nothing else; zero controls give the limit, random
controls show what the env's random actions cost the physics) and the env rate (`env.step` with
uniform random actions in [-1, 1]: physics, observations, rewards, terminations, auto-reset) in
four modes: the default (torch part compiled, whole step captured as one CUDA graph), captured
without compile, compiled without the whole-step capture (physics graph launched on its own),
and eager torch around the captured physics graph. Figures are medians over repeats after
warm-up. The target ratio is env steps/s >= 70 % of raw physics steps/s / decimation.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import warp as wp

from phalanx.bench.docs_tables import table
from phalanx.bench.machine import tool_bench
from phalanx.bench.physics import physics_steps_per_s, seconds_per_call
from phalanx.core.files import write_text_atomic


def _env_rate(env, steps: int, repeats: int) -> float:
    """Env steps per second of `env.step` with uniform random actions in [-1, 1]."""
    env.reset()
    actions = torch.empty(env.num_envs, env.action_dim, device=env.device)

    def env_step():
        env.step(actions.uniform_(-1.0, 1.0))

    for _ in range(50):
        env_step()
    return env.num_envs / statistics.median(seconds_per_call(env_step, steps, env.device) for _ in range(repeats))


def bench_task(task: str, num_envs: int, steps: int, repeats: int) -> dict:
    import phalanx

    make = functools.partial(phalanx.make, task, num_envs, device="cuda", verbose=False)
    start = time.perf_counter()
    env = make()  # the default: compiled and captured; first here so its start-up includes compiling
    env.step(torch.zeros(num_envs, env.action_dim, device=env.device))
    torch.cuda.synchronize()
    startup_s = time.perf_counter() - start
    env_sps = _env_rate(env, steps, repeats)
    invalid = env.report_invalid()
    sim = env.sim
    decimation = sim.cfg.decimation
    # Raw physics: the same Simulator (model, worlds, buffers, graph) and nothing else; zero
    # controls give the limit, random controls what the env's random actions cost the physics.
    raw_physics_sps = physics_steps_per_s(sim, steps, repeats, random_ctrl=False)
    raw_random_sps = physics_steps_per_s(sim, steps, repeats, random_ctrl=True)
    eager_sps = _env_rate(make(capture=False, compile=False), steps, repeats)
    captured_sps = _env_rate(make(capture=True, compile=False), steps, repeats)
    compiled_sps = _env_rate(make(capture=False, compile=True), steps, repeats)
    return {
        "task": task,
        "num_envs": num_envs,
        "decimation": decimation,
        "nconmax_per_env": sim.nconmax,
        "njmax_per_env": sim.njmax,
        "raw_physics_steps_per_s": raw_physics_sps,
        "raw_physics_steps_per_s_random_ctrl": raw_random_sps,
        "env_steps_per_s": env_sps,
        "ratio_to_limit": env_sps / (raw_physics_sps / decimation),
        "ratio_to_random_ctrl_physics": env_sps / (raw_random_sps / decimation),
        "env_steps_per_s_eager": eager_sps,
        "env_steps_per_s_captured_uncompiled": captured_sps,
        "env_steps_per_s_compiled_uncaptured": compiled_sps,
        "startup_s": startup_s,
        "invalid_env_resets": invalid,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "ant", "humanoid"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[4096, 16384])
    parser.add_argument("--steps", type=int, default=200, help="env steps per timed block")
    parser.add_argument("--repeats", type=int, default=5, help="timed blocks; the median is reported")
    parser.add_argument("--out", default=None, help="write the results here, as a bench.json (`phalanx bench docs`)")
    args = parser.parse_args()
    wp.config.log_level = wp.LOG_WARNING
    rows = [bench_task(task, n, args.steps, args.repeats) for task in args.tasks for n in args.num_envs]
    bench = tool_bench("physics", ",".join(args.tasks), "env_fps.py", sys.argv[1:], "cuda:0", results=rows)
    print(table("physics", [(bench, args.out or "(not written)")]))
    for r in rows:
        if r["invalid_env_resets"]:
            print(f"note: {r['task']}, {r['num_envs']} envs: {r['invalid_env_resets']}")
    if args.out:
        write_text_atomic(Path(args.out), json.dumps(bench, indent=2) + "\n")


if __name__ == "__main__":
    main()
