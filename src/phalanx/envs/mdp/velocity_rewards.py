"""Reward terms of legged velocity tracking (legged_gym / Isaac Lab's locomotion velocity task):
each returns (num_envs,) float32, before its weight."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import Term
from phalanx.envs.mdp import state
from phalanx.sensors import ContactTimer

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def track_lin_vel_xy_exp(env: TaskEnv, command: str, std: float) -> torch.Tensor:
    """exp(-|commanded - actual base xy velocity|^2 / std^2), base frame."""
    error = (env.command(command)[:, :2] - state.root_lin_vel_b(env)[:, :2]).square().sum(dim=1)
    return torch.exp(-error / std**2)


def track_ang_vel_z_exp(env: TaskEnv, command: str, std: float) -> torch.Tensor:
    """exp(-(commanded - actual yaw rate)^2 / std^2)."""
    error = (env.command(command)[:, 2] - state.root_ang_vel_b(env)[:, 2]).square()
    return torch.exp(-error / std**2)


def lin_vel_z_l2(env: TaskEnv) -> torch.Tensor:
    """Squared vertical base velocity (base frame)."""
    return state.root_lin_vel_b(env)[:, 2].square()


def ang_vel_xy_l2(env: TaskEnv) -> torch.Tensor:
    """Squared roll and pitch rates."""
    return state.root_ang_vel_b(env)[:, :2].square().sum(dim=1)


def flat_orientation_l2(env: TaskEnv) -> torch.Tensor:
    """Squared xy components of gravity in the base frame (0 when level)."""
    return state.projected_gravity_b(env)[:, :2].square().sum(dim=1)


def joint_torques_l2(env: TaskEnv) -> torch.Tensor:
    """Squared actuator forces (N m for the robots' hinge actuators), summed."""
    return env.sim.actuator_force.square().sum(dim=1)


def joint_acc_l2(env: TaskEnv) -> torch.Tensor:
    """Squared accelerations of the 1-dof joints, summed."""
    return env.sim.qacc[:, env.sim.joint_dofadr].square().sum(dim=1)


def touch_count_above(env: TaskEnv, sensors: list[str], threshold: float) -> torch.Tensor:
    """How many of the named touch sensors read more than `threshold` N (undesired contacts)."""
    return (env.sim.sensordata[:, env.sim.sensor_ids(sensors)] > threshold).sum(dim=1).float()


class action_rate_l2(Term):  # noqa: N801 (terms are named like functions)
    """Squared change of the action since the last step; the action before an episode's first
    step counts as 0 (Isaac Lab's convention)."""

    def __init__(self, env: TaskEnv):
        self.previous = torch.zeros(env.num_envs, env.action_dim, device=env.device)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        rate = (env.action - self.previous).square().sum(dim=1)
        self.previous.copy_(env.action)
        return rate

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.previous.masked_fill_(mask[:, None], 0.0)


class feet_air_time(Term):  # noqa: N801 (terms are named like functions)
    """Sum over feet of (last air time - threshold) at the step each foot lands, while the
    commanded xy speed exceeds 0.1 m/s: rewards steps longer than `threshold` seconds. Owns the
    feet's `ContactTimer`, updated once per env step from the touch sensors."""

    def __init__(self, env: TaskEnv, sensors: list[str], command: str, threshold: float, contact_force: float = 1.0):
        self.ids = env.sim.sensor_ids(sensors)
        self.command, self.threshold = command, threshold
        self.timer = ContactTimer(env.num_envs, len(sensors), env.device, threshold=contact_force)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        self.timer.update(env.sim.sensordata[:, self.ids], env.step_dt)
        landed = self.timer.first_contact(env.step_dt)
        reward = ((self.timer.last_air_time - self.threshold) * landed).sum(dim=1)
        return reward * (env.command(self.command)[:, :2].norm(dim=1) > 0.1)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.timer.reset(mask)
