"""Height scan: terrain heights on a grid of points around each env's base, straight down; the
observation of Isaac Lab's rough-terrain tasks.

Over a generated terrain the heights come from its grid (`TerrainScene.height_at`: the surface
MuJoCo collides with and casts rays at, checked against ray casts in tests). Over any other static
geoms, rays are cast through MuJoCo Warp's BVH path (`mjw.rays` with a render context that holds
only the scanned geoms): its plain path tests every ray against every geom, which on the
hundreds of heightfield blocks of anymal-rough took most of a training iteration. The scanned
geoms are static, so their BVH is built once and never refit."""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from phalanx.sim import Simulator


class HeightScanner:
    """Points on a grid of `size` (x, y) m at `resolution` m, centered on the free-floating root
    (the base) and turned with its yaw only (the grid stays level). `__call__` returns
    (num_envs, points): root height - terrain height below each point - `offset`, the nominal
    clearance removed (Isaac Lab's height_scan), clipped to +-`max_height`.

    With `surface` (a function of (..., 2) world xy giving the terrain's height there) the heights
    are read from it. Without, rays cast from `start_height` m above the points straight down to the
    geoms of `groups` (a miss reads `max_height`), with the geoms' poses from the data, so the sim
    must have stepped (or run forward) once. The root pose comes from qpos (fresh after a reset)."""

    def __init__(
        self,
        sim: Simulator,
        size: tuple[float, float] = (1.6, 1.0),
        resolution: float = 0.1,
        groups: tuple[int, ...] = (2,),
        start_height: float = 20.0,
        offset: float = 0.5,
        max_height: float = 1.0,
        surface: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ):
        if sim.root_qposadr is None:
            raise ValueError("HeightScanner: the model has no free-floating root to scan around")
        self.sim, self.offset, self.start_height, self.max_height = sim, offset, start_height, max_height
        self.surface = surface
        self.pattern = scan_pattern(size, resolution, sim.device)
        if surface is None:
            self._rays(groups)

    def _rays(self, groups: tuple[int, ...]) -> None:
        sim = self.sim
        n, nray = sim.num_envs, len(self.pattern)
        _check_static(sim.mjm, groups)
        with wp.ScopedDevice(sim.wp_device):
            # A BVH over the scanned geoms of every world; no cameras, so no image buffers.
            self._bvh = mjw.create_render_context(
                sim.mjm, nworld=n, cam_active=[], enabled_geom_groups=list(groups), use_textures=False
            )
            self._pnt = wp.zeros((n, nray), dtype=wp.vec3)
            self._vec = wp.array(np.tile([0.0, 0.0, -1.0], (n, nray, 1)).astype(np.float32), dtype=wp.vec3)
            self._dist = wp.zeros((n, nray), dtype=float)
            self._geomid = wp.zeros((n, nray), dtype=int)
            self._normal = wp.zeros((n, nray), dtype=wp.vec3)
            self._exclude = wp.full(nray, -1, dtype=int)
        # MuJoCo Warp's geomgroup: 6 floats, nonzero = cast at that group.
        self._groups = wp.types.vector(length=6, dtype=float)(*[1.0 if g in groups else 0.0 for g in range(6)])
        self.points = wp.to_torch(self._pnt)  # (num_envs, nray, 3) ray origins, world frame
        self.distance = wp.to_torch(self._dist)  # (num_envs, nray), -1: no hit
        sim.add_step_work(self._cast)

    def __call__(self) -> torch.Tensor:
        sim = self.sim
        a = sim.root_qposadr
        pos, q = sim.qpos[:, a : a + 3], sim.qpos[:, a + 3 : a + 7]
        if self.surface is not None:
            return surface_scan(pos, q, self.pattern, self.surface, self.offset, self.max_height)
        self.points[..., :2] = scan_points(pos, q, self.pattern)
        self.points[..., 2] = pos[:, 2:3] + self.start_height
        sim.launch(self._cast)
        hit_z = self.points[..., 2] - self.distance
        heights = pos[:, 2:3] - hit_z - self.offset
        return torch.where(self.distance >= 0, heights, self.max_height).clamp(-self.max_height, self.max_height)

    def _cast(self) -> None:
        # geom_xpos/xmat (static terrain) are all the ray kernel reads from data besides the arrays here.
        mjw.rays(self.sim.model, self.sim.data, self._pnt, self._vec, self._groups, True, self._exclude,
                 self._dist, self._geomid, self._normal, rc=self._bvh)  # fmt: skip


def scan_pattern(size: tuple[float, float], resolution: float, device: torch.device | str) -> torch.Tensor:
    """(points, 2) a grid of `size` (x, y) m at `resolution` m, centered on 0 (the base's yaw frame)."""
    xs = np.arange(-size[0] / 2, size[0] / 2 + 1e-9, resolution)
    ys = np.arange(-size[1] / 2, size[1] / 2 + 1e-9, resolution)
    grid = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1).reshape(-1, 2)
    return torch.tensor(grid, dtype=torch.float32, device=device)


def scan_points(pos: torch.Tensor, quat: torch.Tensor, pattern: torch.Tensor) -> torch.Tensor:
    """(n, points, 2) world xy of `pattern` (points, 2) turned by the yaw of the roots at `pos`
    (n, 3) with orientation `quat` (n, 4, w x y z) and moved to them."""
    q = quat
    yaw = torch.atan2(2 * (q[:, 0] * q[:, 3] + q[:, 1] * q[:, 2]), 1 - 2 * (q[:, 2] ** 2 + q[:, 3] ** 2))
    cos, sin = yaw.cos()[:, None], yaw.sin()[:, None]
    px, py = pattern[:, 0], pattern[:, 1]
    return torch.stack((pos[:, :1] + cos * px - sin * py, pos[:, 1:2] + sin * px + cos * py), dim=-1)


def surface_scan(
    pos: torch.Tensor, quat: torch.Tensor, pattern: torch.Tensor,
    surface: Callable[[torch.Tensor], torch.Tensor], offset: float, max_height: float,
) -> torch.Tensor:  # fmt: skip
    """(n, points) the scan of roots at `pos` (n, 3), `quat` (n, 4) over `surface` (the terrain's
    height at world points (..., 2)): root height - surface height - `offset`, clipped to
    +-`max_height` (`HeightScanner` with a surface)."""
    heights = pos[:, 2:3] - surface(scan_points(pos, quat, pattern)) - offset
    return heights.clamp(-max_height, max_height)


def _check_static(mjm: mujoco.MjModel, groups: tuple[int, ...]) -> None:
    """The BVH is never refit: every scanned geom must be welded to the world."""
    scanned = np.flatnonzero(np.isin(mjm.geom_group, groups))
    if len(scanned) == 0:
        raise ValueError(f"HeightScanner: the model has no geoms in groups {list(groups)} to scan")
    moving = [g for g in scanned if mjm.body_weldid[mjm.geom_bodyid[g]] != 0]
    if moving:
        names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}" for g in moving]
        raise ValueError(f"HeightScanner: groups {list(groups)} hold geoms that move ({names[:5]}); "
                         "the scanner casts at static geoms only")  # fmt: skip
