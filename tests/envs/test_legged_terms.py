"""Terms of the legged velocity task on known states: events touch only their envs, rewards
match hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs.mdp import commands, events, velocity_rewards


@pytest.fixture(scope="module")
def env():
    return make_cpu("anymal-flat", num_envs=6, seed=2)


def test_push_adds_to_the_root_velocity_of_the_pushed_envs_only(env) -> None:
    env.reset()
    before = env.sim.qvel.clone()
    mask = torch.tensor([True, False, True, False, False, True])
    events.push_by_setting_velocity(env, mask, velocity_range=(0.3, 0.5))
    after = env.sim.qvel
    assert torch.equal(after[~mask], before[~mask])
    push = after[mask, :2] - before[mask, :2]
    assert torch.all((push >= 0.3 - 1e-6) & (push <= 0.5 + 1e-6))
    assert torch.equal(after[mask, 2:], before[mask, 2:]), "only the horizontal velocity"


def test_root_reset_turns_and_shifts_only_its_envs(env) -> None:
    env.reset()
    before = env.sim.qpos.clone()
    mask = torch.tensor([False, True, True, False, False, False])
    env.sim.reset_(mask)  # reset events run right after the default state is restored
    events.reset_root_state_uniform(env, mask, xy_range=(-0.5, 0.5), yaw_range=(math.pi / 2, math.pi / 2))
    q = env.sim.qpos
    assert torch.equal(q[~mask], before[~mask])
    default = env.sim.default_qpos
    torch.testing.assert_close(q[mask, 2], default[2].expand(2))  # height kept
    assert torch.all((q[mask, :2] - default[:2]).abs() <= 0.5)
    half = math.pi / 4  # a quarter turn about z from the upright default
    torch.testing.assert_close(q[mask, 3:7], torch.tensor([[math.cos(half), 0.0, 0.0, math.sin(half)]] * 2))


def test_velocity_tracking_rewards_match_hand_computation(env) -> None:
    env.reset()
    env.sim.qpos[:, 3:7] = torch.tensor([1.0, 0.0, 0.0, 0.0])  # upright, yaw 0: body frame = world frame
    env.sim.qvel[:, :6] = torch.tensor([0.8, -0.2, 0.1, 0.3, -0.4, 0.5])
    env.command("base_velocity")[:] = torch.tensor([1.0, 0.0, 0.25])
    lin = velocity_rewards.track_lin_vel_xy_exp(env, "base_velocity", std=0.5)
    ang = velocity_rewards.track_ang_vel_z_exp(env, "base_velocity", std=0.5)
    torch.testing.assert_close(lin, torch.full((6,), math.exp(-(0.2**2 + 0.2**2) / 0.25)))
    torch.testing.assert_close(ang, torch.full((6,), math.exp(-(0.25**2) / 0.25)))
    torch.testing.assert_close(velocity_rewards.lin_vel_z_l2(env), torch.full((6,), 0.01))
    torch.testing.assert_close(velocity_rewards.ang_vel_xy_l2(env), torch.full((6,), 0.25))


def test_heading_command_turns_the_heading_error_into_a_clamped_yaw_rate(env) -> None:
    env.reset()
    term = commands.uniform_velocity(
        env, lin_vel_x=(0.5, 0.5), lin_vel_y=(0.0, 0.0), ang_vel_z=(-1.0, 1.0), heading=(0.0, 0.0), heading_envs=1.0
    )
    yaw = torch.tensor([0.0, 0.5, -1.0, 3.0, -3.0, math.pi / 2])
    env.sim.qpos[:, 3:7] = torch.stack(
        [torch.cos(yaw / 2), torch.zeros(6), torch.zeros(6), torch.sin(yaw / 2)], dim=1
    )  # upright, turned by yaw about z
    term.resample(env, torch.ones(6, dtype=torch.bool))
    term.update(env)  # the env calls it after resampling, every step
    # target heading 0: yaw rate = 0.5 x (0 - yaw), wrapped to (-pi, pi], clamped to [-1, 1]
    expected = (0.5 * -yaw).clamp(-1.0, 1.0)
    torch.testing.assert_close(term.command[:, 2], expected)
    torch.testing.assert_close(term.command[:, :2], torch.tensor([[0.5, 0.0]] * 6))
    env.sim.qpos[:, 3:7] = torch.tensor([1.0, 0.0, 0.0, 0.0])  # now facing the target
    term.update(env)
    torch.testing.assert_close(term.command[:, 2], torch.zeros(6))
    # Across +-pi the shorter way round: heading target 3.0 from yaw -3.0 is -0.28 rad away.
    term.heading_target.fill_(3.0)
    env.sim.qpos[:, 3:7] = torch.tensor([math.cos(-1.5), 0.0, 0.0, math.sin(-1.5)])
    term.update(env)
    torch.testing.assert_close(term.command[:, 2], torch.full((6,), 0.5 * (6.0 - 2 * math.pi)))


def test_standing_envs_get_a_zero_command_even_with_a_heading(env) -> None:
    env.reset()
    term = commands.uniform_velocity(
        env, lin_vel_x=(0.5, 1.0), lin_vel_y=(0.5, 1.0), ang_vel_z=(0.5, 1.0), standing=0.0, heading=(1.0, 2.0)
    )
    term.resample(env, torch.ones(6, dtype=torch.bool))
    assert (term.command[:, :2] >= 0.5).all(), "nobody stands"
    term.standing = 1.0
    term.resample(env, torch.tensor([True, True, False, False, True, False]))
    term.update(env)
    assert term.command[[0, 1, 4]].abs().sum() == 0, "the resampled envs stand, heading or not"
    assert (term.command[[2, 3, 5], :2] >= 0.5).all(), "the others keep their command"


def test_action_rate_is_the_squared_change_from_zero_after_a_reset(env) -> None:
    term = velocity_rewards.action_rate_l2(env)
    env.action[:] = 0.5
    torch.testing.assert_close(term(env), torch.full((6,), 12 * 0.5**2))  # the action before counts as 0
    env.action[:] = 0.2
    torch.testing.assert_close(term(env), torch.full((6,), 12 * 0.3**2))
    term.reset(env, torch.tensor([True] + [False] * 5))
    env.action[:] = 0.1
    rate = term(env)
    assert rate[0] == pytest.approx(12 * 0.1**2) and torch.allclose(rate[1:], torch.full((5,), 12 * 0.1**2))


def test_friction_randomization_sets_only_the_targeted_worlds() -> None:
    env = make_cpu("anymal-flat", num_envs=4, seed=5)  # startup drew one coefficient per world
    friction = env.sim.per_world("geom_friction")[:, :, 0]
    assert friction.shape == (4, len(env.sim.geom_names))
    per_world = friction[:, :1]
    assert torch.equal(friction, per_world.expand_as(friction)), "one coefficient for every geom of a world"
    assert torch.all((per_world >= 0.6) & (per_world <= 1.0)) and per_world.unique().numel() == 4
    before = friction.clone()
    mask = torch.tensor([False, True, False, False])
    events.randomize_friction(env, mask, geoms="floor", friction_range=(0.1, 0.1))
    after = env.sim.per_world("geom_friction")[:, :, 0]
    floor = env.sim.geom_names.index("floor")
    assert after[1, floor] == pytest.approx(0.1)
    changed = after != before
    assert changed.sum() == 1 and changed[1, floor]
    env.step(torch.zeros(4, env.action_dim))
    with pytest.raises(ConfigError, match="randomize_friction edits model fields and must be a startup event"):
        events.randomize_friction(env, mask)


def test_per_world_friction_changes_the_physics_of_that_world_only() -> None:
    """A box slides on a plane from 2 m/s: farther in the world whose friction is lower."""
    from phalanx.sim import SimCfg, Simulator, load_model

    xml = """<mujoco><option timestep="0.005" cone="elliptic"/><worldbody>
      <geom name="floor" type="plane" size="0 0 1"/>
      <body pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>
    </worldbody></mujoco>"""
    sim = Simulator(load_model(xml), 3, "cpu", SimCfg(decimation=1))
    friction = sim.per_world("geom_friction")
    friction[:, :, 0] = torch.tensor([[1.0], [0.1], [1.0]])
    sim.qvel[:, 0] = 2.0
    for _ in range(100):
        sim.step()
    x = sim.qpos[:, 0]
    # mu = 1 stops within v^2 / (2 mu g) = 0.2 m; mu = 0.1 slides ~1.2 m in the 0.5 s
    assert x[0] == pytest.approx(x[2]) and x[0] < 0.25 and x[1] > 0.8
    with pytest.raises(RuntimeError, match="before the first step"):
        sim.per_world("body_mass")


def test_added_base_mass_changes_only_the_targeted_worlds_and_their_stance() -> None:
    env = make_cpu("anymal-flat", num_envs=3, seed=1)
    mass = env.sim.per_world("body_mass")
    base = env.sim.body_names.index("base")
    assert torch.all((mass[:, base] >= 28.0) & (mass[:, base] <= 38.0)), "startup: 33 kg +- 5 kg"
    before = mass.clone()
    events.add_body_mass(env, torch.tensor([False, False, True]), bodies=["base"], mass_range=(30.0, 30.0))
    assert torch.equal(mass[:2], before[:2]) and mass[2, base] == pytest.approx(before[2, base] + 30.0)
    env.step(torch.zeros(env.num_envs, env.action_dim))  # MuJoCo Warp's set_const runs before the first physics
    subtree = env.sim.per_world("body_subtreemass")[:, 1]
    torch.testing.assert_close(subtree, mass[:, 1:].sum(dim=1))  # the derived constant follows, per world
