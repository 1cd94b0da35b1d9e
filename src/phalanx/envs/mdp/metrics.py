"""Metric terms: per-step measurements logged as episode means, outside the reward; each returns
(num_envs,) float32."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.mdp import state

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def lin_vel_xy_error(env: TaskEnv, command: str) -> torch.Tensor:
    """|commanded - actual base xy velocity| in m/s, base frame (Isaac Lab's error_vel_xy)."""
    return (env.command(command)[:, :2] - state.root_lin_vel_b(env)[:, :2]).norm(dim=1)


def ang_vel_z_error(env: TaskEnv, command: str) -> torch.Tensor:
    """|commanded - actual yaw rate| in rad/s (Isaac Lab's error_vel_yaw)."""
    return (env.command(command)[:, 2] - state.root_ang_vel_b(env)[:, 2]).abs()


def speed_to_target(env: TaskEnv, target_pos: tuple[float, float, float]) -> torch.Tensor:
    """The root's horizontal speed toward `target_pos` in m/s (negative away from it): its
    world-frame xy velocity along the unit vector from the root to the target."""
    to_target = state.to_target_xy(env, target_pos)
    velocity = state.root_lin_vel_w(env)[:, :2]
    return (velocity * to_target).sum(dim=1) / to_target.norm(dim=1).clamp(min=1e-9)
