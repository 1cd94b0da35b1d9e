"""Puts a generated terrain into a MuJoCo model as one heightfield geom."""

from __future__ import annotations

import mujoco
import numpy as np

from phalanx.terrain.generator import Terrain

BASE_DEPTH = 1.0
"""Thickness (m) of the heightfield's solid base below its lowest point."""
GROUP = 2
"""Geom group of the terrain: height scanners cast rays at this group only (not at robots)."""


def add_terrain(spec: mujoco.MjSpec, terrain: Terrain, replace: str | None = "floor") -> mujoco.MjsGeom:
    """Adds `terrain` to `spec` as a heightfield geom named "terrain" whose grid point (i, j)
    lies at world (i * h, j * h, heights[i, j]) (h the horizontal scale). The geom named
    `replace` (the task's ground plane) is removed and its contact settings kept."""
    heights = terrain.heights
    low, high = float(heights.min()), float(heights.max())
    span = max(high - low, 1e-6)
    h = terrain.cfg.horizontal_scale
    nx, ny = heights.shape
    hfield = spec.add_hfield()
    hfield.name = "terrain"
    # MuJoCo: rows run along y, columns along x; elevations are scaled by size[2].
    hfield.nrow, hfield.ncol = ny, nx
    hfield.size = [(nx - 1) * h / 2, (ny - 1) * h / 2, span, BASE_DEPTH]
    hfield.userdata = ((heights.T - low) / span).astype(np.float32).ravel().tolist()
    geom = spec.worldbody.add_geom()
    old = next((g for g in spec.geoms if g.name == replace), None) if replace else None
    if old is not None:
        geom.contype, geom.conaffinity, geom.condim = old.contype, old.conaffinity, old.condim
        geom.friction, geom.rgba = old.friction, old.rgba
        spec.delete(old)
    geom.name = "terrain"
    geom.group = GROUP
    geom.type = mujoco.mjtGeom.mjGEOM_HFIELD
    geom.hfieldname = "terrain"
    geom.pos = [(nx - 1) * h / 2, (ny - 1) * h / 2, low]
    return geom
