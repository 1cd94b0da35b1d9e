"""Termination terms: each returns (num_envs,) bool."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from phalanx.envs.mdp import state

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def time_out(env: TaskEnv) -> torch.Tensor:
    """The episode reached `max_episode_length` env steps."""
    return env.episode_length >= env.max_episode_length


def root_height_below(env: TaskEnv, minimum_height: float) -> torch.Tensor:
    """The root fell below `minimum_height` (m)."""
    return state.root_pos_w(env)[:, 2] < minimum_height


def joint_pos_out_of_bounds(env: TaskEnv, joints: str, bound: float) -> torch.Tensor:
    """Any joint matching `joints` is further than `bound` from 0."""
    return (state.joint_pos(env)[:, env.joint_ids(joints)].abs() > bound).any(dim=1)


def joint_angle_past(env: TaskEnv, joints: str, degrees: float) -> torch.Tensor:
    """Any hinge matching `joints` is past `degrees` from 0."""
    return joint_pos_out_of_bounds(env, joints, math.radians(degrees))


def touch_above(env: TaskEnv, sensors: list[str], threshold: float) -> torch.Tensor:
    """Any of the named touch sensors reads more than `threshold` N (e.g. the base hit the ground)."""
    return (env.sim.sensordata[:, env.sim.sensor_ids(sensors)] > threshold).any(dim=1)
