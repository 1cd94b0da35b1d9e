"""Reward and metric terms of goal navigation (Isaac Lab's Isaac-Navigation-Flat-Anymal-C-v0),
on a `uniform_pose_2d` command: the goal's xy seen from the base and the heading error. Each
returns (num_envs,) float32."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def goal_distance(env: TaskEnv, command: str) -> torch.Tensor:
    """Meters from the base to the goal, on the ground."""
    return env.command(command)[:, :2].norm(dim=1)


def position_tracking_tanh(env: TaskEnv, command: str, std: float) -> torch.Tensor:
    """1 - tanh(distance / std): 1 at the goal, falling off over about `std` meters."""
    return 1.0 - torch.tanh(goal_distance(env, command) / std)


def heading_error_abs(env: TaskEnv, command: str) -> torch.Tensor:
    """|goal heading - base heading| in rad, wrapped."""
    return env.command(command)[:, 2].abs()


def goal_reached(env: TaskEnv, command: str, distance: float) -> torch.Tensor:
    """1 where the base is within `distance` meters of the goal."""
    return (goal_distance(env, command) < distance).float()
