"""Terrain-aware footholds, batched: each foothold moved to the nearest spot of safe ground around
it, read from a height map (the heights a policy's height scan sees). Safe ground is level
around the foot (no edge within a margin) and not in a hole (lower than ground on both sides of
it). The high level of Da and Xie's quadruped picks its footholds from the terrain; this is the
heuristic's version of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FootholdSearchCfg:
    reach: float = 0.15
    """How far a foothold may move from where it was asked for, along x and along y (m)."""
    spacing: float = 0.05
    """Spacing of the candidate spots (m), and the margin: a spot is level when the ground at it
    and `spacing` m away along x and y differs by at most `flatness`."""
    flatness: float = 0.02
    """Largest height difference (m) over a level spot's margin, and the deepest a spot may lie
    below ground on both sides of it (along x or y, within the searched patch) before it is a hole."""

    def __post_init__(self):
        if not (self.reach > 0 and self.flatness > 0 and 0 < self.spacing <= self.reach):
            raise ValueError(f"FootholdSearchCfg: need reach, flatness > 0 and 0 < spacing <= reach, got {self}")


def safe_footholds(
    xy: torch.Tensor, height_at: Callable[[torch.Tensor], torch.Tensor], cfg: FootholdSearchCfg
) -> torch.Tensor:
    """(..., 2) the footholds `xy` (..., 2) (world, m) each moved to the nearest safe spot of a
    square grid of spots `cfg.spacing` apart within `cfg.reach` of it (itself included), or left
    where it is when none is safe. `height_at` maps points (..., 2) to the ground's height there.

    A spot is safe when the ground at it and at its four neighbours differs by at most
    `cfg.flatness` (no edge within the margin), and it is not more than `cfg.flatness` below
    ground on both sides of it along x or along y in the searched patch (a hole: a gap between
    stones; the foot of a step down is not one)."""
    n = round(cfg.reach / cfg.spacing)
    steps = torch.arange(-n - 1, n + 2, dtype=xy.dtype, device=xy.device) * cfg.spacing  # one ring more: the margin
    grid = torch.stack(torch.meshgrid(steps, steps, indexing="ij"), dim=-1)  # (m, m, 2)
    heights = height_at(xy[..., None, None, :] + grid)  # (..., m, m): x along -2, y along -1
    centre = heights[..., 1:-1, 1:-1]
    neighbours = torch.stack(
        (heights[..., :-2, 1:-1], heights[..., 2:, 1:-1], heights[..., 1:-1, :-2], heights[..., 1:-1, 2:]), dim=-1
    )
    edge = (neighbours - centre[..., None]).abs().amax(-1) > cfg.flatness
    hole = (_depth(heights, -2) > cfg.flatness) | (_depth(heights, -1) > cfg.flatness)
    offsets = grid[1:-1, 1:-1]  # (2n+1, 2n+1, 2)
    # Nearest safe spot first; an unsafe one costs more than the farthest safe one (2 reach^2).
    cost = offsets.square().sum(-1) + (edge | hole[..., 1:-1, 1:-1]) * (4.0 * cfg.reach**2)
    best = cost.flatten(-2).argmin(-1)  # (...,)
    # The asked spot (the grid's centre) is the nearest unsafe one too: argmin keeps it when none is safe.
    return xy + offsets.flatten(0, 1)[best]


def _depth(heights: torch.Tensor, dim: int) -> torch.Tensor:
    """How far each point lies below the lower of the highest ground before it and after it along `dim`."""
    before = torch.cummax(heights, dim).values
    after = torch.cummax(heights.flip(dim), dim).values.flip(dim)
    return torch.minimum(before, after) - heights
