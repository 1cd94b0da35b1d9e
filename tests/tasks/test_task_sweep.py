"""Every registered task: builds, resets, steps, keeps the VecEnv contract, resets only what it is told."""

from __future__ import annotations

import pytest
import torch

from helpers import make_cpu, random_actions
from phalanx.training.registry import env_cfg, registered_tasks

TASK_NAMES = list(registered_tasks())


def _observed(obs: dict[str, torch.Tensor]) -> torch.Tensor:
    """Every group of one step's observations, as one float row per env."""
    return torch.cat([value.flatten(1).float() for value in obs.values()], dim=1)


def _check_obs(env, obs) -> None:
    assert set(obs) == set(env.observation_spec)
    for group, value in obs.items():
        assert value.shape == (env.num_envs, *env.observation_spec[group])
        image = len(env.observation_spec[group]) == 3  # (H, W, C): RGB stays uint8
        assert value.dtype in ((torch.float32, torch.uint8) if image else (torch.float32,))
        assert value.device == env.device
        assert torch.isfinite(value).all(), f"non-finite {group} observation"


@pytest.mark.parametrize("task", TASK_NAMES)
def test_contract_shapes_dtypes_no_nan(task: str) -> None:
    env = make_cpu(task)
    assert env.action_dim > 0 and env.max_episode_length > 0 and env.step_dt > 0
    _check_obs(env, env.reset())
    g = torch.Generator().manual_seed(0)
    for _ in range(40):
        obs, reward, terminated, truncated, extras = env.step(random_actions(env, g))
        _check_obs(env, obs)
        _check_obs(env, extras["final_obs"])
        for flag in (terminated, truncated):
            assert flag.shape == (env.num_envs,) and flag.dtype == torch.bool
        assert reward.shape == (env.num_envs,) and reward.dtype == torch.float32
        assert torch.isfinite(reward).all()
        assert not (terminated & truncated).any()
        episode = extras["episode"]
        assert torch.equal(episode["done"], terminated | truncated)
        assert set(episode["terms"]) == set(env.cfg.rewards)
        assert set(episode["metrics"]) == set(env.cfg.metrics)
        assert all(torch.isfinite(value).all() for value in episode["metrics"].values())
        terms_sum = sum(episode["terms"].values())
        torch.testing.assert_close(terms_sum, episode["return"], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_masked_reset_changes_only_masked_envs(task: str) -> None:
    env = make_cpu(task)
    g = torch.Generator().manual_seed(1)
    for _ in range(10):
        env.step(random_actions(env, g))
    before = {
        "qpos": env.sim.qpos.clone(),
        "qvel": env.sim.qvel.clone(),
        "length": env.episode_length.clone(),
        "obs": _observed(env.obs),
    }
    mask = torch.tensor([True, False] * (env.num_envs // 2))
    obs = env.reset(mask)
    keep = ~mask
    assert torch.equal(env.sim.qpos[keep], before["qpos"][keep])
    assert torch.equal(env.sim.qvel[keep], before["qvel"][keep])
    assert torch.equal(env.episode_length[keep], before["length"][keep])
    assert torch.equal(_observed(obs)[keep], before["obs"][keep])
    assert (env.episode_length[mask] == 0).all()
    assert not torch.equal(env.sim.qpos[mask], before["qpos"][mask])


@pytest.mark.parametrize("task", TASK_NAMES)
def test_same_seed_same_trajectory(task: str) -> None:
    runs = []
    for seed in (7, 7, 8):
        env = make_cpu(task, seed=seed)
        g = torch.Generator().manual_seed(0)
        trajectory = [_observed(env.reset())]
        for _ in range(30):
            obs, reward, *_ = env.step(random_actions(env, g))
            trajectory += [_observed(obs), reward.clone()]
        runs.append(trajectory)
    assert all(torch.equal(a, b) for a, b in zip(runs[0], runs[1], strict=True))
    assert not torch.equal(runs[0][0], runs[2][0]), "another seed must give other initial states"


def test_ant_1000_random_steps_64_envs() -> None:
    """The issue's acceptance run: ant, 64 envs on the CPU, 1000 random steps, no NaN."""
    env = make_cpu("ant", num_envs=64)
    assert env.observation_spec == {"policy": (60,)} and env.action_dim == 8
    g = torch.Generator().manual_seed(0)
    dones = 0
    for _ in range(1000):
        obs, reward, terminated, truncated, extras = env.step(random_actions(env, g))
        assert torch.isfinite(obs["policy"]).all() and torch.isfinite(reward).all()
        dones += int((terminated | truncated).sum())
    assert obs["policy"].shape == (64, 60) and obs["policy"].device.type == "cpu"
    assert dones > 0
    assert int(env.invalid_resets) == 0


def test_observation_noise_is_uniform_within_its_bound() -> None:
    clean_cfg, noisy_cfg = env_cfg("cartpole"), env_cfg("cartpole")
    for term in noisy_cfg.observations["policy"].values():
        term.noise = 0.1
    clean, noisy = make_cpu(clean_cfg, num_envs=64), make_cpu(noisy_cfg, num_envs=64)
    difference = noisy.obs["policy"] - clean.obs["policy"]  # same seed: same reset state
    assert difference.abs().max() <= 0.1 + 1e-6
    assert difference.abs().mean() > 0.03, "uniform in [-0.1, 0.1] has mean magnitude 0.05"
