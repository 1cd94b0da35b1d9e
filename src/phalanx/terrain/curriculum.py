"""Terrain curriculum: each env walks on one tile, moves to a harder row when it walked far
enough and to an easier one when it did not (Rudin et al.; Isaac Lab's terrain_levels_vel)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from phalanx.terrain.generator import Terrain

RandInt = Callable[[tuple[int, ...], int, int], torch.Tensor]
"""(shape, low, high) -> int64 samples uniform over low, ..., high - 1: the env's `randint`."""


class TerrainCurriculum:
    """Per-env level (row of the terrain grid, its difficulty) and type (column), on device.

    Envs are spread evenly over the columns and start on a random level up to `max_init_level`.
    At each reset `update` promotes the envs that walked more than half a tile, demotes those that
    walked less than `required` (half the distance their command asked for, say), and sends envs
    that pass the hardest level to a random level, so they keep covering the grid."""

    def __init__(
        self, terrain: Terrain, num_envs: int, device: torch.device | str, randint: RandInt,
        max_init_level: int = 5,
    ):  # fmt: skip
        rows, cols = terrain.origins.shape[:2]
        self.num_levels, self.tile_size, self.randint = rows, terrain.cfg.tile_size, randint
        self.origins = torch.tensor(terrain.origins, dtype=torch.float32, device=device)
        top = min(max_init_level, rows - 1) + 1
        self.levels = randint((num_envs,), 0, top)
        self.types = torch.div(torch.arange(num_envs, device=device) * cols, num_envs, rounding_mode="floor")

    def env_origins(self) -> torch.Tensor:
        """(num_envs, 3) the center of each env's tile."""
        return self.origins[self.levels, self.types]

    def update(self, mask: torch.Tensor, distance: torch.Tensor, required: torch.Tensor) -> None:
        """Moves the envs of `mask` (num_envs,) by the distance (m) they walked this episode."""
        up = distance > self.tile_size / 2
        down = (distance < required) & ~up
        levels = self.levels + (mask & up).long() - (mask & down).long()
        passed = levels >= self.num_levels
        random = self.randint(tuple(levels.shape), 0, self.num_levels)
        self.levels.copy_(torch.where(passed, random, levels.clamp(min=0)))

    def mean_level(self) -> torch.Tensor:
        """Device scalar: the mean level over envs (for logging)."""
        return self.levels.float().mean()
