"""The Franka arm's tasks: differential IK (damped least squares on MuJoCo Warp's Jacobian)
reaches reachable targets and stays within the joint ranges on unreachable ones; the pose
command and its errors (MuJoCo Warp, CPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from helpers import make_cpu
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import GripperCfg
from phalanx.envs.mdp import end_effector
from phalanx.envs.mdp.math import matrix_from_quat
from phalanx.tasks.franka.mdp.differential_ik import damped_least_squares
from phalanx.training.export import drive
from phalanx.training.registry import env_cfg


def test_damped_least_squares_is_the_pseudo_inverse_step_when_undamped_and_bounded_when_damped() -> None:
    g = torch.Generator().manual_seed(0)
    jacobian = torch.randn(5, 6, 7, generator=g, dtype=torch.float64)
    error = torch.randn(5, 6, generator=g, dtype=torch.float64)
    step = damped_least_squares(jacobian, error, damping=1e-6)
    expected = np.linalg.pinv(jacobian.numpy()) @ error.numpy()[..., None]
    np.testing.assert_allclose(step.numpy(), expected[..., 0], atol=1e-8)
    # Out of reach: a huge error gives a step of at most |e| / (2 damping), not a huge one.
    far = damped_least_squares(jacobian, 1e3 * error, damping=1.0)
    assert (far.norm(dim=1) <= 1e3 * error.norm(dim=1) / 2.0 + 1e-9).all()


def _ik_env(num_envs: int):
    cfg = env_cfg("franka-reach-ik")
    cfg.events = {}  # start at the home pose
    return make_cpu(cfg, num_envs=num_envs)


def _follow(env, targets: torch.Tensor, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Commands the end effector toward `targets` (num_envs, 3, world) by position deltas as large
    as the actions allow, orientation held; returns the distances left after every step (steps,
    num_envs) and the arm's joint positions after every step (steps, num_envs, 7)."""
    controller = env.low_level
    site = env.sim.site_names.index("ee")
    scale = controller.command_layout[0][2]
    distances, joints = [], []
    for _ in range(steps):
        action = torch.zeros(env.num_envs, env.action_dim)
        action[:, :3] = ((targets - env.sim.site_xpos[:, site]) / scale).clamp(-1.0, 1.0)
        env.step(action)
        distances.append((targets - env.sim.site_xpos[:, site]).norm(dim=1))
        joints.append(env.sim.qpos[:, controller._qpos].clone())
    return torch.stack(distances), torch.stack(joints)


def test_ik_reaches_reachable_targets_and_stays_within_the_joint_ranges_on_unreachable_ones() -> None:
    env = _ik_env(3)
    env.reset()
    env.step(torch.zeros(3, env.action_dim))  # poses are read after a step
    start = env.sim.site_xpos[:, env.sim.site_names.index("ee")].clone()
    targets = start + torch.tensor([[0.1, -0.1, -0.1], [-0.05, 0.15, 0.05], [2.0, 0.0, 0.0]])
    distances, joints = _follow(env, targets, steps=90)  # 3 s
    assert torch.isfinite(joints).all()
    assert (distances[-1, :2] < 0.005).all(), distances[-1]
    # 2 m ahead is out of reach (the arm spans under 1 m): it stretches toward it and stops.
    reach = (
        env.sim.site_xpos[2, env.sim.site_names.index("ee")] - env.sim.xpos[2, env.sim.body_names.index("panda_link0")]
    )
    assert distances[-1, 2] < distances[0, 2] - 0.2 and reach.norm() < 1.2, (distances[:, 2], reach)
    low, high = env.low_level._range.unbind(1)
    assert ((joints >= low - 0.02) & (joints <= high + 0.02)).all(), "within the joint ranges"


def test_the_pose_command_and_its_errors() -> None:
    q = end_effector.quat_from_euler_xyz(torch.tensor([0.3]), torch.tensor([math.pi]), torch.tensor([-1.0]))
    rotation = matrix_from_quat(q)[0]
    assert torch.allclose(rotation @ rotation.T, torch.eye(3), atol=1e-6)
    assert torch.allclose(rotation[:, 2] @ torch.tensor([0.0, 0.0, 1.0]), torch.tensor(-math.cos(0.3)), atol=1e-6)
    turn = matrix_from_quat(torch.tensor([math.cos(0.35), 0.0, math.sin(0.35), 0.0]))
    assert torch.isclose(end_effector.rotation_angle(rotation, rotation @ turn), torch.tensor(0.7), atol=1e-5)

    env = make_cpu("franka-reach", num_envs=4)
    env.reset()
    env.step(torch.zeros(4, env.action_dim))
    term = env.command_term("ee_pose")
    position, orientation = term.goal_w(env)
    x, y, z = position.unbind(1)
    assert ((0.35 <= x) & (x <= 0.65) & (y.abs() <= 0.2) & (0.15 <= z) & (z <= 0.5)).all(), position
    assert torch.allclose(orientation[:, :, 2], torch.tensor([0.0, 0.0, -1.0]).expand(4, 3), atol=1e-5), "down"
    site = env.sim.site_names.index("ee")
    error = end_effector.site_position_error(env, "ee")
    assert torch.allclose(error, (env.sim.site_xpos[:, site] - position).norm(dim=1))


def test_the_goal_marker_sits_at_each_drawn_pose_and_shows_in_the_video() -> None:
    """franka-reach's "goal" mocap body follows each env's goal (world pose), and the recorder
    copies it into its frames: moved away, the same state renders another frame."""
    from phalanx.sim.video import EnvRecorder

    env = make_cpu("franka-reach", num_envs=4)
    env.reset()
    env.step(torch.zeros(4, env.action_dim))
    term, marker = env.command_term("ee_pose"), env.sim.mocap_index("goal")
    position, rotation = term.goal_w(env)
    assert torch.allclose(env.sim.mocap_pos[:, marker], position, atol=1e-5)
    assert torch.allclose(matrix_from_quat(env.sim.mocap_quat[:, marker]), rotation, atol=1e-5)
    before = env.sim.mocap_pos[:, marker].clone()
    term.resample(env, torch.tensor([False, True, False, False]))
    term.update(env)
    position, _ = term.goal_w(env)
    after = env.sim.mocap_pos[:, marker]
    assert torch.allclose(after, position, atol=1e-5) and torch.equal(after[[0, 2, 3]], before[[0, 2, 3]])
    assert not torch.allclose(after[1], before[1])
    with pytest.raises(ValueError, match="not a mocap body"):
        env.sim.mocap_index("panda_link0")

    recorder = EnvRecorder(env.sim, env_id=1, width=160, height=120)
    recorder.capture()
    assert np.allclose(recorder.data.mocap_pos.numpy()[0, marker], position[1].numpy(), atol=1e-6)
    env.sim.mocap_pos[1, marker] = torch.tensor([0.5, 0.0, -1.0])  # under the table
    recorder.capture()
    assert not np.array_equal(recorder.frames[0], recorder.frames[1]), "the marker is drawn"


def test_the_pose_error_observation_points_from_the_site_to_the_goal() -> None:
    """Turning the site by the observed rotation vector and moving it by the observed offset (base
    frame; the base is the world here) lands on the commanded pose."""
    env = make_cpu("franka-reach", num_envs=4)
    env.reset()
    env.step(torch.zeros(4, env.action_dim))
    error = end_effector.site_pose_error_b(env, "ee")
    position, rotation = env.command_term("ee_pose").goal_w(env)
    site = env.sim.site_names.index("ee")
    assert torch.allclose(env.sim.site_xpos[:, site] + error[:, :3], position, atol=1e-5)
    angle = error[:, 3:].norm(dim=1, keepdim=True)
    axis = error[:, 3:] / angle
    half = torch.cat((torch.cos(angle / 2), axis * torch.sin(angle / 2)), dim=1)
    turned = matrix_from_quat(half) @ env.sim.site_xmat[:, site]
    assert torch.allclose(turned, rotation, atol=1e-4)


def test_a_gripper_action_after_the_ik_command_opens_and_closes_by_its_sign() -> None:
    cfg = env_cfg("franka-reach-ik")
    cfg.events = {}
    cfg.actions.gripper = GripperCfg("gripper", open=0.04, closed=0.0)
    env = make_cpu(cfg, num_envs=2)
    assert env.action_dim == 7
    env.reset()
    fingers = env.sim.joint_qposadr[env.joint_ids("panda_finger_joint[12]")]
    action = torch.zeros(2, 7)
    action[:, 6] = torch.tensor([-1.0, 1.0])  # env 0 closes, env 1 opens
    for _ in range(20):  # 0.6 s
        env.step(action)
    opening = env.sim.qpos[:, fingers]
    assert (opening[0] < 0.002).all() and (opening[1] > 0.038).all(), opening


@pytest.mark.parametrize(
    ("actuator", "driven", "message"),
    [
        ("hand", "panda_joint[1-7]", r"env.actions.gripper.actuator: 'hand' is not an actuator of \["),
        ("gripper", ".*", "env.actions.gripper.actuator: 'gripper' is driven by env.actions.actuators as well"),
    ],
)
def test_a_gripper_that_is_no_actuator_or_also_a_joint_target_is_refused(actuator, driven, message) -> None:
    cfg = env_cfg("franka-reach")
    cfg.actions.actuators, cfg.actions.use_default_offset = driven, False
    cfg.actions.gripper = GripperCfg(actuator, open=0.04, closed=0.0)
    with pytest.raises(ConfigError, match=message):
        make_cpu(cfg, num_envs=1)


def test_a_gripper_beside_a_low_level_policy_is_refused() -> None:
    cfg = env_cfg("anymal-nav")
    cfg.actions.gripper = GripperCfg("gripper", open=0.04, closed=0.0)
    with pytest.raises(ConfigError, match="env.actions.gripper: not supported with actions.low_level"):
        cfg.check()


def test_ik_refuses_arm_joints_without_an_actuator() -> None:
    cfg = env_cfg("franka-reach-ik")
    cfg.actuators = cfg.actuators[:1]  # the shoulder's only
    undriven = r"joints \['panda_joint5', 'panda_joint6', 'panda_joint7'\] have no actuator"
    with pytest.raises(ConfigError, match=undriven):
        make_cpu(cfg, num_envs=1)


def test_relative_joint_targets_start_from_the_joints_positions_and_hold_them_at_zero() -> None:
    cfg = env_cfg("franka-reach")
    cfg.actions.relative, cfg.actions.use_default_offset, cfg.actions.scale = True, False, 0.1
    env = make_cpu(cfg, num_envs=2)
    env.reset()
    joints = env.joints.relative_qposadr
    before = env.sim.qpos[:, joints].clone()
    action = torch.tensor([[1.0] * 7, [0.0] * 7])
    env.step(action)
    ctrl = env.sim.ctrl[:, env.joints.actuator_ids]
    torch.testing.assert_close(ctrl, before + 0.1 * action)  # the step's targets: where it started + scale x action
    moved = env.sim.qpos[:, joints] - before
    assert ((moved[0] > 0) & (moved[0] < 0.1)).all(), moved[0]  # every joint heads for its target
    for _ in range(20):
        env.step(torch.zeros(2, 7))  # zero actions: each step's target is where the joints are
    held = env.sim.qpos[1, joints] - before[1]
    assert held.abs().max() < 2e-3, held  # the gravity-compensated arm stays put
    sidecar = drive(env, 0.1, None)
    assert sidecar["relative"] and sidecar["offset"] is None
    relative = "ctrl[i] = clamp(actuator_gear[i] * joint_pos[i] + span[i] * scale * clamp(action[i], -clip, clip), "
    assert sidecar["formula"].startswith(relative)


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("franka-reach", "actions.relative: the joint positions are the offsets"),  # beside use_default_offset
        ("franka-reach-ik", "env.actions.relative: joint targets only, not with actions.controller"),
    ],
)
def test_relative_joint_targets_refuse_offsets_and_controllers(task: str, message: str) -> None:
    cfg = env_cfg(task)
    cfg.actions.relative = True
    with pytest.raises(ConfigError, match=message):
        make_cpu(cfg, num_envs=1)
