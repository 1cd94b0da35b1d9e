"""The poses of a few envs' geoms, computed on the host by MuJoCo C's kinematics from each env's
joint positions and mocap bodies (a copy of K rows: the simulation itself is not touched)."""

from __future__ import annotations

import math

import mujoco
import numpy as np

MARGIN = 0.5
"""Metres between two envs' cells on the view's grid."""


class EnvPoses:
    """Geom positions and orientations (w, x, y, z) of `envs` envs of a model, each shifted by its
    place in the view (`offsets`): envs that start in one spot are laid out on a grid, envs a
    terrain already spreads (they start apart) are shown where they are."""

    def __init__(self, mjm: mujoco.MjModel, geoms: list[int], start_qpos: np.ndarray):
        self.mjm, self.geoms = mjm, np.asarray(geoms, dtype=np.int64)
        self.data = mujoco.MjData(mjm)
        self.offsets = grid_offsets(mjm, start_qpos)

    def __call__(self, qpos: np.ndarray, mocap_pos: np.ndarray, mocap_quat: np.ndarray) -> tuple[np.ndarray, ...]:
        """(K, G, 3) positions and (K, G, 4) quaternions of the geoms, for K envs' states."""
        k, g = len(qpos), len(self.geoms)
        positions, quats = np.empty((k, g, 3), np.float32), np.empty((k, g, 4), np.float32)
        quat = np.empty(4)
        for i in range(k):
            self.data.qpos[:] = qpos[i]
            if self.mjm.nmocap:
                self.data.mocap_pos[:], self.data.mocap_quat[:] = mocap_pos[i], mocap_quat[i]
            mujoco.mj_kinematics(self.mjm, self.data)
            positions[i] = self.data.geom_xpos[self.geoms] + self.offsets[i]
            for j, geom in enumerate(self.geoms):
                mujoco.mju_mat2Quat(quat, self.data.geom_xmat[geom])
                quats[i, j] = quat
        return positions, quats


def grid_offsets(mjm: mujoco.MjModel, start_qpos: np.ndarray) -> np.ndarray:
    """(K, 3) where each env goes in the view: on a grid, its cells as large as env 0's geoms
    (planes aside) with a margin, when the envs' roots start within one cell of one another; else
    (a terrain spread them) nowhere else than where they are."""
    k = len(start_qpos)
    data = mujoco.MjData(mjm)
    roots = np.empty((k, 3))
    for i in range(k):
        data.qpos[:] = start_qpos[i]
        mujoco.mj_kinematics(mjm, data)
        roots[i] = data.xpos[1] if mjm.nbody > 1 else 0.0
        if i == 0:
            low, high = _bounds(mjm, data)
    cell = np.maximum(high[:2] - low[:2], 0.1) + MARGIN
    if k > 1 and np.any(np.ptp(roots[:, :2], axis=0) > cell):
        return np.zeros((k, 3))
    side = min(k, math.ceil(math.sqrt(k * cell[1] / cell[0])))  # columns: the grid about as deep as wide
    rows, cols = np.divmod(np.arange(k), side)
    shift = np.array([(side - 1) / 2, (rows[-1]) / 2])
    return np.stack([(cols - shift[0]) * cell[0], (rows - shift[1]) * cell[1], np.zeros(k)], axis=1)


def _bounds(mjm: mujoco.MjModel, data: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
    """The corners of a box around every geom but the planes (MuJoCo's box around each, turned)."""
    keep = np.flatnonzero(mjm.geom_type != mujoco.mjtGeom.mjGEOM_PLANE)
    if not len(keep):
        return np.zeros(3), np.zeros(3)
    rot = data.geom_xmat[keep].reshape(-1, 3, 3)
    local_center, half = mjm.geom_aabb[keep, :3], mjm.geom_aabb[keep, 3:]
    center = data.geom_xpos[keep] + np.einsum("gij,gj->gi", rot, local_center)
    extent = np.einsum("gij,gj->gi", np.abs(rot), half)
    return (center - extent).min(axis=0), (center + extent).max(axis=0)


def arrow_quats(vectors: np.ndarray) -> np.ndarray:
    """(M, 4) the rotations (w, x, y, z) that turn the x axis onto each of `vectors` (M, 3); about
    z by half a turn where a vector points along -x."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    quats = np.stack((1.0 + unit[:, 0], np.zeros(len(unit)), -unit[:, 2], unit[:, 1]), axis=1)
    opposite = quats[:, 0] < 1e-9
    quats[opposite] = (0.0, 0.0, 0.0, 1.0)
    return quats / np.linalg.norm(quats, axis=1, keepdims=True)
