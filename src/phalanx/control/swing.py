"""Swing-foot trajectories, batched: from where a foot lifted off to its target foothold, with a
lift of a given height, and the velocity along them (for a tracking controller)."""

from __future__ import annotations

from collections.abc import Callable

import torch


def swing_trajectory(
    start: torch.Tensor,
    target: torch.Tensor,
    progress: torch.Tensor,
    height: torch.Tensor | float,
    rate: torch.Tensor | float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Where a swinging foot should be and how fast it should move: (..., 3) positions and
    velocities (world, m and m/s) at `progress` (...) in [0, 1] of a swing from `start` (..., 3)
    to `target` (..., 3) whose progress advances by `rate` per second (1 / the swing's duration;
    0: a stopped swing, which holds still). `height` and `rate` are numbers or tensors that
    broadcast to `progress`'s shape.

    The foot moves along a minimum-jerk profile b(s) = 10 s^3 - 15 s^4 + 6 s^5 (no velocity or
    acceleration at lift-off and touch-down) and rises `height` m above the line between start
    and target at mid-swing, following 64 s^3 (1 - s)^3 (also flat at both ends)."""
    s = progress.clamp(0.0, 1.0)[..., None]
    blend, lift = _profile(s)
    blend_rate = 30.0 * s**2 * (1.0 - s) ** 2
    lift_rate = 192.0 * s**2 * (1.0 - s) ** 2 * (1.0 - 2.0 * s)
    up = torch.zeros_like(start)
    up[..., 2] = 1.0
    height, rate = _per_point(height), _per_point(rate)
    position = start + (target - start) * blend + height * lift * up
    velocity = ((target - start) * blend_rate + height * lift_rate * up) * rate
    return position, velocity


def _profile(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """At a swing's progress `s`: how far along the line from start to target its foot has come
    (the minimum-jerk blend), and the share of its lift it has risen by (`swing_trajectory`)."""
    return s**3 * (10.0 - 15.0 * s + 6.0 * s**2), 64.0 * s**3 * (1.0 - s) ** 3


def _per_point(value: torch.Tensor | float) -> torch.Tensor | float:
    """A per-point tensor with a trailing axis to broadcast over x, y, z; a number as it is (a
    host number becomes no host-to-device copy, which a CUDA graph capture would refuse)."""
    return value[..., None] if isinstance(value, torch.Tensor) and value.dim() else value


def swing_clearance(
    start: torch.Tensor, target: torch.Tensor, ground: Callable[[torch.Tensor], torch.Tensor], clearance: float
) -> torch.Tensor:
    """(...) the lift (`swing_trajectory`'s `height`, m, >= 0) that carries each swing from
    `start` (..., 3) to `target` (..., 3) over `ground` (points (..., 2) to the height a foot's
    centre has standing there), then `clearance` m higher: the ground's rise above the line from
    start to target, over the lift's profile, at the swing's progress 0.25, 0.375, ..., 0.75 (10 %
    to 90 % of the way; the ends stand on the ground)."""
    blend, lift = _profile(torch.linspace(0.25, 0.75, 5, dtype=start.dtype, device=start.device))
    points = start[..., None, :] + (target - start)[..., None, :] * blend[:, None]  # (..., 5, 3)
    rise = (ground(points[..., :2]) - points[..., 2]) / lift
    return rise.amax(-1).clamp(min=0.0) + clearance
