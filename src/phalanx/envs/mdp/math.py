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


def roll_from_quat(q: torch.Tensor) -> torch.Tensor:
    """(N,) rotation about x of the extrinsic x-y-z (roll, pitch, yaw) angles, in (-pi, pi]."""
    w, x, y, z = q.unbind(dim=1)
    return torch.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))


def yaw_from_quat(q: torch.Tensor) -> torch.Tensor:
    """(N,) rotation about z of the extrinsic x-y-z (roll, pitch, yaw) angles, in (-pi, pi]: the
    heading. Each angle has its own function because the env step's trace costs time per op
    (about a millisecond each): the three angles together are 31 ops where a term needs one or two."""
    w, x, y, z = q.unbind(dim=1)
    return torch.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def wrap_to_pi(angle: torch.Tensor) -> torch.Tensor:
    """Wraps angles to (-pi, pi]."""
    return torch.atan2(torch.sin(angle), torch.cos(angle))


def quat_unique(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) unit quaternions (w, x, y, z) turned to w >= 0: one of the two of each rotation."""
    return q * torch.where(q[..., :1] < 0, -1.0, 1.0)


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


def matrix_from_quat(q: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation matrices of unit quaternions (..., 4) (w, x, y, z): the same for q and -q."""
    w, x, y, z = q.unbind(-1)
    rows = (
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    )  # fmt: skip
    return torch.stack(rows, dim=-1).unflatten(-1, (3, 3))
