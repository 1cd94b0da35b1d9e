"""Times a task's PPO update alone, on random rollout data of the task's shapes, and on CUDA lists
the update's kernels by total time. The update is built as training builds it (`update_spec`:
the task's policy, PPO settings and observations, a student's where the task learns from a
teacher), from an env of 2 copies that gives the shapes; no env steps are timed.

    python tools/update_probe.py TASK [TRAIN FLAGS ...]

TRAIN FLAGS are `phalanx train`'s (`--num-envs 4096`, `--algo.num-mini-batches 2`, `--no-bf16-update`,
`--compile-update`, `--policy.cnn-channels 16 32 32`, ...). The update is captured as training
captures it (`--capture-update` / `--no-capture-update`, default on CUDA).
"""

from __future__ import annotations

import dataclasses
import sys

import torch

from phalanx.bench.physics import seconds_per_call
from phalanx.core.devices import resolve_device
from phalanx.flags import parse_flags
from phalanx.rl.ppo import PPO
from phalanx.training.cfg import TrainCfg, check_train_cfg
from phalanx.training.registry import make, train_cfg
from phalanx.training.trainer import update_capture, update_spec


def build(cfg: TrainCfg, device: torch.device) -> PPO:
    """The PPO of training `cfg` on `device`, its rollout filled with random data."""
    env = make(cfg.env, num_envs=2, device=device, capture=False, compile=False)
    num_envs = cfg.num_envs or cfg.env.default_num_envs(device)
    spec = dataclasses.replace(update_spec(cfg, env, student=cfg.distill is not None), num_envs=num_envs)
    del env
    torch.manual_seed(0)
    generator = torch.Generator(device).manual_seed(0)
    ppo = spec.ppo(spec.actor_critic(), generator, update_capture(cfg, device), dist=None)
    fill(ppo)
    return ppo


def fill(ppo: PPO) -> None:
    """Random transitions: observations, actions and the policy's outputs ~ N(0, 1), standard
    deviations 1, log-probabilities of those actions' size, images uniform over their range."""
    s = ppo.storage
    s.samples.normal_()
    s.action_std.fill_(1.0)
    s.log_probs.uniform_(-2.0 * s.actions.shape[-1], 0.0)
    if s.images is not None:
        s.images.copy_(
            torch.randint_like(s.images, 256) if s.images.dtype == torch.uint8 else torch.rand_like(s.images)
        )


def time_update(ppo: PPO, device: torch.device, reps: int) -> float:
    """Seconds per update, over `reps` after the first (compiles, capture) and two more."""
    print(f"  first update {seconds_per_call(ppo.update, 1, device):.2f} s")
    seconds_per_call(ppo.update, 2, device)
    return seconds_per_call(ppo.update, reps, device)


def kernel_table(ppo: PPO, rows: int = 15) -> None:
    """One eager update's CUDA kernels, the costliest first."""
    capture, ppo.capture = ppo.capture, False
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        ppo.update()
        torch.cuda.synchronize()
    ppo.capture = capture
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.device_time_total for e in events)
    count = sum(e.count for e in events)
    print(f"  eager update: {count} kernels, {total / 1e3:.2f} ms of kernel time")
    for e in sorted(events, key=lambda e: -e.device_time_total)[:rows]:
        print(f"  {e.device_time_total / 1e3:8.3f} ms {e.count:5d}x  {e.key[:100]}")


def main() -> None:
    task, flags = sys.argv[1], sys.argv[2:]
    cfg = parse_flags(TrainCfg, train_cfg(task), flags, f"update_probe.py {task}")
    check_train_cfg(cfg)
    device = resolve_device(cfg.device)
    ppo = build(cfg, device)
    update_s = time_update(ppo, device, reps=20 if device.type == "cuda" else 2)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    images = "" if ppo.storage.images is None else f", images {tuple(ppo.storage.images.shape[2:])}"
    print(f"{task} {ppo.storage.num_envs} envs{images} {' '.join(flags)} ({name}): update {update_s * 1e3:.2f} ms")
    if device.type == "cuda":
        kernel_table(ppo)


if __name__ == "__main__":
    main()
