"""Procedural terrain: a grid of sub-terrains of rising difficulty, as one MuJoCo heightfield."""

from phalanx.terrain.generator import SUB_TERRAINS, Terrain, TerrainCfg, generate_terrain
from phalanx.terrain.model import add_terrain

__all__ = ["SUB_TERRAINS", "Terrain", "TerrainCfg", "add_terrain", "generate_terrain"]
