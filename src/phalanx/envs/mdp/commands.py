"""Command terms: what the policy is asked to do, resampled per env (see `CommandTermCfg`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import CommandTerm
from phalanx.envs.markers import Marker, arrow, yaw_quat
from phalanx.envs.mdp import state
from phalanx.envs.mdp.math import wrap_to_pi

ABOVE = 0.5
"""Metres above a robot's base that its command arrows start."""
COMMANDED, MOVING = (40, 190, 60), (40, 110, 230)
"""Colors of a commanded velocity's arrow and of the base's own velocity."""

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


class uniform_velocity(CommandTerm):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3) base velocity command in the base frame: forward and lateral speed (m/s) and
    yaw rate (rad/s), each uniform in its range; a fraction `standing` of the resampled envs
    gets zero (stand still), as Isaac Lab's UniformVelocityCommand.

    With a `heading` range, a fraction `heading_envs` of the resampled envs is given a target
    heading (world yaw, uniform in the range) instead of a yaw rate: every env step their yaw-rate
    command becomes `heading_stiffness` x the heading error, clamped to the `ang_vel_z` range
    (Isaac Lab's heading command)."""

    def __init__(
        self,
        env: TaskEnv,
        lin_vel_x: tuple[float, float],
        lin_vel_y: tuple[float, float],
        ang_vel_z: tuple[float, float],
        standing: float = 0.0,
        heading: tuple[float, float] | None = None,
        heading_envs: float = 1.0,
        heading_stiffness: float = 0.5,
    ):
        # (3, 2) low and high of each component; a curriculum may change them during training
        self.ranges = torch.tensor([lin_vel_x, lin_vel_y, ang_vel_z], dtype=torch.float32, device=env.device)
        self.standing = standing
        self.heading = heading
        self.heading_envs = heading_envs
        self.heading_stiffness = heading_stiffness
        n = env.num_envs
        self.command = torch.zeros(n, 3, device=env.device)
        self.is_standing = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.is_heading = torch.zeros(n, dtype=torch.bool, device=env.device)
        self.heading_target = torch.zeros(n, device=env.device)

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        n = env.num_envs
        draw = env.uniform((n, 3), self.ranges[:, 0], self.ranges[:, 1])
        self.command.copy_(torch.where(mask[:, None], draw, self.command))
        stand = env.uniform((n,), 0.0, 1.0) < self.standing
        self.is_standing.copy_(torch.where(mask, stand, self.is_standing))
        if self.heading is not None:
            target = env.uniform((n,), *self.heading)
            self.heading_target.copy_(torch.where(mask, target, self.heading_target))
            use = env.uniform((n,), 0.0, 1.0) < self.heading_envs
            self.is_heading.copy_(torch.where(mask, use, self.is_heading))

    def update(self, env: TaskEnv) -> None:
        if self.heading is not None:
            error = wrap_to_pi(self.heading_target - state.yaw_w(env))
            yaw_rate = torch.clamp(self.heading_stiffness * error, self.ranges[2, 0], self.ranges[2, 1])
            self.command[:, 2] = torch.where(self.is_heading, yaw_rate, self.command[:, 2])
        self.command.masked_fill_(self.is_standing[:, None], 0.0)

    def markers(self, env: TaskEnv) -> dict[str, Marker]:
        """The commanded planar velocity (green) and the base's own (blue), as arrows over it."""
        start = state.root_pos_w(env) + env.constant((0.0, 0.0, ABOVE))
        yaw = state.yaw_w(env)
        cos, sin = torch.cos(yaw), torch.sin(yaw)
        vx, vy = self.command[:, 0], self.command[:, 1]
        commanded = torch.stack((cos * vx - sin * vy, sin * vx + cos * vy), dim=-1)
        return {
            "commanded": arrow(start, commanded, 0.08, COMMANDED),
            "moving": arrow(start, state.root_lin_vel_w(env)[:, :2], 0.05, MOVING),
        }


class held_command(CommandTerm):  # noqa: N801 (terms are named like functions)
    """(num_envs, dim) a command that only its writer changes: the env's actions, when they
    command a low-level policy (`LowLevelPolicyCfg`). A reset zeroes it; timers do nothing."""

    def __init__(self, env: TaskEnv, dim: int):
        self.command = torch.zeros(env.num_envs, dim, device=env.device)

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.command.masked_fill_(mask[:, None], 0.0)


class uniform_pose_2d(CommandTerm):  # noqa: N801 (terms are named like functions)
    """A goal on the ground: at resampling, a position `pos_x` x `pos_y` (uniform, meters) from
    where the base stands and a heading (uniform in `heading`, world yaw). `command` (num_envs, 3)
    is the goal seen from the base, updated every step: its xy in the base's yaw frame and the
    heading error wrapped to (-pi, pi] (Isaac Lab's UniformPose2dCommand, without z)."""

    def __init__(
        self,
        env: TaskEnv,
        pos_x: tuple[float, float],
        pos_y: tuple[float, float],
        heading: tuple[float, float] = (-math.pi, math.pi),
    ):
        self.ranges = torch.tensor([pos_x, pos_y, heading], dtype=torch.float32, device=env.device)
        self.goal_w = torch.zeros(env.num_envs, 3, device=env.device)  # x, y, heading in the world
        self.command = torch.zeros(env.num_envs, 3, device=env.device)

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        draw = env.uniform((env.num_envs, 3), self.ranges[:, 0], self.ranges[:, 1])
        draw[:, :2] += state.root_pos_w(env)[:, :2]
        self.goal_w.copy_(torch.where(mask[:, None], draw, self.goal_w))

    def update(self, env: TaskEnv) -> None:
        yaw = state.yaw_w(env)
        dx, dy = (self.goal_w[:, :2] - state.root_pos_w(env)[:, :2]).unbind(dim=1)
        cos, sin = torch.cos(yaw), torch.sin(yaw)
        self.command[:, 0] = cos * dx + sin * dy
        self.command[:, 1] = -sin * dx + cos * dy
        self.command[:, 2] = wrap_to_pi(self.goal_w[:, 2] - yaw)

    def markers(self, env: TaskEnv) -> dict[str, Marker]:
        """The goal: a sphere at the base's height over it, an arrow along its heading."""
        at = torch.cat((self.goal_w[:, :2], state.root_pos_w(env)[:, 2:]), dim=1)
        heading = torch.stack((torch.cos(self.goal_w[:, 2]), torch.sin(self.goal_w[:, 2])), dim=-1) * 0.5
        sphere = Marker("sphere", at, yaw_quat(torch.zeros_like(at[:, 0])), torch.full_like(at, 0.12), COMMANDED)
        return {"goal": sphere, "heading": arrow(at, heading, 0.06, COMMANDED)}
