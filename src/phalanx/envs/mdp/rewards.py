"""Reward terms: each returns (num_envs,) float32, before its weight."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import Term
from phalanx.envs.mdp import state
from phalanx.envs.mdp.observations import _heading_proj

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def is_alive(env: TaskEnv) -> torch.Tensor:
    """1 for envs that did not terminate this step."""
    return (~env.terminated).float()


def is_terminated(env: TaskEnv) -> torch.Tensor:
    """1 for envs that terminated this step (time-outs excluded)."""
    return env.terminated.float()


def joint_pos_l2(env: TaskEnv, joints: str) -> torch.Tensor:
    """Sum of squared positions of the joints matching `joints`."""
    return state.joint_pos(env)[:, env.joint_columns(joints)].square().sum(dim=1)


def joint_vel_l1(env: TaskEnv, joints: str) -> torch.Tensor:
    """Sum of absolute velocities of the joints matching `joints`."""
    return state.joint_vel(env)[:, env.joint_columns(joints)].abs().sum(dim=1)


def joint_vel_l2(env: TaskEnv, joints: str = ".*") -> torch.Tensor:
    """Sum of squared velocities of the joints matching `joints`."""
    return state.joint_vel(env)[:, env.joint_columns(joints)].square().sum(dim=1)


def action_l2(env: TaskEnv) -> torch.Tensor:
    """Sum of squared actions."""
    return env.action.square().sum(dim=1)


def upright_bonus(env: TaskEnv, threshold: float) -> torch.Tensor:
    """1 where the body z axis is within acos(threshold) of world up."""
    return (-state.projected_gravity_b(env)[:, 2] > threshold).float()


def move_to_target_bonus(env: TaskEnv, threshold: float, target_pos: tuple[float, float, float]) -> torch.Tensor:
    """1 when heading toward the target (heading cosine > threshold), else cosine / threshold."""
    proj = _heading_proj(env, target_pos)
    return torch.where(proj > threshold, torch.ones_like(proj), proj / threshold)


def _gear_scaled(env: TaskEnv) -> torch.Tensor:
    return env.joints.gear / env.joints.gear.max()


def power_consumption(env: TaskEnv) -> torch.Tensor:
    """Sum over actuated joints of |action * joint velocity * gear / max gear|."""
    vel = state.joint_vel(env)[:, env.joints.joint_ids]
    return (env.action * vel * _gear_scaled(env)).abs().sum(dim=1)


def joint_pos_limits_penalty_ratio(env: TaskEnv, threshold: float) -> torch.Tensor:
    """Sum over actuated joints of how far past `threshold` of its half-range each joint is
    (0 inside, 1 at the limit), weighted by gear / max gear."""
    ids = env.joints.joint_ids
    low, high = env.sim.joint_range[ids, 0], env.sim.joint_range[ids, 1]
    scaled = (2.0 * (state.joint_pos(env)[:, ids] - 0.5 * (low + high)) / (high - low)).abs()
    violation = torch.where(scaled > threshold, (scaled - threshold) / (1.0 - threshold), 0.0)
    return (violation * _gear_scaled(env)).sum(dim=1)


class progress(Term):  # noqa: N801 (terms are named like functions)
    """Potential-based progress toward a target: (d_prev - d_now) / env dt, with d the
    horizontal distance from the root to the target (m/s toward the target)."""

    def __init__(self, env: TaskEnv, target_pos: tuple[float, float, float]):
        self.target_pos = target_pos
        self.potential = self._potential(env)

    def _potential(self, env: TaskEnv) -> torch.Tensor:
        return -state.to_target_xy(env, self.target_pos).norm(dim=1) / env.step_dt

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        potential = self._potential(env)
        reward = potential - self.potential
        self.potential.copy_(potential)
        return reward

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.potential.copy_(torch.where(mask, self._potential(env), self.potential))
