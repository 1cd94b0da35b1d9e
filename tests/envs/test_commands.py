"""Commands are resampled at reset and on their timers, only for the envs due; default-offset
actions drive position targets around the default pose."""

from __future__ import annotations

import pytest
import torch

from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs import CommandTerm, CommandTermCfg
from phalanx.training.registry import env_cfg


class Counter(CommandTerm):
    """Each resample adds 1 to the env's command: the command counts its resamples."""

    def __init__(self, env, **params):
        self.command = torch.zeros(env.num_envs, 1, device=env.device)

    def resample(self, env, mask):
        self.command += mask[:, None].float()


def test_commands_resample_at_reset_and_on_schedule() -> None:
    cfg = env_cfg("cartpole")
    # env dt is 1/60 s: a fixed 0.05 s time resamples on every third step.
    cfg.commands["count"] = CommandTermCfg(func=Counter, resampling_time_range_s=(0.05, 0.05))
    env = make_cpu(cfg, num_envs=4)
    assert env.command("count")[:, 0].tolist() == [1, 1, 1, 1], "sampled once at the first reset"
    for _ in range(6):
        env.step(torch.zeros(4, 1))
    assert env.command("count")[:, 0].tolist() == [3, 3, 3, 3]
    env.reset(torch.tensor([False, True, False, False]))
    assert env.command("count")[:, 0].tolist() == [3, 4, 3, 3], "a reset resamples only its envs"
    env.step(torch.zeros(4, 1))
    env.step(torch.zeros(4, 1))
    # env 1's timer restarted at its reset: it is not due with the others
    assert env.command("count")[:, 0].tolist() == [3, 4, 3, 3]
    env.step(torch.zeros(4, 1))
    assert env.command("count")[:, 0].tolist() == [4, 5, 4, 4]


def test_actions_offset_from_the_default_pose() -> None:
    cfg = env_cfg("anymal-flat")
    env = make_cpu(cfg, num_envs=2)
    actions = torch.zeros(2, env.action_dim)
    actions[1] = 1.0
    env.step(actions)
    home = torch.tensor([0.0, 0.4, -0.8, 0.0, 0.4, -0.8, 0.0, -0.4, 0.8, 0.0, -0.4, 0.8])
    torch.testing.assert_close(env.sim.ctrl[0], home)
    torch.testing.assert_close(env.sim.ctrl[1], home + cfg.actions.scale)


def test_action_delay_applies_the_action_of_delay_steps_ago() -> None:
    cfg = env_cfg("anymal-flat")
    cfg.actions.delay_range = (0, 2)
    env = make_cpu(cfg, num_envs=12, seed=3)
    delay = env.actions.delay.clone()
    assert set(delay.tolist()) == {0, 1, 2}, "each env draws its delay from the range"
    home = env.joints.offset
    sent = [torch.full((12, env.action_dim), 0.1 * (k + 1)) for k in range(4)]
    for k, actions in enumerate(sent):
        env.step(actions)
        # env with delay d applies the action sent d steps ago; before any arrived, the zero action
        for i, d in enumerate(delay.tolist()):
            value = 0.1 * (k + 1 - d) if k >= d else 0.0
            torch.testing.assert_close(env.sim.ctrl[i], home + cfg.actions.scale * value)
        assert torch.equal(env.action, actions), "observations and rewards see the action as sent"
    env.reset(torch.tensor([True] + [False] * 11))
    env.actions.delay[:2] = 2  # env 0 was reset, env 1 was not
    env.step(torch.full((12, env.action_dim), 0.9))
    torch.testing.assert_close(env.sim.ctrl[0], home)  # a reset env's history starts from zero
    torch.testing.assert_close(env.sim.ctrl[1], home + cfg.actions.scale * 0.3)  # sent 2 steps earlier


def test_action_delay_range_is_checked() -> None:
    cfg = env_cfg("anymal-flat")
    cfg.actions.delay_range = (2, 1)
    with pytest.raises(ConfigError, match="actions.delay_range"):
        make_cpu(cfg, num_envs=2)


def test_resume_into_a_different_action_delay_names_the_mismatch() -> None:
    cfg = env_cfg("anymal-flat")
    cfg.actions.delay_range = (0, 2)
    state = make_cpu(cfg, num_envs=2).state_dict()
    with pytest.raises(ConfigError, match="actions/history"):
        make_cpu("anymal-flat", num_envs=2).load_state_dict(state)


def test_a_velocity_command_shows_as_arrows_over_the_base() -> None:
    """anymal-flat's command (1, 1) m/s in the base frame, the base turned 90 degrees about z: the
    commanded arrow starts 0.5 m over the base, points along the world's (-1, 1), and is sqrt(2)
    long; the base's own velocity gets the other arrow."""
    import math

    from phalanx.envs.markers import yaw_quat

    env = make_cpu(env_cfg("anymal-flat"), num_envs=2)
    term = env.command_term("base_velocity")
    term.command[:] = torch.tensor([1.0, 1.0, 0.0])
    env.sim.qpos[:, 3:7] = yaw_quat(torch.full((2,), math.pi / 2))
    markers = term.markers(env)
    assert set(markers) == {"commanded", "moving"}
    commanded = markers["commanded"]
    torch.testing.assert_close(commanded.pos, env.sim.qpos[:, :3] + torch.tensor([0.0, 0.0, 0.5]))
    torch.testing.assert_close(commanded.quat, yaw_quat(torch.full((2,), 3 * math.pi / 4)))
    torch.testing.assert_close(commanded.scale[:, 0], torch.full((2,), math.sqrt(2)))
    assert commanded.shape == "arrow" and markers["moving"].color != commanded.color
