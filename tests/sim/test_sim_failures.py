"""A broken world (buffer overflow, NaN state) is detected per env, reset, counted and reported;
the other envs and training go on."""

from __future__ import annotations

import torch

from helpers import make_cpu, random_actions
from phalanx.envs.broken_worlds import BrokenWorlds
from phalanx.training.registry import env_cfg


def test_nan_state_resets_only_that_env_and_is_counted() -> None:
    env = make_cpu("ant", num_envs=4)
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        env.step(random_actions(env, g) * 0.1)
    lengths = env.episode_length.clone()
    env.sim.qvel[2, 0] = float("nan")
    obs, reward, terminated, truncated, extras = env.step(random_actions(env, g) * 0.1)
    assert bool(terminated[2]) and float(reward[2]) == 0.0
    assert int(env.episode_length[2]) == 0, "the broken env was reset"
    assert torch.equal(env.episode_length[[0, 1, 3]], lengths[[0, 1, 3]] + 1), "the others stepped on"
    assert torch.isfinite(obs["policy"]).all() and torch.isfinite(reward).all()
    assert int(env.invalid_resets) == 1
    assert env.report_invalid() == [
        "1 env resets after diverged physics (NaN/inf, or |qvel| > sim.max_qvel = 1000) or NaN/inf in "
        "observations or rewards"
    ]


def test_diverging_state_resets_that_env_before_it_turns_nan() -> None:
    """A world flying off at finite but absurd speed is reset too: its rewards (-1e15 in an
    anymal-rough run) would otherwise wreck the value targets of every env."""
    cfg = env_cfg("ant")
    cfg.sim.max_qvel = 100.0
    env = make_cpu(cfg, num_envs=3)
    zeros = torch.zeros(3, env.action_dim)
    env.step(zeros)
    env.sim.qvel[1, 2] = 1.0e4  # upward at 10 km/s: after the step it is still far above 100
    _, reward, terminated, *_ = env.step(zeros)
    assert terminated.tolist() == [False, True, False] and float(reward[1]) == 0.0
    assert int(env.episode_length[1]) == 0 and int(env.invalid_resets) == 1


def test_contact_overflow_is_detected_reset_and_names_the_flag() -> None:
    cfg = env_cfg("ant")
    cfg.sim.nconmax_per_env = 1  # a resting ant makes about 4 contacts: the shared pool overflows
    env = make_cpu(cfg, num_envs=4)
    for _ in range(60):
        obs, reward, terminated, truncated, extras = env.step(torch.zeros(4, env.action_dim))
        assert torch.isfinite(obs["policy"]).all()
    assert int(env.invalid_resets) > 0
    report = env.report_invalid()
    assert len(report) == 1 and "contact overflow" in report[0] and "--env.sim.nconmax-per-env" in report[0]


def test_constraint_overflow_is_detected_reset_and_names_the_flag() -> None:
    cfg = env_cfg("ant")
    cfg.sim.njmax_per_env = 4  # one elliptic contact takes 3 rows; the ant's limits take more
    env = make_cpu(cfg, num_envs=4)
    for _ in range(60):
        obs, *_ = env.step(torch.zeros(4, env.action_dim))
        assert torch.isfinite(obs["policy"]).all()
    report = env.report_invalid()
    assert any("constraint overflow" in line and "--env.sim.njmax-per-env" in line for line in report)


def test_nan_observation_or_reward_resets_only_that_env() -> None:
    from phalanx.envs import ObsTermCfg, RewardTermCfg

    def poisoned(env, column):
        value = torch.zeros(env.num_envs, 1)
        value[column] = float("nan")
        return value

    cfg = env_cfg("cartpole")
    cfg.observations["policy"]["poisoned"] = ObsTermCfg(func=poisoned, params={"column": 1})
    cfg.rewards["poisoned"] = RewardTermCfg(func=lambda env: poisoned(env, 2)[:, 0], weight=1.0)
    env = make_cpu(cfg, num_envs=4)
    obs, reward, terminated, truncated, extras = env.step(torch.zeros(4, 1))
    assert terminated.tolist() == [False, True, True, False]
    assert torch.isfinite(reward).all() and reward[1] == 0 and reward[2] == 0
    assert torch.isfinite(extras["final_obs"]["policy"]).all(), "final_obs must be safe to bootstrap from"
    assert env.episode_length.tolist() == [1, 0, 0, 1]
    assert int(env.invalid_resets) == 2


def test_broken_world_totals_survive_a_state_round_trip() -> None:
    """The counters are per env (no sum over envs inside the step); the state keeps the totals."""
    worlds = BrokenWorlds(4, torch.device("cpu"))
    reasons = torch.tensor([[1, 0, 1], [0, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=torch.bool)
    assert worlds.count(reasons).tolist() == [True, False, True, True]
    worlds.count(reasons[[3, 0, 1, 2]])
    assert worlds.counts.tolist() == [2, 2, 4] and int(worlds.envs) == 6
    restored = BrokenWorlds(4, torch.device("cpu"))
    restored.load_state_dict(worlds.state_dict())
    assert restored.counts.tolist() == [2, 2, 4] and int(restored.envs) == 6
