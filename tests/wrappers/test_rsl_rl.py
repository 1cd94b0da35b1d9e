"""rsl_rl's own runner trains a phalanx task through `RslRlVecEnv`: the contract holds and the
returns rise on a fixed seed."""

from __future__ import annotations

import torch
from rsl_rl.runners import OnPolicyRunner

import phalanx
from phalanx.wrappers.rsl_rl import RslRlVecEnv, runner_cfg


def _return_per_env(env: RslRlVecEnv, policy, steps: int = 150) -> float:
    """Reward summed over `steps` deterministic steps, averaged over envs (episodes restart)."""
    obs, total = env.get_observations(), 0.0
    for _ in range(steps):
        with torch.no_grad():
            obs, reward, _, _ = env.step(policy(obs))
        total += float(reward.mean())
    return total


def test_rsl_rls_runner_learns_cartpole() -> None:
    torch.manual_seed(0)
    train = phalanx.train_cfg("cartpole")
    env = RslRlVecEnv(phalanx.make("cartpole", num_envs=64, device="cpu", seed=0))
    runner = OnPolicyRunner(env, runner_cfg(train), log_dir=None, device="cpu")
    before = _return_per_env(env, runner.get_inference_policy())
    runner.learn(num_learning_iterations=25)
    after = _return_per_env(env, runner.get_inference_policy())
    assert after > before + 50, (before, after)  # 42 -> 143 of at most 150 when written


def test_the_contract_rsl_rl_reads() -> None:
    env = RslRlVecEnv(phalanx.make("cartpole", num_envs=4, device="cpu"))
    obs = env.get_observations()
    assert obs.batch_size == torch.Size([4]) and set(obs.keys()) == {"policy"}
    assert env.num_actions == 1 and env.max_episode_length == env.env.max_episode_length
    obs, reward, done, extras = env.step(torch.zeros(4, 1))
    assert reward.shape == done.shape == extras["time_outs"].shape == (4,)
    assert all(key.startswith(("Episode_Reward/", "Episode_Metric/", "Env/")) for key in extras["log"])
    env.episode_length_buf = torch.full((4,), env.max_episode_length - 1)
    _, _, done, extras = env.step(torch.zeros(4, 1))
    assert done.all() and extras["time_outs"].all(), "rsl_rl's random initial episode lengths reach the env"
