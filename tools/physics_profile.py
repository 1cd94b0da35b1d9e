"""Where a task's physics time goes: the captured physics step (`env.sim.step`, all substeps of
one env step) timed and split by kernel with the torch profiler, after a short rollout.

python tools/physics_profile.py --task anymal-rough --num-envs 4096 [--zero-actions] [--rows 12]
python tools/physics_profile.py --task anymal-rough --no-collision base   # the base collides with nothing
python tools/physics_profile.py --task anymal-rough --contacts mujoco     # MuJoCo Warp's heightfield collision
"""

from __future__ import annotations

import argparse
import collections
import re

import torch
from torch.profiler import ProfilerActivity, profile

import phalanx
from phalanx.bench.physics import seconds_per_call
from phalanx.sim.model import load_spec
from phalanx.training.registry import env_cfg


def _cfg(args: argparse.Namespace):
    cfg = env_cfg(args.task)
    if args.contacts:
        cfg.terrain.contacts = args.contacts
    if args.budget:
        cfg.sim.iterations, cfg.sim.ls_iterations = (int(x) for x in args.budget.split(","))
    if args.no_collision:
        spec = load_spec(cfg.model)
        for geom in spec.geoms:
            if re.fullmatch(args.no_collision, geom.name or ""):
                geom.contype = geom.conaffinity = 0
        cfg.model = spec.to_xml()
    return cfg


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="anymal-rough")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--zero-actions", action="store_true", help="hold the default pose instead of random actions")
    parser.add_argument("--budget", default="", help="solver ITERATIONS,LS_ITERATIONS instead of the task's")
    parser.add_argument("--no-collision", default="", help="regex of geoms that collide with nothing")
    parser.add_argument("--contacts", default="", help="the terrain's contacts: grid or mujoco (default: the task's)")
    parser.add_argument("--rows", type=int, default=12, help="kernels listed, most GPU time first")
    args = parser.parse_args()
    env = phalanx.make(_cfg(args), num_envs=args.num_envs, device="cuda", compile=False)
    actions = torch.zeros(env.num_envs, env.action_dim, device=env.device)

    def step() -> None:
        env.step(actions if args.zero_actions else actions.uniform_(-0.5, 0.5))

    for _ in range(60):  # robots settle, walk or fall
        step()
    env_ms, sim_ms = (1e3 * seconds_per_call(fn, 40, env.device) for fn in (step, env.sim.step))
    contacts = int(env.sim.data.nacon.numpy()[0]) / env.num_envs
    print(
        f"{args.task} {env.num_envs} envs: env.step {env_ms:.2f} ms, physics step {sim_ms:.2f} ms "
        f"({env.sim.cfg.decimation} substeps), {contacts:.1f} contacts per env"
    )
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            env.sim.step()
        torch.cuda.synchronize()
    kernels = collections.defaultdict(lambda: [0, 0.0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels[event.name][0] += 1
            kernels[event.name][1] += event.device_time
    total, launches = sum(us for _, us in kernels.values()), sum(n for n, _ in kernels.values())
    print(f"  GPU time per physics step {total / 10e3:.2f} ms in {launches / 10:.0f} kernels")
    for name, (count, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[: args.rows]:
        print(f"  {us / 10e3:7.3f} ms {100 * us / total:5.1f} % {count / 10:5.1f}x  {name[:100]}")


if __name__ == "__main__":
    main()
