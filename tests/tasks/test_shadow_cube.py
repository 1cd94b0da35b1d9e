"""shadow-cube on the CPU: actions span the actuators' ranges, a goal reached pays its bonus, is
counted, replaced and restarts the goal's clock, a goal not reached in time or the 50th success
ends the episode as a time-out, a fallen cube ends it, and the rotation helpers are right."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs.mdp.math import quat_apply, quat_mul
from phalanx.tasks.shadow_hand.cube import CUBE_HALF_SIZE, CUBE_HOME, GOAL_TIME_S, MAX_SUCCESSES
from phalanx.tasks.shadow_hand.mdp.manipulation import (
    goal_keypoints,
    object_goal_rotation,
    object_keypoints,
    object_rotation,
    random_quat,
    rotation_distance,
)
from phalanx.training.export import drive
from phalanx.training.registry import env_cfg


@pytest.fixture(scope="module")
def env():
    return make_cpu("shadow-cube", num_envs=4)


def test_actions_span_each_actuators_ctrl_range(env) -> None:
    low, high = torch.as_tensor(env.sim.mjm.actuator_ctrlrange, dtype=torch.float32).T
    actions = torch.stack((-torch.ones(env.action_dim), torch.ones(env.action_dim), torch.zeros(env.action_dim)))
    env.step(torch.cat((actions, torch.zeros(1, env.action_dim))))
    torch.testing.assert_close(env.sim.ctrl[0], low)
    torch.testing.assert_close(env.sim.ctrl[1], high)
    torch.testing.assert_close(env.sim.ctrl[2], (low + high) / 2)


def test_the_export_sidecar_states_the_span(env) -> None:
    low, high = env.sim.mjm.actuator_ctrlrange.T
    sidecar = drive(env, 1.0, 1.0)
    assert sidecar["formula"].startswith("ctrl[i] = clamp(offset[i] + span[i] * scale * clamp(action[i], -clip, clip)")
    assert sidecar["span"] == pytest.approx(((high - low) / 2).tolist())
    assert sidecar["offset"] == pytest.approx(((high + low) / 2).tolist())


def test_ctrl_range_refuses_an_offset() -> None:
    cfg = env_cfg("shadow-cube")
    cfg.actions = dataclasses.replace(cfg.actions, offset=0.1)
    with pytest.raises(ConfigError, match="actions.ctrl_range: the ctrl ranges set the offsets"):
        make_cpu(cfg, num_envs=2)


def test_a_reset_keeps_the_distal_joints_coupled(env) -> None:
    """The reset draws each joint's offset, then J1 follows J2 as the model's joint equality says."""
    env.reset()
    q = env.sim.qpos[:, env.sim.joint_qposadr]
    follower = env.joint_ids("(FF|MF|RF|LF)J1")
    leader = env.joint_ids("(FF|MF|RF|LF)J2")
    assert len(follower) == 4 and (q[:, leader] - env.sim.default_qpos[env.sim.joint_qposadr[leader]]).abs().max() > 0
    torch.testing.assert_close(q[:, follower], q[:, leader])


def test_a_reached_goal_pays_is_counted_and_moves_on(env) -> None:
    env.reset()
    goal = env.command_term("goal")
    cube_quat = env.sim.qpos[:, 3 + 24 : 7 + 24]  # the cube's free joint comes after the hand's 24 hinges
    goal.command[:2] = cube_quat[:2]  # envs 0 and 1: the cube already sits at its goal
    old = goal.command.clone()
    _, reward, *_, extras = env.step(torch.zeros(env.num_envs, env.action_dim))
    bonus = env.cfg.rewards["goal_reached"].weight
    assert (reward[:2] > 0.8 * bonus).all() and (reward[2:] < 0.2 * bonus).all()
    assert goal.successes.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert not torch.equal(goal.command[:2], old[:2]), "new goals for the envs that reached theirs"
    assert torch.equal(goal.command[2:], old[2:])
    assert torch.equal(extras["episode"]["terms"]["goal_reached"][:2], torch.full((2,), bonus))


def test_goal_keypoints_are_the_cubes_corners_about_its_centre_at_the_goal(env) -> None:
    """At its goal the cube's corners, less its centre, are the goal's corners, corner for corner;
    a quarter turn away they differ by the turn."""
    env.reset()
    goal = env.command_term("goal")
    cube_quat = env.sim.qpos[:, 3 + 24 : 7 + 24]
    quarter = torch.tensor([math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]).expand_as(cube_quat)
    goal.command.copy_(torch.cat((cube_quat[:2], quat_mul(cube_quat[2:], quarter[2:]))))
    corners = object_keypoints(env, CUBE_HOME, CUBE_HALF_SIZE).view(-1, 8, 3)
    about_centre = corners - corners.mean(dim=1, keepdim=True)
    goal_corners = goal_keypoints(env, CUBE_HALF_SIZE).view(-1, 8, 3)
    torch.testing.assert_close(goal_corners[:2], about_centre[:2], atol=1e-6, rtol=0)
    apart = (goal_corners[2:] - about_centre[2:]).norm(dim=-1)  # a quarter turn about z moves every corner
    assert (apart > 0.9 * 2 * CUBE_HALF_SIZE).all()  # each corner moves 2 half sizes


def test_the_rotation_matrices_turn_as_the_quaternions_and_ignore_their_sign(env) -> None:
    """object_rotation's columns are the cube's axes (the quaternion applied to x, y, z), the same
    for q and -q; object_goal_rotation is the cube's rotation times the goal's transposed. On
    random orientations of cube and goal (drawn here: the env's own draws stay as they were),
    which the env is given back."""
    cube_quat, goal = env.sim.qpos[:, 3 + 24 : 7 + 24], env.command_term("goal").command
    saved = cube_quat.clone(), goal.clone()
    draws = torch.nn.functional.normalize(
        torch.randn(2, env.num_envs, 4, generator=torch.Generator().manual_seed(0)), dim=-1
    )
    cube_quat.copy_(draws[0])
    goal.copy_(draws[1])
    try:
        axes, goal_axes = (
            torch.stack([quat_apply(q, e.expand(len(q), 3)) for e in torch.eye(3)], dim=-1) for q in draws
        )
        rotation, relative = object_rotation(env).view(-1, 3, 3), object_goal_rotation(env).view(-1, 3, 3)
        torch.testing.assert_close(rotation, axes, atol=1e-6, rtol=0)
        torch.testing.assert_close(relative, rotation @ goal_axes.transpose(1, 2), atol=1e-5, rtol=0)
        cube_quat.neg_()  # the same orientations
        torch.testing.assert_close(object_rotation(env).view(-1, 3, 3), rotation)
        torch.testing.assert_close(object_goal_rotation(env).view(-1, 3, 3), relative)
    finally:
        cube_quat.copy_(saved[0])
        goal.copy_(saved[1])


def test_the_observations_are_the_same_for_either_sign_of_the_cubes_quaternion(env) -> None:
    """The simulation's quaternion of the cube takes either sign by its history; the policy's and
    the critic's observations must not tell q from -q (the same orientation), as a camera cannot:
    a pixel student could not imitate a teacher that acts on the sign."""
    cube_quat = env.sim.qpos[:, 3 + 24 : 7 + 24]
    before = env._compute_obs(None)
    cube_quat.neg_()
    try:
        after = env._compute_obs(None)
    finally:
        cube_quat.neg_()
    for group in ("policy", "critic"):
        torch.testing.assert_close(after[group], before[group], atol=1e-6, rtol=0)


def _set_goals(env, monkeypatch, reach: list[bool]) -> None:
    """Goals the next step surely reaches (where `reach`) or not: the cube's orientation or half a
    turn from it, with a tolerance of 1 rad (a reset's first step turns the cube by up to 0.4)."""
    goal = env.command_term("goal")
    monkeypatch.setattr(goal, "success_tolerance", 1.0)
    cube = env.sim.qpos[:, 3 + 24 : 7 + 24]
    half_turn = quat_mul(cube, torch.tensor([0.0, 1.0, 0.0, 0.0]).expand_as(cube))
    goal.command.copy_(torch.where(torch.tensor(reach)[:, None], cube, half_turn))


def test_each_goal_has_its_own_clock(env, monkeypatch) -> None:
    env.reset()
    goal = env.command_term("goal")
    limit = round(GOAL_TIME_S / env.step_dt)
    env.episode_length[:] += limit - 2  # every env has held its goal for all but two steps
    _set_goals(env, monkeypatch, [True, False, False, False])
    _, _, terminated, truncated, _ = env.step(torch.zeros(env.num_envs, env.action_dim))
    assert not (terminated | truncated).any()
    assert (env.episode_length - goal.goal_start).tolist() == [0, limit - 1, limit - 1, limit - 1], "a new clock"
    monkeypatch.undo()  # env 0's new goal is not reached in the next step
    _, _, terminated, truncated, extras = env.step(torch.zeros(env.num_envs, env.action_dim))
    assert truncated.tolist() == [False, True, True, True] and not terminated.any(), "time is up, not a failure"
    assert extras["episode"]["length"].tolist()[1:] == [limit] * 3
    assert goal.goal_start.tolist() == [limit - 1, 0, 0, 0]
    assert goal.successes[0] == 1.0


def test_the_last_success_ends_the_episode_as_won(env, monkeypatch) -> None:
    env.reset()
    goal = env.command_term("goal")
    goal.successes[:] = torch.tensor([MAX_SUCCESSES - 1, MAX_SUCCESSES - 2, 0.0, 0.0])
    _set_goals(env, monkeypatch, [True, True, False, False])
    _, _, terminated, truncated, extras = env.step(torch.zeros(env.num_envs, env.action_dim))
    assert truncated.tolist() == [True, False, False, False] and not terminated.any()
    assert extras["episode"]["metrics"]["consecutive_successes"][0] == MAX_SUCCESSES
    assert goal.successes.tolist() == [0.0, MAX_SUCCESSES - 1, 0.0, 0.0]


def test_a_fallen_cube_ends_the_episode_and_reports_its_successes(env) -> None:
    env.reset()
    goal = env.command_term("goal")
    goal.successes[:] = torch.tensor([3.0, 0.0, 0.0, 0.0])
    env.sim.qpos[0, 24:27] = torch.tensor(CUBE_HOME) - torch.tensor([0.0, 0.0, 0.3])  # 30 cm below its place
    _, _, terminated, truncated, extras = env.step(torch.zeros(env.num_envs, env.action_dim))
    assert terminated.tolist() == [True, False, False, False] and not truncated.any()
    assert extras["episode"]["metrics"]["consecutive_successes"][0] == 3.0
    assert goal.successes[0] == 0.0, "the new episode counts from zero"


def test_the_contact_buffers_hold_under_random_actions() -> None:
    env = make_cpu("shadow-cube", num_envs=16)
    assert (env.sim.nconmax, env.sim.njmax) == (64, 256)
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        env.step(2 * torch.rand(env.num_envs, env.action_dim, generator=g) - 1)
    assert int(env.invalid_resets) == 0, env.report_invalid()


def test_rotation_distance_and_random_quaternions() -> None:
    half = math.pi / 8  # a rotation of pi / 4 about z
    about_z = torch.tensor([math.cos(half), 0.0, 0.0, math.sin(half)])
    identity = torch.tensor([1.0, 0.0, 0.0, 0.0])
    assert rotation_distance(about_z, identity).item() == pytest.approx(math.pi / 4, abs=1e-5)
    assert rotation_distance(-about_z, identity).item() == pytest.approx(math.pi / 4, abs=1e-5)  # q and -q
    assert rotation_distance(quat_mul(about_z, about_z), about_z).item() == pytest.approx(math.pi / 4, abs=1e-5)

    class Draws:  # what random_quat needs of an env
        num_envs = 20000
        generator = torch.Generator().manual_seed(0)

        def uniform(self, shape, low, high):
            return low + (high - low) * torch.rand(shape, generator=self.generator)

    q = random_quat(Draws())
    torch.testing.assert_close(q.norm(dim=1), torch.ones(len(q)))
    # Uniform over SO(3): the angle to any fixed rotation has density (1 - cos t) / pi, mean pi/2 + 2/pi.
    angles = rotation_distance(q, identity)
    assert angles.mean().item() == pytest.approx(math.pi / 2 + 2 / math.pi, abs=0.02)


def test_the_vision_variant_sees_the_cube_in_rgb_depth_and_segmentation() -> None:
    env = make_cpu("shadow-cube-vision", num_envs=2)
    assert env.observation_spec["image"] == (64, 64, 5) and "cube_quat" not in env.obs_term_shapes["policy"]
    assert env.obs_term_shapes["policy"]["goal_keypoints"] == (24,)
    image = env.obs["image"]
    rgb, depth, segmentation = image[..., :3], image[..., 3], image[..., 4]
    assert 0.0 <= rgb.min() and rgb.max() <= 1.0
    assert 0.2 < depth.min() and depth.max() <= 0.63  # the palm and cube below the camera, the floor at 0.62 m
    cube = segmentation == 1
    assert set(segmentation.unique().tolist()) == {0.0, 1.0} and (cube.sum((1, 2)) > 300).all()
    assert depth[cube].max() < depth[~cube].max(), "the cube is nearer than the floor"
    # A quarter turn about x shows another face: the colours change, the cube stays where it was.
    quarter = torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])
    env.sim.qpos[0, 27:31] = quat_mul(quarter, env.sim.qpos[0, 27:31])
    turned = env.step(torch.zeros(env.num_envs, env.action_dim))[0]["image"]  # one step: 17 ms
    assert (turned[0, ..., :3] - rgb[0]).abs().sum(-1)[cube[0]].mean() > 0.1
    assert ((turned[0, ..., 4] == 1) & cube[0]).sum() > 0.8 * cube[0].sum()
