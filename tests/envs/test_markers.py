"""The markers a task's commands show in the viewer, against values worked out by hand: anymal-nav's
goal, the franka arms' goal pose, the shadow hand's goal orientation."""

from __future__ import annotations

import math

import torch

from helpers import make_cpu
from phalanx.envs.markers import yaw_quat
from phalanx.envs.mdp import state
from phalanx.viewer.markers import device_markers


def _stepped(task: str):
    """`task`'s env after one step at zero actions: its bodies' world poses are computed."""
    env = make_cpu(task, num_envs=2)
    env.reset()
    env.step(torch.zeros(env.num_envs, env.action_dim))
    return env


def test_the_navigation_goal_is_a_sphere_at_the_base_height_with_its_heading() -> None:
    env = _stepped("anymal-nav")
    term = env.command_term("pose_command")
    term.goal_w[:] = torch.tensor([[3.0, 4.0, math.pi / 2], [-1.0, 0.5, 0.0]])
    markers = term.markers(env)
    assert set(markers) == {"goal", "heading"}
    goal, heading = markers["goal"], markers["heading"]
    base_z = env.sim.qpos[:, 2]
    torch.testing.assert_close(goal.pos, torch.stack((torch.tensor([3.0, -1.0]), torch.tensor([4.0, 0.5]), base_z), 1))
    assert goal.shape == "sphere" and heading.shape == "arrow"
    torch.testing.assert_close(heading.pos, goal.pos)
    torch.testing.assert_close(heading.quat, yaw_quat(torch.tensor([math.pi / 2, 0.0])), atol=1e-6, rtol=0)
    torch.testing.assert_close(heading.scale[:, 0], torch.full((2,), 0.5))  # half a meter along the heading


def test_the_lift_goal_is_a_frame_at_the_commanded_pose_in_the_world() -> None:
    """franka-lift's goal (no mocap body shows it): the command's position and orientation, which
    are in the arm base's frame, carried into the world by the base's pose."""
    env = _stepped("franka-lift")
    term = env.command_term("object_pose")
    quarter = [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]  # 90 degrees about z
    term.command[:] = torch.tensor([[0.5, 0.1, 0.3, *quarter], [0.4, -0.2, 0.25, 1.0, 0.0, 0.0, 0.0]])
    (goal,) = term.markers(env).values()
    base_pos, base_quat = env.sim.xpos[:, term.base], env.sim.xquat[:, term.base]
    torch.testing.assert_close(base_quat, torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 2))  # the arm stands unrotated
    torch.testing.assert_close(goal.pos, base_pos + term.command[:, :3])
    torch.testing.assert_close(goal.quat, term.command[:, 3:])
    assert goal.shape == "axes"


def test_the_reach_goal_is_shown_by_its_mocap_body_not_a_marker() -> None:
    env = _stepped("franka-reach")
    term = env.command_term("ee_pose")
    assert term.markers(env) == {}
    term.command[:, :3] = torch.tensor([0.5, 0.1, 0.3])
    term.update(env)
    base_pos = env.sim.xpos[:, term.base]
    torch.testing.assert_close(env.sim.mocap_pos[:, term.marker], base_pos + torch.tensor([0.5, 0.1, 0.3]))


def test_the_cube_goal_is_a_frame_beside_the_cube_in_the_goal_orientation() -> None:
    env = _stepped("shadow-cube")
    term = env.command_term("goal")
    half_turn_x = torch.tensor([0.0, 1.0, 0.0, 0.0])
    term.command[:] = half_turn_x
    (goal,) = term.markers(env).values()
    cube = state.root_pos_w(env)  # the position of the cube's free joint, the model's only free joint
    torch.testing.assert_close(goal.pos, cube + torch.tensor([0.0, 0.15, 0.0]))
    torch.testing.assert_close(goal.quat, half_turn_x.expand(2, 4))
    assert goal.shape == "axes"


def test_markers_copy_nothing_from_the_host_after_their_first_call(monkeypatch) -> None:
    """The training page reads every command's markers after each env step: a tensor made from
    host values there is a copy from pageable memory, which waits for the GPU's queue."""
    for task in ("anymal-flat", "anymal-nav", "franka-lift", "shadow-cube"):
        env = _stepped(task)
        device_markers(env, 2)  # the first call may make its constants
        with monkeypatch.context() as patch:
            patch.setattr(torch, "tensor", _refused)
            assert device_markers(env, 2), task


def _refused(*args, **kwargs):
    raise AssertionError(f"torch.tensor{args} made while drawing markers")
