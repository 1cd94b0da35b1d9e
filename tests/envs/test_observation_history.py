"""Observation history (`ObsTermCfg.history`): a term's last values, newest first, along its last
axis; refilled with the first value after a reset; left alone by the final observation of an
episode; saved and restored with the env. And groups without terms."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import phalanx
from helpers import make_cpu, random_actions
from phalanx.core.errors import ConfigError
from phalanx.envs import ObsTermCfg
from phalanx.envs.mdp import observations
from phalanx.rl.cfg import PolicyCfg
from phalanx.rl.models import ActorCritic


def _cartpole(history: int, num_envs: int = 16, **changes):
    cfg = phalanx.env_cfg("cartpole")
    joint = {"func": observations.joint_pos, "params": {"joints": "hinge"}}
    cfg.observations = {
        "policy": {
            "pole_pos": ObsTermCfg(**joint, history=history),
            "cart_vel": ObsTermCfg(func=observations.joint_vel, params={"joints": "slider"}),
        }
    }
    return phalanx.make(dataclasses.replace(cfg, **changes), num_envs=num_envs, device="cpu", seed=1)


def test_history_holds_the_last_values_newest_first_and_restarts_at_a_reset() -> None:
    env = _cartpole(history=3)
    assert env.observation_spec["policy"] == (4,) and env.obs_term_shapes["policy"]["pole_pos"] == (3,)
    obs = env.reset()["policy"]
    assert torch.equal(obs[:, 0], obs[:, 1]) and torch.equal(obs[:, 0], obs[:, 2]), "a reset fills every slot"
    generator = torch.Generator().manual_seed(0)
    resets = 0
    for _ in range(120):
        previous = obs
        obs, _, terminated, truncated, extras = env.step(random_actions(env, generator))
        obs, final, done = obs["policy"], extras["final_obs"]["policy"], terminated | truncated
        pole = env.sim.qpos[:, 1]
        torch.testing.assert_close(obs[:, 0], pole, rtol=0, atol=0)
        # The final observation: this step's value before the reset, then the episode's past.
        torch.testing.assert_close(final[:, 1:3], previous[:, 0:2], rtol=0, atol=0)
        going = ~done
        torch.testing.assert_close(obs[going, 1:3], previous[going, 0:2], rtol=0, atol=0)
        torch.testing.assert_close(obs[done, 1], obs[done, 0], rtol=0, atol=0)
        torch.testing.assert_close(obs[done, 2], obs[done, 0], rtol=0, atol=0)
        resets += int(done.sum())
    assert resets > 0, "some episodes ended (the pole falls under random actions)"


def test_a_partial_reset_restarts_only_its_envs() -> None:
    env = _cartpole(history=2, num_envs=6)
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        env.step(random_actions(env, generator) * 0.1)
    before = env.obs["policy"].clone()
    mask = torch.tensor([True, False, True, False, False, False])
    obs = env.reset(mask)["policy"]
    assert torch.equal(obs[~mask], before[~mask])
    assert torch.equal(obs[mask, 0], obs[mask, 1])
    obs = env.step(torch.zeros(6, 1))[0]["policy"]
    assert torch.equal(obs[~mask, 1], before[~mask, 0]), "the others' history went on from their last value"


def test_history_is_part_of_the_env_state() -> None:
    env = _cartpole(history=4, num_envs=8)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        env.step(random_actions(env, generator))
    state = env.state_dict()
    actions = [random_actions(env, generator) for _ in range(6)]
    first = [env.step(a)[0]["policy"].clone() for a in actions]
    env.load_state_dict(state)
    again = [env.step(a)[0]["policy"].clone() for a in actions]
    for a, b in zip(first, again, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bad_history_and_a_policy_that_sees_nothing_are_refused_by_field() -> None:
    with pytest.raises(ConfigError, match=r"env.observations.policy.pole_pos.history: must be a positive integer"):
        _cartpole(history=0)
    cfg = phalanx.env_cfg("cartpole")
    cfg.observations = {"policy": {}, "critic": cfg.observations["policy"]}
    env = make_cpu(cfg, num_envs=4)
    assert env.obs["policy"].shape == (4, 0) and env.observation_spec["critic"] == (4,)
    with pytest.raises(ConfigError, match=r"env.observations.policy: the actor would see nothing"):
        ActorCritic.for_env(env.observation_spec, env.action_dim, PolicyCfg())


def test_cartpole_rgb_sees_two_stacked_frames_and_its_critic_the_joint_state() -> None:
    env = make_cpu("cartpole-rgb", num_envs=4)
    assert env.observation_spec == {"policy": (0,), "image": (64, 64, 6), "critic": (4,)}
    image = env.obs["image"]
    assert image.dtype == torch.uint8 and torch.equal(image[..., :3], image[..., 3:])
    generator = torch.Generator().manual_seed(0)
    previous = image.clone()
    image = env.step(random_actions(env, generator))[0]["image"]
    assert torch.equal(image[..., 3:], previous[..., :3]) and not torch.equal(image[..., :3], previous[..., :3])
    policy = ActorCritic.for_env(env.observation_spec, env.action_dim, phalanx.train_cfg("cartpole-rgb").policy)
    assert policy.critic_encoder is None and policy.actor_encoder is not None
    depth = make_cpu("cartpole-depth", num_envs=2).obs["image"]
    assert depth.dtype == torch.float32 and depth.shape == (2, 64, 64, 2)
    assert 0 <= float(depth.min()) and float(depth.max()) <= 1.0, "depth in metres / 8: the cart within [0, 1]"
    assert float(depth.max()) > 0.5


def test_a_critic_that_sees_only_the_image_trains() -> None:
    from rich.console import Console

    from phalanx.training.trainer import Trainer

    cfg = phalanx.env_cfg("cartpole-rgb")
    cfg.observations["policy"], cfg.observations["critic"] = cfg.observations["critic"], {}
    env = make_cpu(cfg, num_envs=4)
    train = phalanx.train_cfg("cartpole-rgb")
    train.num_steps_per_env, train.compile_update = 4, False
    train.policy.critic_image = True
    trainer = Trainer(train, env, run_dir=None, console=Console(quiet=True))
    assert trainer.policy.critic_encoder is not None
    row = trainer.iterate()
    assert torch.isfinite(torch.tensor(row["loss/value"]))
