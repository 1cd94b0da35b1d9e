"""A generated terrain in a task: the model with the terrain in it, each env's tile (its origin),
and the curriculum that moves envs between levels at their resets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import torch

from phalanx.core.errors import ConfigError
from phalanx.envs.random_numbers import StepRandoms
from phalanx.envs.tensor_state import load_tensor_state, tensor_state
from phalanx.terrain.curriculum import TerrainCurriculum
from phalanx.terrain.generator import Terrain, TerrainCfg, generate_terrain
from phalanx.terrain.model import BASE_DEPTH, add_terrain, block_cells, block_table

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv
    from phalanx.sim.grid_contacts import GridContacts


class TerrainScene:
    """Envs spawn at the center of their tile (`origins`, (num_envs, 3)); with a `command` (a
    velocity command's name) each reset first moves the env by the distance it walked: a harder
    level beyond half a tile, an easier one below half the distance its last command asked for
    over a whole episode (Isaac Lab's terrain_levels_vel)."""

    def __init__(
        self, cfg: TerrainCfg, num_envs: int, device: torch.device, random: StepRandoms,
        command: str | None = None,
    ):  # fmt: skip
        if cfg.contacts not in ("grid", "mujoco"):
            raise ConfigError(f"unknown contacts {cfg.contacts!r}; allowed: 'grid', 'mujoco'", "env.terrain.contacts")
        self.terrain = generate_terrain(cfg)
        self.heights = torch.tensor(self.terrain.heights, dtype=torch.float32, device=device)
        self.curriculum = TerrainCurriculum(self.terrain, num_envs, device, random.randint)
        self.origins = self.curriculum.env_origins().clone()
        self.command = command

    def add_to(self, spec: mujoco.MjSpec) -> None:
        """Puts the terrain in place of the model's geom named "floor"."""
        add_terrain(spec, self.terrain)

    def grid_contacts(self, mjm: mujoco.MjModel) -> GridContacts | None:
        """With `contacts` "grid": the terrain's contacts for the simulator to add (`grid_contacts`),
        MuJoCo's own collision of the terrain turned off in `mjm`; else None."""
        if self.terrain.cfg.contacts != "grid":
            return None
        return terrain_contacts(mjm, self.terrain)

    def check(self, env: TaskEnv) -> None:
        if env.sim.root_qposadr is None:
            raise ConfigError(f"terrain: task {env.cfg.name!r} has no free-floating root to place on the tiles")
        if self.command is not None:
            env.command(self.command)  # names the command or raises

    def before_reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        """Moves the envs of `mask` that have run an episode to their next level and tile."""
        if self.command is not None:
            a = env.sim.root_qposadr
            walked = (env.sim.qpos[:, a : a + 2] - self.origins[:, :2]).norm(dim=1)
            asked = env.command(self.command)[:, :2].norm(dim=1) * env.time_limit * env.step_dt
            self.curriculum.update(mask & (env.episode_length > 0), walked, 0.5 * asked)
        self.origins.copy_(torch.where(mask[:, None], self.curriculum.env_origins(), self.origins))

    def place(self, env: TaskEnv, mask: torch.Tensor) -> None:
        """Shifts the (just reset) roots of `mask` from the world origin to their tile's center."""
        a = env.sim.root_qposadr
        env.sim.qpos[:, a : a + 3] += torch.where(mask[:, None], self.origins, 0.0)

    def height_at(self, xy: torch.Tensor) -> torch.Tensor:
        """(...) height (m) of the terrain's surface at the world points `xy` (..., 2): the surface
        MuJoCo collides with, each grid cell split into two triangles by its diagonal from (x0, y0)
        to (x1, y1). Points off the grid read the nearest edge; a NaN point (of an env whose
        physics diverged, reset after this step) reads the corner at the grid's origin."""
        h = self.terrain.cfg.horizontal_scale
        nx, ny = self.heights.shape
        g = torch.nan_to_num(xy / h, nan=0.0)  # NaN would index out of bounds (clamp keeps NaN)
        i = g[..., 0].floor().clamp(0, nx - 2)
        j = g[..., 1].floor().clamp(0, ny - 2)
        u, v = (g[..., 0] - i).clamp(0, 1), (g[..., 1] - j).clamp(0, 1)
        i, j = i.long(), j.long()
        z00, z10 = self.heights[i, j], self.heights[i + 1, j]
        z01, z11 = self.heights[i, j + 1], self.heights[i + 1, j + 1]
        below = z00 + u * (z10 - z00) + v * (z11 - z10)  # u >= v: the triangle (x0, y0), (x1, y0), (x1, y1)
        above = z00 + v * (z01 - z00) + u * (z11 - z01)
        return torch.where(u >= v, below, above)

    def mean_level(self) -> torch.Tensor:
        return self.curriculum.mean_level()

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The envs' tiles and levels (for an exact resume); the heights are rebuilt from the config."""
        return {name: value for name, value in tensor_state(self).items() if name != "heights"}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        load_tensor_state(self, state)


def terrain_contacts(mjm: mujoco.MjModel, terrain: Terrain) -> GridContacts:
    """The grid contacts (`phalanx.sim.grid_contacts`) of the geoms that collide with `terrain`,
    which `add_terrain` put into `mjm` as heightfield blocks."""
    from phalanx.sim.grid_contacts import grid_contacts  # Warp kernels: defined on first use

    heights, spacing = terrain.heights, terrain.cfg.horizontal_scale
    bottom = float(heights.min()) - BASE_DEPTH
    return grid_contacts(mjm, heights, spacing, bottom, block_table(mjm), block_cells(spacing))
