"""Procedural terrain: a grid of sub-terrains of rising difficulty, as MuJoCo heightfield blocks,
the curriculum that moves robots over it, and the contacts of spheres and capsules with its grid
(`contacts`). The env places robots on it (`phalanx.envs.terrain_scene`). The MuJoCo, Warp and
torch parts load on first use."""

from __future__ import annotations

from phalanx.core.lazy import lazy_attributes
from phalanx.terrain.generator import SUB_TERRAINS, Terrain, TerrainCfg, generate_terrain

_LAZY = {"TerrainCurriculum": "phalanx.terrain.curriculum", "add_terrain": "phalanx.terrain.model"}
__all__ = ["SUB_TERRAINS", "Terrain", "TerrainCfg", "generate_terrain", *_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
