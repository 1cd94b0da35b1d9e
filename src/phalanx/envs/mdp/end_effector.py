"""Terms for an arm's end effector (Isaac Lab's reach task in spirit): a pose command in the frame
of the arm's base, and the errors of a site's position and orientation from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import CommandTerm
from phalanx.envs.markers import Marker
from phalanx.envs.mdp.math import matrix_from_quat, quat_mul

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def quat_from_euler_xyz(roll: torch.Tensor, pitch: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
    """(..., 4) quaternions (w, x, y, z) of rotations about the fixed x, then y, then z axes."""

    def about(axis: int, angle: torch.Tensor) -> torch.Tensor:
        q = torch.zeros(*angle.shape, 4, dtype=angle.dtype, device=angle.device)
        q[..., 0], q[..., 1 + axis] = torch.cos(angle / 2), torch.sin(angle / 2)
        return q

    return quat_mul(about(2, yaw), quat_mul(about(1, pitch), about(0, roll)))


def _sin_cos(r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """sin(angle) x axis (..., 3) and cos(angle) (...) of rotation matrices `r` (..., 3, 3)."""
    sin = 0.5 * torch.stack((r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]), -1)
    return sin, 0.5 * (r.diagonal(dim1=-2, dim2=-1).sum(-1) - 1.0)


def rotation_angle(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(...) the angle (rad, in [0, pi]) between rotation matrices (..., 3, 3) `a` and `b`."""
    sin, cos = _sin_cos(a.mT @ b)
    return torch.atan2(sin.norm(dim=-1), cos)


def rotation_vector(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(..., 3) the rotation vector (axis x angle, rad) of the rotation that turns `a` into `b`
    (rotation matrices (..., 3, 3)), in `a`'s frame; its axis is arbitrary at exactly pi."""
    sin, cos = _sin_cos(a.mT @ b)
    norm = sin.norm(dim=-1, keepdim=True)
    return sin / norm.clamp_min(1e-9) * torch.atan2(norm, cos[..., None])


class uniform_pose(CommandTerm):  # noqa: N801 (terms are named like functions)
    """(num_envs, 7) a pose in the frame of the body `base`: a position uniform in `pos_x` x
    `pos_y` x `pos_z` (m) and an orientation of `roll`, `pitch`, `yaw` each uniform in its range
    (rad; about the fixed x, y, z axes), as a quaternion (w, x, y, z) (Isaac Lab's
    UniformPoseCommand). `goal_w` gives it in the world. With `marker`, the mocap body of that name
    follows every env's goal in the world (`update`, every env step): videos show the goal."""

    def __init__(
        self,
        env: TaskEnv,
        base: str,
        pos_x: tuple[float, float],
        pos_y: tuple[float, float],
        pos_z: tuple[float, float],
        roll: tuple[float, float] = (0.0, 0.0),
        pitch: tuple[float, float] = (0.0, 0.0),
        yaw: tuple[float, float] = (0.0, 0.0),
        marker: str | None = None,
    ):
        self.base = env.sim.body_names.index(base)
        self.marker = None if marker is None else env.sim.mocap_index(marker)
        self.ranges = torch.tensor([pos_x, pos_y, pos_z, roll, pitch, yaw], dtype=torch.float32, device=env.device)
        self.command = torch.zeros(env.num_envs, 7, device=env.device)
        self.command[:, 3] = 1.0

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        draw = env.uniform((env.num_envs, 6), self.ranges[:, 0], self.ranges[:, 1])
        pose = torch.cat((draw[:, :3], quat_from_euler_xyz(*draw[:, 3:].unbind(1))), dim=1)
        self.command.copy_(torch.where(mask[:, None], pose, self.command))

    def update(self, env: TaskEnv) -> None:
        if self.marker is not None:
            env.sim.mocap_pos[:, self.marker], env.sim.mocap_quat[:, self.marker] = self._goal_pose_w(env)

    def markers(self, env: TaskEnv) -> dict[str, Marker]:
        """The commanded pose as a frame of axes (none where a mocap `marker` body shows it)."""
        if self.marker is not None:
            return {}
        position, quat = self._goal_pose_w(env)
        return {"goal": Marker("axes", position, quat, torch.full_like(position, 0.1), (240, 190, 30))}

    def _goal_pose_w(self, env: TaskEnv) -> tuple[torch.Tensor, torch.Tensor]:
        """(num_envs, 3) the commanded position and (num_envs, 4) orientation (w, x, y, z) in the world."""
        return self.goal_w(env)[0], quat_mul(env.sim.xquat[:, self.base], self.command[:, 3:])

    def goal_w(self, env: TaskEnv) -> tuple[torch.Tensor, torch.Tensor]:
        """(num_envs, 3) the commanded position and (num_envs, 3, 3) orientation in the world."""
        rotation = env.sim.xmat[:, self.base]
        position = env.sim.xpos[:, self.base] + (rotation @ self.command[:, :3, None]).squeeze(-1)
        return position, rotation @ matrix_from_quat(self.command[:, 3:])


def _pose_term(env: TaskEnv, command: str) -> uniform_pose:
    term = env.command_term(command)
    if not isinstance(term, uniform_pose):
        raise ValueError(f"task {env.cfg.name!r}: command {command!r} is not a uniform_pose")
    return term


def _in_base(env: TaskEnv, term: uniform_pose, vector_w: torch.Tensor) -> torch.Tensor:
    """(num_envs, 3) world-axis vectors in the frame of the command's base."""
    return (env.sim.xmat[:, term.base].mT @ vector_w[..., None]).squeeze(-1)


def site_position_error_b(env: TaskEnv, site: str, command: str = "ee_pose") -> torch.Tensor:
    """(num_envs, 3) from the site `site` to the commanded position, in the frame of the command's
    base (m)."""
    term = _pose_term(env, command)
    position, _ = term.goal_w(env)
    return _in_base(env, term, position - env.sim.site_xpos[:, env.sim.site_index(site)])


def site_pose_error_b(env: TaskEnv, site: str, command: str = "ee_pose") -> torch.Tensor:
    """(num_envs, 6) from the site `site` to the commanded pose, in the frame of the command's base:
    the position difference (m), then the rotation vector (rad)."""
    term = _pose_term(env, command)
    position, rotation = term.goal_w(env)
    index = env.sim.site_index(site)
    site_rotation = env.sim.site_xmat[:, index]
    turn_w = (site_rotation @ rotation_vector(site_rotation, rotation)[..., None]).squeeze(-1)
    offset_w = position - env.sim.site_xpos[:, index]
    return torch.cat((_in_base(env, term, offset_w), _in_base(env, term, turn_w)), dim=-1)


def site_position_error(env: TaskEnv, site: str, command: str = "ee_pose") -> torch.Tensor:
    """(num_envs,) the distance (m) of the site `site` from the commanded position."""
    position, _ = _pose_term(env, command).goal_w(env)
    return (env.sim.site_xpos[:, env.sim.site_index(site)] - position).norm(dim=-1)


def site_position_error_tanh(env: TaskEnv, site: str, std: float, command: str = "ee_pose") -> torch.Tensor:
    """(num_envs,) 1 - tanh(distance / `std`): near 1 within a few `std` of the commanded position."""
    return 1.0 - torch.tanh(site_position_error(env, site, command) / std)


def site_orientation_error(env: TaskEnv, site: str, command: str = "ee_pose") -> torch.Tensor:
    """(num_envs,) the angle (rad) of the rotation from the site's orientation to the commanded one."""
    _, rotation = _pose_term(env, command).goal_w(env)
    return rotation_angle(env.sim.site_xmat[:, env.sim.site_index(site)], rotation)
