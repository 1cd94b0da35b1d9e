"""Markers: shapes that show a command where it applies (a commanded velocity as an arrow over the
robot, a goal as a sphere or a frame). Command terms give them (`CommandTerm.markers`); the web
viewer draws them (`phalanx view`). They are for showing, never for the policy."""

from __future__ import annotations

from dataclasses import dataclass

import torch

SHAPES = ("arrow", "sphere", "box", "axes")
"""arrow: along its x axis, 1 long and 1 wide at scale 1; sphere: radius 1; box: half sizes 1;
axes: a frame of axes 1 long (x red, y green, z blue)."""


@dataclass
class Marker:
    """One marker per env: its `shape` (see `SHAPES`), (num_envs, 3) world position, (num_envs, 4)
    orientation (w, x, y, z), (num_envs, 3) scale along its own axes, and its RGB color (0-255)."""

    shape: str
    pos: torch.Tensor
    quat: torch.Tensor
    scale: torch.Tensor
    color: tuple[int, int, int]


def yaw_quat(yaw: torch.Tensor) -> torch.Tensor:
    """(N, 4) the rotations about the world z axis by `yaw` (N,) radians."""
    zero = torch.zeros_like(yaw)
    return torch.stack((torch.cos(yaw / 2), zero, zero, torch.sin(yaw / 2)), dim=-1)


def arrow(start: torch.Tensor, vector_xy: torch.Tensor, width: float, color: tuple[int, int, int]) -> Marker:
    """An arrow from `start` (N, 3) along the horizontal `vector_xy` (N, 2), as long as it."""
    length = vector_xy.norm(dim=-1).clamp_min(1e-3)
    yaw = torch.atan2(vector_xy[:, 1], vector_xy[:, 0])
    scale = torch.stack((length, torch.full_like(length, width), torch.full_like(length, width)), dim=-1)
    return Marker("arrow", start, yaw_quat(yaw), scale, color)
