"""Per-env time limits: a trainer may cut each env's first episode at a random length
(`spread_episode_ends`), so that episodes ending only by time out end spread over the iterations;
the cut episodes' lengths, returns and metrics cover the steps they ran."""

from __future__ import annotations

import dataclasses

import torch
from rich.console import Console

from helpers import make_cpu
from phalanx.envs import MetricTermCfg, TerminationTermCfg
from phalanx.envs.mdp import terminations
from phalanx.training.registry import env_cfg, train_cfg
from phalanx.training.trainer import Trainer


def _one(env) -> torch.Tensor:
    return torch.ones(env.num_envs, device=env.device)


def _time_out_only_cartpole(episode_s: float = 0.4):
    """Cartpole whose episodes end only by time out (20 steps at 0.4 s), with a metric of 1 per step."""
    cfg = env_cfg("cartpole")
    time_out = TerminationTermCfg(func=terminations.time_out, time_out=True)
    return dataclasses.replace(
        cfg, episode_length_s=episode_s, terminations={"time_out": time_out}, metrics={"one": MetricTermCfg(func=_one)}
    )


def test_cut_first_episodes_end_at_their_drawn_limits_then_run_whole() -> None:
    env = make_cpu(_time_out_only_cartpole(), num_envs=64)
    full = env.max_episode_length
    env.randomize_time_limits()
    limits = env.time_limit.clone()
    assert limits.min() >= 1 and limits.max() <= full and len(limits.unique()) > full // 2, "spread over 1..full"
    ended_at = torch.full_like(limits, -1)
    for step in range(1, 2 * full + 1):
        *_, truncated, extras = env.step(torch.zeros(env.num_envs, env.action_dim))
        episode = extras["episode"]
        done = episode["done"]
        assert torch.equal(done, truncated), "only time-outs end these episodes"
        first = done & (ended_at < 0)
        # The first episode counts its steps from its start and its metric means over them (1, not k / L).
        assert torch.equal(episode["length"][first], limits[first])
        assert torch.equal(episode["metrics"]["one"][first], torch.ones(int(first.sum())))
        later = done & (ended_at >= 0)
        assert torch.equal(episode["length"][later], torch.full((int(later.sum()),), full)), "then whole episodes"
        ended_at = torch.where(first, step, ended_at)
    assert torch.equal(ended_at, limits) and torch.equal(env.time_limit, torch.full_like(limits, full))


def test_the_time_limits_resume_exactly_and_older_states_run_whole_episodes() -> None:
    env = make_cpu(_time_out_only_cartpole(), num_envs=16)
    env.randomize_time_limits()
    state = env.state_dict()
    other = make_cpu(_time_out_only_cartpole(), num_envs=16, seed=3)
    other.load_state_dict(state)
    assert torch.equal(other.time_limit, env.time_limit)
    del state["episode"]["time_limit"]  # a checkpoint written before per-env time limits
    other.load_state_dict(state)
    assert torch.equal(other.time_limit, torch.full_like(env.time_limit, env.max_episode_length))


def test_a_fresh_run_spreads_the_episode_ends_when_its_config_asks() -> None:
    cfg = dataclasses.replace(train_cfg("cartpole"), device="cpu", num_steps_per_env=4, max_iterations=1)
    env = make_cpu(_time_out_only_cartpole(), num_envs=32)
    Trainer(dataclasses.replace(cfg, spread_episode_ends=True), env, None, Console(quiet=True)).learn()
    assert env.time_limit.min() < env.max_episode_length, "cut first episodes"
    env = make_cpu(_time_out_only_cartpole(), num_envs=32)
    Trainer(cfg, env, None, Console(quiet=True)).learn()
    assert torch.equal(env.time_limit, torch.full_like(env.time_limit, env.max_episode_length)), "off: whole episodes"
