"""Termination terms: each returns (num_envs,) bool."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import Term
from phalanx.envs.mdp import state

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def time_out(env: TaskEnv) -> torch.Tensor:
    """The episode reached its time limit: `max_episode_length` env steps, or fewer for an
    episode that a trainer cut short (`TaskEnv.randomize_time_limits`)."""
    return env.episode_length >= env.time_limit


def root_height_below(env: TaskEnv, minimum_height: float) -> torch.Tensor:
    """The root fell below `minimum_height` (m)."""
    return state.root_pos_w(env)[:, 2] < minimum_height


def joint_pos_out_of_bounds(env: TaskEnv, joints: str, bound: float) -> torch.Tensor:
    """Any joint matching `joints` is further than `bound` from 0."""
    return (state.joint_pos(env)[:, env.joint_columns(joints)].abs() > bound).any(dim=1)


def joint_angle_past(env: TaskEnv, joints: str, degrees: float) -> torch.Tensor:
    """Any hinge matching `joints` is past `degrees` from 0."""
    return joint_pos_out_of_bounds(env, joints, math.radians(degrees))


def touch_above(env: TaskEnv, sensors: list[str], threshold: float) -> torch.Tensor:
    """Any of the named touch sensors reads more than `threshold` N (e.g. the base hit the ground)."""
    return (env.sim.sensordata[:, env.sim.sensor_ids(sensors)] > threshold).any(dim=1)


class site_touches_terrain(Term):  # noqa: N801 (terms are named like functions)
    """The box site `site` reaches into the generated terrain: a point of its surface, sampled
    every `spacing` m or closer, lies below the terrain's surface (`TerrainScene.height_at`).

    What a touch sensor on the site reports, from the terrain's heights instead of from contacts:
    with the site's body in `terrain.exclude_bodies` its geom need not collide with the terrain.
    MuJoCo Warp collides a geom with a heightfield cell by cell over the geom's bounding box, so
    anymal's base box took a quarter of anymal-rough's physics step though it only ends episodes."""

    def __init__(self, env: TaskEnv, site: str, spacing: float = 0.05):
        import mujoco  # here: listing the tasks imports this module and must not load MuJoCo

        if env.terrain is None:
            raise ConfigError(f"site_touches_terrain: task {env.cfg.name!r} has no terrain (env.terrain)")
        (self.id,) = env.sim.site_ids([site]).tolist()
        mjm = env.sim.mjm
        if mjm.site_type[self.id] != mujoco.mjtGeom.mjGEOM_BOX:
            kind = mujoco.mjtGeom(mjm.site_type[self.id]).name
            raise ConfigError(f"site_touches_terrain: site {site!r} is a {kind}, not a box")
        half = torch.tensor(mjm.site_size[self.id], dtype=torch.float32)
        axes = [torch.linspace(-s, s, int(torch.ceil(2 * s / spacing)) + 1) for s in half]
        grid = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, 3)
        on_surface = (grid.abs() >= half - 1e-6).any(dim=1)
        self.points = grid[on_surface].to(env.device)  # (P, 3) in the site's frame

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        pos, rot = env.sim.site_xpos[:, self.id], env.sim.site_xmat[:, self.id]
        world = pos[:, None] + torch.einsum("nij,pj->npi", rot, self.points)  # (num_envs, P, 3)
        return (world[..., 2] < env.terrain.height_at(world[..., :2])).any(dim=1)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {}  # no per-env state


def site_outside(
    env: TaskEnv, site: str, low: tuple[float, float, float], high: tuple[float, float, float]
) -> torch.Tensor:
    """The site left the box `low`-`high` (world, m): e.g. an object pushed off its table."""
    position = env.sim.site_xpos[:, env.sim.site_index(site)]
    return ((position < env.constant(low)) | (position > env.constant(high))).any(dim=1)
