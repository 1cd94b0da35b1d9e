"""Startup and interval events fire when and where they should."""

from __future__ import annotations

import torch

from helpers import make_cpu
from phalanx.envs import EventTermCfg
from phalanx.training.registry import env_cfg


def test_startup_runs_once_and_interval_fires_on_schedule() -> None:
    startup_calls = []
    fired_now = torch.zeros(4, dtype=torch.bool)

    def tick(env, mask):  # like every term, it keeps its state in tensors written in place
        fired_now.copy_(mask)

    cfg = env_cfg("cartpole")
    cfg.events["init"] = EventTermCfg(func=lambda env, mask: startup_calls.append(mask.clone()), mode="startup")
    # env dt is 1/60 s: a fixed 0.05 s interval fires on every third step (timers count down by dt).
    cfg.events["tick"] = EventTermCfg(func=tick, mode="interval", interval_range_s=(0.05, 0.05))
    env = make_cpu(cfg, num_envs=4)
    assert len(startup_calls) == 1 and startup_calls[0].all()
    fired = []
    for _ in range(9):
        env.step(torch.zeros(4, 1))
        fired.append(fired_now.clone())
    fired = torch.stack(fired)  # (9 steps, 4 envs)
    assert fired.sum(dim=0).tolist() == [3, 3, 3, 3]
    assert fired[2].all() and fired[5].all() and fired[8].all()
    assert len(startup_calls) == 1


def test_interval_event_changes_only_the_envs_it_fires_for() -> None:
    def push(env, mask):
        env.sim.qvel[:, 0] += torch.where(mask, 1.0, 0.0)

    cfg = env_cfg("cartpole")
    cfg.events["push"] = EventTermCfg(func=push, mode="interval", interval_range_s=(0.01, 0.2))
    env = make_cpu(cfg, num_envs=8, seed=3)
    reference = make_cpu("cartpole", num_envs=8, seed=3)
    timers = env.events.timers["push"].clone()
    env.step(torch.zeros(8, 1))
    reference.step(torch.zeros(8, 1))
    fired = timers <= env.step_dt
    assert fired.any() and (~fired).any(), "the seed must give a mix"
    moved = (env.sim.qvel[:, 0] - reference.sim.qvel[:, 0]).abs() > 0.5
    assert torch.equal(moved, fired)
