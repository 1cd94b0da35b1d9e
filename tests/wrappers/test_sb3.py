"""Stable-Baselines3's PPO trains a phalanx task through `Sb3VecEnv` and `learn`: the contract holds,
the returns rise on a fixed seed, and the env steps only inside rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

import phalanx
from phalanx.core.errors import ConfigError
from phalanx.wrappers.sb3 import Sb3VecEnv, learn, ppo_kwargs


def _return_per_env(model: PPO, env: Sb3VecEnv, steps: int = 150) -> float:
    """Reward summed over `steps` deterministic steps, averaged over envs (episodes restart)."""
    obs, total = env.reset(), 0.0
    for _ in range(steps):
        actions, _ = model.predict(obs, deterministic=True)
        obs, reward, _, _ = env.step(actions)
        total += float(reward.mean())
    return total


class _CountingEnv:
    """A phalanx env that counts its steps."""

    def __init__(self, env: Any):
        self.env, self.steps = env, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, actions: torch.Tensor):
        self.steps += 1
        return self.env.step(actions)


def test_sb3_ppo_learns_cartpole(tmp_path: Path) -> None:
    train = phalanx.train_cfg("cartpole")
    train.max_iterations, train.save_interval = 10, 5
    env = phalanx.make("cartpole", num_envs=64, device="cpu", seed=0)
    untrained = PPO(env=Sb3VecEnv(env), device="cpu", **ppo_kwargs(train, env.num_envs))  # learn's initial weights
    before = _return_per_env(untrained, Sb3VecEnv(env))
    learn(train, env, tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model_10.zip", "model_5.zip"]
    after = _return_per_env(PPO.load(tmp_path / "model_10.zip", device="cpu"), Sb3VecEnv(env))
    assert after > before + 50, (before, after)  # 45 -> 143 of at most 150 when written


def test_learn_steps_only_in_rollouts_and_saves_normalization(tmp_path: Path) -> None:
    train = phalanx.train_cfg("cartpole")
    train.max_iterations, train.save_interval, train.empirical_normalization = 3, 2, True
    env = _CountingEnv(phalanx.make("cartpole", num_envs=8, device="cpu"))
    learn(train, env, tmp_path)
    assert env.steps == 3 * train.num_steps_per_env
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == ["model_2.zip", "model_3.zip", "vecnormalize_2.pkl", "vecnormalize_3.pkl"]


def test_the_contract_sb3_reads() -> None:
    phalanx_env = phalanx.make("cartpole", num_envs=4, device="cpu")
    env = Sb3VecEnv(phalanx_env)
    assert env.num_envs == 4 and env.observation_space.shape == (4,) and env.action_space.shape == (1,)
    assert np.isfinite(env.action_space.low).all(), "SB3 requires a bounded action Box"
    env.seed(3)
    obs = env.reset()
    env.seed(3)
    assert np.array_equal(env.reset(), obs), "seed() reseeds the next reset"
    assert obs.shape == (4, 4) and obs.dtype == np.float32

    obs, reward, done, infos = env.step(np.zeros((4, 1), np.float32))
    assert reward.shape == done.shape == (4,) and reward.dtype == np.float32 and done.dtype == bool
    assert len(infos) == 4 and not done.any() and infos == [{}] * 4
    assert not np.shares_memory(obs, phalanx_env.obs["policy"].numpy()), "a copy, not the env's buffer"
    kept = obs.copy()

    phalanx_env.episode_length.fill_(phalanx_env.max_episode_length - 1)
    _, _, done, infos = env.step(np.zeros((4, 1), np.float32))
    assert np.array_equal(obs, kept), "the next step leaves a returned array alone"
    assert done.all() and all(info["TimeLimit.truncated"] for info in infos), "time-outs reach SB3"
    assert all(info["terminal_observation"].shape == (4,) for info in infos)
    assert all(info["episode"]["l"] == phalanx_env.max_episode_length for info in infos)

    assert env.get_attr("max_episode_length") == [phalanx_env.max_episode_length] * 4
    assert env.env_is_wrapped(object) == [False] * 4 and env.render_mode is None


def test_image_observations_are_refused() -> None:
    train = phalanx.train_cfg("cartpole")
    train.policy.image_group = "image"
    with pytest.raises(ConfigError, match="vector observations only"):
        ppo_kwargs(train, 64)
