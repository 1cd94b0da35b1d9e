"""Reward and metric terms of goal navigation (Isaac Lab's Isaac-Navigation-Flat-Anymal-C-v0)
toward the goal of a `uniform_pose_2d` command, measured from the state after the physics (the
command itself is what the policy observed, one env step earlier). Each returns (num_envs,)
float32."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.mdp import state
from phalanx.envs.mdp.math import wrap_to_pi

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def goal_distance(env: TaskEnv, command: str) -> torch.Tensor:
    """Meters from the base to the goal, on the ground."""
    goal = env.command_term(command).goal_w
    return (goal[:, :2] - state.root_pos_w(env)[:, :2]).norm(dim=1)


def position_tracking_tanh(env: TaskEnv, command: str, std: float) -> torch.Tensor:
    """1 - tanh(distance / std): 1 at the goal, falling off over about `std` meters."""
    return 1.0 - torch.tanh(goal_distance(env, command) / std)


def heading_error_abs(env: TaskEnv, command: str) -> torch.Tensor:
    """|goal heading - base heading| in rad, wrapped."""
    return wrap_to_pi(env.command_term(command).goal_w[:, 2] - state.yaw_w(env)).abs()


def goal_reached(env: TaskEnv, command: str, distance: float) -> torch.Tensor:
    """1 where the base is within `distance` meters of the goal."""
    return (goal_distance(env, command) < distance).float()
