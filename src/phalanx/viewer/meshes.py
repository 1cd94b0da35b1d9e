"""Triangle meshes of a MuJoCo model's visible geoms, in each geom's own frame (its pose comes from
the simulation), with their colors: what the web viewer draws."""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

PLANE_EXTENT = 60.0
"""Side (m) a plane is drawn with, whatever its size: the ground under all the envs shown."""
HFIELD_SAMPLES = 512 * 512
"""Elevations a height field is drawn with at most (the page receives its mesh once)."""
VISIBLE_GROUPS = (0, 1, 2)
"""Geom groups MuJoCo's own viewer shows by default (group 3 and up: collision-only and hidden)."""


@dataclass
class GeomMesh:
    """One geom's mesh: vertices (V, 3) float32 in the geom's frame, faces (F, 3) uint32, RGB 0-255."""

    geom: int
    name: str
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple[int, int, int]
    static: bool
    """On the world body: it does not move, whatever the state."""
    plane: bool
    """A ground plane: drawn once, `PLANE_EXTENT` wide, under every env."""


def geom_meshes(mjm: mujoco.MjModel) -> list[GeomMesh]:
    """The meshes of the geoms in `VISIBLE_GROUPS` that are not fully transparent."""
    out = []
    for g in range(mjm.ngeom):
        if mjm.geom_group[g] not in VISIBLE_GROUPS or mjm.geom_rgba[g][3] == 0:
            continue
        shape = _shape(mjm, g)
        if shape is None:
            continue
        vertices, faces = shape
        body = mjm.geom_bodyid[g]
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        color = tuple(int(round(255 * c)) for c in mjm.geom_rgba[g][:3])
        static = body == 0 or (mjm.body_weldid[body] == 0 and mjm.body_mocapid[body] < 0)
        plane = mjm.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE
        out.append(GeomMesh(g, name, vertices.astype(np.float32), faces.astype(np.uint32), color, bool(static), plane))
    return out


def _shape(mjm: mujoco.MjModel, g: int) -> tuple[np.ndarray, np.ndarray] | None:
    import trimesh

    kind, size = mjm.geom_type[g], mjm.geom_size[g]
    geom = mujoco.mjtGeom
    if kind == geom.mjGEOM_PLANE:
        mesh = trimesh.creation.box(extents=(PLANE_EXTENT, PLANE_EXTENT, 0.002))
        mesh.apply_translation((0, 0, -0.001))
    elif kind == geom.mjGEOM_SPHERE:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == geom.mjGEOM_ELLIPSOID:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.apply_scale(size)
    elif kind == geom.mjGEOM_CAPSULE:
        mesh = trimesh.creation.capsule(height=2 * size[1], radius=size[0], count=(16, 16))
    elif kind == geom.mjGEOM_CYLINDER:
        mesh = trimesh.creation.cylinder(radius=size[0], height=2 * size[1], sections=24)
    elif kind == geom.mjGEOM_BOX:
        mesh = trimesh.creation.box(extents=2 * size)
    elif kind == geom.mjGEOM_MESH:
        return _mesh(mjm, mjm.geom_dataid[g])
    elif kind == geom.mjGEOM_HFIELD:
        return _hfield(mjm, mjm.geom_dataid[g])
    else:  # SDF and others: nothing MuJoCo describes as triangles here
        return None
    return np.asarray(mesh.vertices), np.asarray(mesh.faces)


def _mesh(mjm: mujoco.MjModel, m: int) -> tuple[np.ndarray, np.ndarray]:
    """A mesh asset's triangles (MuJoCo keeps them in the geom's frame)."""
    v0, nv = mjm.mesh_vertadr[m], mjm.mesh_vertnum[m]
    f0, nf = mjm.mesh_faceadr[m], mjm.mesh_facenum[m]
    return mjm.mesh_vert[v0 : v0 + nv], mjm.mesh_face[f0 : f0 + nf]


def _hfield(mjm: mujoco.MjModel, h: int) -> tuple[np.ndarray, np.ndarray]:
    """A height field as a grid of triangles: `nrow` x `ncol` elevations over [-x, x] x [-y, y]."""
    rows, cols = mjm.hfield_nrow[h], mjm.hfield_ncol[h]
    x, y, top, _ = mjm.hfield_size[h]
    start = mjm.hfield_adr[h]
    stride = max(1, math.ceil(math.sqrt(rows * cols / HFIELD_SAMPLES)))  # a terrain of many blocks: every k-th sample
    height = mjm.hfield_data[start : start + rows * cols].reshape(rows, cols)[::stride, ::stride] * top
    gx, gy = np.meshgrid(np.linspace(-x, x, cols)[::stride], np.linspace(-y, y, rows)[::stride])
    rows, cols = height.shape
    vertices = np.stack([gx, gy, height], axis=-1).reshape(-1, 3)
    i = np.arange(rows * cols).reshape(rows, cols)
    a, b, c, d = i[:-1, :-1].ravel(), i[:-1, 1:].ravel(), i[1:, :-1].ravel(), i[1:, 1:].ravel()
    faces = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])
    return vertices, faces


def marker_mesh(shape: str) -> tuple[np.ndarray, np.ndarray]:
    """The unit mesh of a marker shape (`phalanx.envs.markers.SHAPES`, axes aside), float32/uint32."""
    import trimesh

    if shape == "arrow":  # along x from 0 to 1: a shaft, then a head; 1 wide
        shaft = trimesh.creation.cylinder(radius=0.25, height=0.75, sections=12)
        shaft.apply_translation((0, 0, 0.375))
        head = trimesh.creation.cone(radius=0.5, height=0.25, sections=12)
        head.apply_translation((0, 0, 0.75))
        mesh = trimesh.util.concatenate([shaft, head])
        mesh.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, (0, 1, 0)))  # z -> x
    elif shape == "sphere":
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    elif shape == "box":
        mesh = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    else:
        raise ValueError(f"no mesh for marker shape {shape!r}")
    return np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces, np.uint32)
