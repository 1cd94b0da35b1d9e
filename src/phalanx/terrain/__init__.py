"""Procedural terrain: a grid of sub-terrains of rising difficulty, as one MuJoCo heightfield,
and the curriculum that moves robots over it. Pure generation: the env places robots on it
(`phalanx.envs.terrain_scene`). The MuJoCo and torch parts load on first use."""

from __future__ import annotations

from phalanx.lazy import lazy_attributes
from phalanx.terrain.generator import SUB_TERRAINS, Terrain, TerrainCfg, generate_terrain

_LAZY = {"TerrainCurriculum": "phalanx.terrain.curriculum", "add_terrain": "phalanx.terrain.model"}
__all__ = ["SUB_TERRAINS", "Terrain", "TerrainCfg", "generate_terrain", *_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
