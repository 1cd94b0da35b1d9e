"""Command terms: what the policy is asked to do, resampled per env (see `CommandTermCfg`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import CommandTerm

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


class uniform_velocity(CommandTerm):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3) base velocity command in the base frame: forward and lateral speed (m/s) and
    yaw rate (rad/s), each uniform in its range; a fraction `standing` of the resampled envs
    gets zero (stand still), as Isaac Lab's UniformVelocityCommand."""

    def __init__(
        self,
        env: TaskEnv,
        lin_vel_x: tuple[float, float],
        lin_vel_y: tuple[float, float],
        ang_vel_z: tuple[float, float],
        standing: float = 0.0,
    ):
        ranges = torch.tensor([lin_vel_x, lin_vel_y, ang_vel_z], dtype=torch.float32, device=env.device)
        self.low, self.span = ranges[:, 0], ranges[:, 1] - ranges[:, 0]
        self.standing = standing
        self.command = torch.zeros(env.num_envs, 3, device=env.device)

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        draw = self.low + self.span * torch.rand(env.num_envs, 3, device=env.device, generator=env.rng)
        stand = torch.rand(env.num_envs, device=env.device, generator=env.rng) < self.standing
        draw = draw.masked_fill(stand[:, None], 0.0)
        self.command.copy_(torch.where(mask[:, None], draw, self.command))
