"""Procedural terrain: a grid of sub-terrains of rising difficulty, as one MuJoCo heightfield,
and the curriculum that moves robots over it."""

from phalanx.terrain.curriculum import TerrainCurriculum
from phalanx.terrain.generator import SUB_TERRAINS, Terrain, TerrainCfg, generate_terrain
from phalanx.terrain.model import add_terrain

__all__ = ["SUB_TERRAINS", "Terrain", "TerrainCfg", "TerrainCurriculum", "add_terrain", "generate_terrain"]
