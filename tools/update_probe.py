"""Times PPO's captured update alone, on random rollout data shaped like a task's, and lists the
update's CUDA kernels by total time. Pure torch: no simulator, no Warp.

    python tools/update_probe.py TASK [NUM_ENVS] [fp32] [compile] [bf16]

TASK is cartpole, ant, humanoid, anymal-flat or anymal-rough. The update multiplies in TF32;
`fp32` keeps float32, `compile` and `bf16` turn on PPO's `compile_update` and `bf16_update`.
"""

from __future__ import annotations

import sys
import time

import torch

from phalanx.rl.models import ActorCritic
from phalanx.rl.ppo import PPO, PPOCfg

# obs dim, action dim, hidden widths, steps per env (the tasks' defaults)
SHAPES = {
    "cartpole": (4, 1, (32, 32), 16),
    "ant": (60, 8, (400, 200, 100), 32),
    "humanoid": (87, 21, (400, 200, 100), 32),
    "anymal-flat": (48, 12, (128, 128, 128), 24),
    "anymal-rough": (235, 12, (512, 256, 128), 24),
}


def build(task: str, num_envs: int, options: list[str]) -> PPO:
    obs_dim, act_dim, hidden, steps = SHAPES[task]
    device = torch.device("cuda")
    policy = ActorCritic(obs_dim, obs_dim, act_dim, hidden, hidden, "elu", 1.0).to(device)
    generator = torch.Generator(device).manual_seed(0)
    ppo = PPO(
        policy,
        PPOCfg(),
        {"policy": (obs_dim,)},
        num_envs,
        steps,
        True,
        generator,
        capture=True,
        tf32="fp32" not in options,
        bf16_update="bf16" in options,
        compile_update="compile" in options,
    )
    s = ppo.storage
    for name in ("obs", "critic_obs", "actions", "advantages", "returns", "values", "log_probs", "action_mean"):
        getattr(s, name).normal_()
    s.action_std.fill_(1.0)
    return ppo


def time_update(ppo: PPO, reps: int = 20) -> float:
    start = time.perf_counter()
    ppo.update()
    torch.cuda.synchronize()
    print(f"  first update {time.perf_counter() - start:.2f} s")
    for _ in range(2):
        ppo.update()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        ppo.update()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps


def kernel_table(ppo: PPO) -> None:
    ppo.capture = False
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        ppo.update()
        torch.cuda.synchronize()
    ppo.capture = True
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.device_time_total for e in events)
    count = sum(e.count for e in events)
    print(f"  eager update: {count} kernels, {total / 1e3:.2f} ms of kernel time")
    for e in sorted(events, key=lambda e: -e.device_time_total)[:15]:
        print(f"  {e.device_time_total / 1e3:8.3f} ms {e.count:5d}x  {e.key[:100]}")


def main() -> None:
    task = sys.argv[1]
    num_envs = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    ppo = build(task, num_envs, sys.argv[3:])
    update_s = time_update(ppo)
    print(f"{task} {num_envs} envs {sys.argv[3:]} ({torch.cuda.get_device_name()}): update {update_s * 1e3:.2f} ms")
    kernel_table(ppo)


if __name__ == "__main__":
    main()
