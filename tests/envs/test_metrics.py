"""Metric terms: per-step values averaged over each episode, outside the reward, logged by the trainer."""

from __future__ import annotations

import dataclasses

import torch
from rich.console import Console

from helpers import make_cpu, random_actions
from phalanx.envs import MetricTermCfg
from phalanx.training.registry import env_cfg, train_cfg
from phalanx.training.trainer import Trainer


def _step_count(env) -> torch.Tensor:
    return env.episode_length.float()  # 1, 2, ..., L over an episode of L steps: mean (L + 1) / 2


def _cartpole_with_metric():
    cfg = env_cfg("cartpole")
    return dataclasses.replace(cfg, metrics={"step_count": MetricTermCfg(func=_step_count)})


def test_metric_is_the_mean_over_the_episode_steps_and_restarts_at_reset() -> None:
    env = make_cpu(_cartpole_with_metric(), num_envs=16)
    plain = make_cpu("cartpole", num_envs=16)
    g = torch.Generator().manual_seed(0)
    ended = 0
    for _ in range(120):
        actions = random_actions(env, g)
        _, reward, *_, extras = env.step(actions)
        _, plain_reward, *_ = plain.step(actions)
        assert torch.equal(reward, plain_reward), "a metric does not change the reward"
        episode = extras["episode"]
        done = episode["done"]
        expected = (episode["length"][done].float() + 1) / 2
        torch.testing.assert_close(episode["metrics"]["step_count"][done], expected)
        ended += int(done.sum())
    assert ended > 16, "several episodes per env, so the sums were reset in between"


def test_trainer_logs_the_episode_mean_of_each_metric() -> None:
    env = make_cpu(_cartpole_with_metric(), num_envs=16)
    cfg = dataclasses.replace(train_cfg("cartpole"), device="cpu", num_steps_per_env=16)
    trainer = Trainer(cfg, env, run_dir=None, console=Console(quiet=True))
    rows = [trainer.iterate() for _ in range(3)]
    logged = [row["metrics/step_count"] for row in rows if row["episodes"] > 0]
    assert logged, "episodes ended"
    # The mean over episodes of (L + 1) / 2 is (mean length + 1) / 2.
    for row in rows:
        if row["episodes"] > 0:
            assert abs(row["metrics/step_count"] - (row["mean_episode_length"] + 1) / 2) < 1e-3


def test_a_final_metric_is_the_value_at_the_episode_last_step() -> None:
    cfg = env_cfg("cartpole")
    cfg.metrics["last_step"] = MetricTermCfg(func=_step_count, final=True)
    env = make_cpu(cfg, num_envs=16)
    g = torch.Generator().manual_seed(0)
    ended = 0
    for _ in range(120):
        *_, extras = env.step(random_actions(env, g))
        episode = extras["episode"]
        done = episode["done"]
        torch.testing.assert_close(episode["metrics"]["last_step"][done], episode["length"][done].float())
        ended += int(done.sum())
    assert ended > 16


def test_speed_to_target_is_the_root_velocity_along_the_direction_to_the_target() -> None:
    from phalanx.envs.mdp import metrics

    env = make_cpu("ant", num_envs=3)
    a, d = env.sim.root_qposadr, env.sim.root_dofadr
    env.sim.qpos[:, a : a + 2] = torch.tensor([[0.0, 0.0], [997.0, 4.0], [1000.0, -2.0]])
    env.sim.qvel[:, d : d + 3] = torch.tensor([[2.0, 5.0, 9.0], [-3.0, 4.0, 1.0], [0.0, 1.5, 0.0]])
    # Toward (1000, 0): along +x from the origin; along (3, -4) / 5 from (997, 4); along +y from (1000, -2).
    expected = torch.tensor([2.0, (-3.0 * 3 + 4.0 * -4) / 5, 1.5])
    torch.testing.assert_close(metrics.speed_to_target(env, (1000.0, 0.0, 0.5)), expected)
