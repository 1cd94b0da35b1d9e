"""Batched rotation helpers. Quaternions are (w, x, y, z), MuJoCo's order. Shapes: (N, 4), (N, 3)."""

from __future__ import annotations

import torch


def quat_apply(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotates v by q: R(q) v."""
    w, xyz = q[:, :1], q[:, 1:]
    t = 2.0 * torch.linalg.cross(xyz, v)
    return v + w * t + torch.linalg.cross(xyz, t)


def quat_apply_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotates v by the inverse of q: R(q)^T v (world frame -> body frame)."""
    w, xyz = q[:, :1], q[:, 1:]
    t = 2.0 * torch.linalg.cross(xyz, v)
    return v - w * t + torch.linalg.cross(xyz, t)


def euler_xyz_from_quat(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Roll, pitch, yaw (N,) each in (-pi, pi] for the extrinsic x-y-z convention."""
    w, x, y, z = q.unbind(dim=1)
    roll = torch.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = torch.asin(torch.clamp(2.0 * (w * y - z * x), -1.0, 1.0))
    yaw = torch.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return roll, pitch, yaw


def wrap_to_pi(angle: torch.Tensor) -> torch.Tensor:
    """Wraps angles to (-pi, pi]."""
    return torch.atan2(torch.sin(angle), torch.cos(angle))


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product a * b of (..., 4) quaternions (w, x, y, z): rotate by b, then by a."""
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        dim=-1,
    )
