"""Puts a generated terrain into a MuJoCo model as heightfield geoms of at most BLOCK_SIZE a side.

One heightfield for the whole terrain breaks contacts: MuJoCo Warp collides a geom with each
heightfield cell (a prism) by GJK/EPA in float32, in the heightfield's frame, and far from the
heightfield's center that fails. A 3 cm sphere pressed into flat cells gets contacts metres deep
and metres away from it: in 2,000 random poses, none on a 10 m heightfield, 1 on 20 m, 36 on
40 m, 76 on 100 m (tests/terrain/test_terrain.py keeps the check). On the 96 m x 176 m anymal-rough
terrain these contacts launched robots at 10^3-10^8 m/s within seconds of training. MuJoCo's C
engine, in double precision, gives none.
"""

from __future__ import annotations

import mujoco
import numpy as np

from phalanx.core.errors import ConfigError
from phalanx.terrain.generator import Terrain

BASE_DEPTH = 1.0
"""Thickness (m) of each heightfield's solid base below its lowest point."""
BLOCK_SIZE = 8.0
"""Largest side (m) of one heightfield; the terrain is cut into blocks that share their edge rows."""
GROUP = 2
"""Geom group of the terrain: height scanners cast rays at this group only (not at robots)."""


def add_terrain(spec: mujoco.MjSpec, terrain: Terrain, replace: str | None = "floor") -> list[mujoco.MjsGeom]:
    """Adds `terrain` to `spec` as heightfield geoms named "terrain_I_J" (block I along x, J along
    y) together covering the grid: grid point (i, j) lies at world (i * h, j * h, heights[i, j])
    (h the horizontal scale). The geom named `replace` (the task's ground plane) is removed and
    its contact settings kept; the bodies of `terrain.cfg.exclude_bodies` get no contacts with it."""
    for body in terrain.cfg.exclude_bodies:
        if spec.body(body) is None:
            names = [b.name for b in spec.bodies if b.name != "world"]
            raise ConfigError(f"no body named {body!r}; the model has {names}", "env.terrain.exclude_bodies")
        exclude = spec.add_exclude()
        exclude.bodyname1, exclude.bodyname2 = "world", body
    old = next((g for g in spec.geoms if g.name == replace), None) if replace else None
    h = terrain.cfg.horizontal_scale
    cells = block_cells(h)
    nx, ny = terrain.heights.shape
    geoms = []
    for bi, x0 in enumerate(range(0, max(nx - 1, 1), cells)):
        for bj, y0 in enumerate(range(0, max(ny - 1, 1), cells)):
            block = terrain.heights[x0 : x0 + cells + 1, y0 : y0 + cells + 1]
            geom = _add_block(spec, f"terrain_{bi}_{bj}", block, h, origin=(x0 * h, y0 * h))
            if old is not None:
                geom.contype, geom.conaffinity, geom.condim = old.contype, old.conaffinity, old.condim
                geom.friction, geom.rgba = old.friction, old.rgba
            geoms.append(geom)
    if old is not None:
        spec.delete(old)
    return geoms


def block_cells(horizontal_scale: float) -> int:
    """Grid cells along a side of one heightfield block."""
    return max(1, int(round(BLOCK_SIZE / horizontal_scale)))


def block_table(mjm: mujoco.MjModel) -> np.ndarray:
    """(blocks along x, blocks along y) geom ids of the terrain's heightfield blocks in `mjm`."""
    ids = {}
    for g in range(mjm.ngeom):
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) or ""
        if name.startswith("terrain_") and int(mjm.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_HFIELD):
            bi, bj = name.split("_")[1:]
            ids[int(bi), int(bj)] = g
    nbx, nby = max(i for i, _ in ids) + 1, max(j for _, j in ids) + 1
    return np.array([[ids[i, j] for j in range(nby)] for i in range(nbx)], dtype=np.int64)


def _add_block(
    spec: mujoco.MjSpec, name: str, heights: np.ndarray, h: float, origin: tuple[float, float]
) -> mujoco.MjsGeom:
    """One heightfield geom whose grid point (i, j) lies at origin + (i * h, j * h, heights[i, j])."""
    low, high = float(heights.min()), float(heights.max())
    span = max(high - low, 1e-6)
    nx, ny = heights.shape
    hfield = spec.add_hfield()
    hfield.name = name
    # MuJoCo: rows run along y, columns along x; elevations are scaled by size[2].
    hfield.nrow, hfield.ncol = ny, nx
    hfield.size = [(nx - 1) * h / 2, (ny - 1) * h / 2, span, BASE_DEPTH]
    hfield.userdata = ((heights.T - low) / span).astype(np.float32).ravel().tolist()
    geom = spec.worldbody.add_geom()
    geom.name = name
    geom.group = GROUP
    geom.type = mujoco.mjtGeom.mjGEOM_HFIELD
    geom.hfieldname = name
    geom.pos = [origin[0] + (nx - 1) * h / 2, origin[1] + (ny - 1) * h / 2, low]
    return geom
