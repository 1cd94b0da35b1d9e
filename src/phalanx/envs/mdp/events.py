"""Event terms: `func(env, mask, **params)` changes the state of the envs where mask is True.

They run after `sim.reset_` put those envs in the default state, so they add offsets to it.
Random draws come from `env.uniform` for all envs and are applied through the mask (no host sync).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.core.errors import ConfigError
from phalanx.envs.mdp import state
from phalanx.envs.mdp.math import quat_mul

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def _startup_only(env: TaskEnv, event: str) -> None:
    if env.sim.stepped:
        raise ConfigError(f"events: {event} edits model fields and must be a startup event")


def reset_joints_by_offset(
    env: TaskEnv,
    mask: torch.Tensor,
    joints: str = ".*",
    position_range: tuple[float, float] = (0.0, 0.0),
    velocity_range: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Adds uniform offsets to the default position and velocity of the joints matching `joints`,
    then clamps positions into the joints' ranges; a joint that a joint equality couples to
    another follows it."""
    sim = env.sim
    ids = env.joint_ids(joints)
    qadr, dadr = sim.joint_qposadr[ids], sim.joint_dofadr[ids]
    shape = (env.num_envs, len(ids))
    low, high = sim.joint_range[ids, 0], sim.joint_range[ids, 1]
    pos = (sim.default_qpos[qadr] + env.uniform(shape, *position_range)).clamp(low, high)
    vel = env.uniform(shape, *velocity_range)
    m = mask[:, None]
    sim.qpos[:, qadr] = torch.where(m, pos, sim.qpos[:, qadr])
    sim.qvel[:, dadr] = torch.where(m, vel, sim.qvel[:, dadr])
    sim.follow_joint_equalities_(mask)


def reset_joints_by_scale(
    env: TaskEnv, mask: torch.Tensor, joints: str = ".*", position_range: tuple[float, float] = (1.0, 1.0)
) -> None:
    """Multiplies the default positions of the joints matching `joints` by a uniform factor (zero
    velocity), then clamps them into the joints' ranges; a joint that a joint equality couples to
    another follows it."""
    sim = env.sim
    ids = env.joint_ids(joints)
    qadr = sim.joint_qposadr[ids]
    low, high = sim.joint_range[ids, 0], sim.joint_range[ids, 1]
    pos = (sim.default_qpos[qadr] * env.uniform((env.num_envs, len(ids)), *position_range)).clamp(low, high)
    sim.qpos[:, qadr] = torch.where(mask[:, None], pos, sim.qpos[:, qadr])
    sim.follow_joint_equalities_(mask)


def reset_root_state_uniform(
    env: TaskEnv,
    mask: torch.Tensor,
    xy_range: tuple[float, float] = (0.0, 0.0),
    yaw_range: tuple[float, float] = (0.0, 0.0),
    velocity_range: tuple[float, float] = (0.0, 0.0),
    y_range: tuple[float, float] | None = None,
) -> None:
    """Moves the (just reset) root by a uniform xy offset (x from `xy_range`, y from `y_range`,
    None: `xy_range` too), turns it by a uniform yaw, and gives it uniform linear and angular
    velocities (each component from `velocity_range`)."""
    a, d = state.root_addresses(env)
    n = env.num_envs
    root = env.sim.qpos[:, a : a + 7]
    low, high = (env.constant(bounds) for bounds in zip(xy_range, y_range or xy_range, strict=True))
    pos = root[:, :3] + torch.cat((env.uniform((n, 2), low, high), torch.zeros(n, 1, device=env.device)), dim=1)
    half = 0.5 * env.uniform((n,), *yaw_range)
    yaw_quat = torch.stack((half.cos(), torch.zeros_like(half), torch.zeros_like(half), half.sin()), dim=1)
    quat = quat_mul(yaw_quat, root[:, 3:])
    vel = env.uniform((n, 6), *velocity_range)
    m = mask[:, None]
    env.sim.qpos[:, a : a + 7] = torch.where(m, torch.cat((pos, quat), dim=1), root)
    env.sim.qvel[:, d : d + 6] = torch.where(m, vel, env.sim.qvel[:, d : d + 6])


def push_by_setting_velocity(
    env: TaskEnv, mask: torch.Tensor, velocity_range: tuple[float, float] = (0.0, 0.0)
) -> None:
    """Adds a uniform draw to the root's horizontal velocity (world frame): a push."""
    _, d = state.root_addresses(env)
    push = env.uniform((env.num_envs, 2), *velocity_range)
    env.sim.qvel[:, d : d + 2] += torch.where(mask[:, None], push, 0.0)


def randomize_friction(
    env: TaskEnv, mask: torch.Tensor, geoms: str = ".*", friction_range: tuple[float, float] = (1.0, 1.0)
) -> None:
    """Gives each masked world one sliding-friction coefficient, drawn uniformly, on every geom
    whose name matches `geoms`. MuJoCo uses the larger coefficient of a contact's two geoms, so
    match the ground and the robot (the default) for the draw to be the contact's friction.
    Startup mode: per-world model fields must exist before the first physics step."""
    _startup_only(env, "randomize_friction")
    cols = env.geom_ids(geoms)
    friction = env.sim.per_world("geom_friction")  # (num_envs, ngeom, 3): slide, spin, roll
    draw = env.uniform((env.num_envs, 1), *friction_range)
    friction[:, cols, 0] = torch.where(mask[:, None], draw, friction[:, cols, 0])


def add_body_mass(
    env: TaskEnv, mask: torch.Tensor, bodies: list[str], mass_range: tuple[float, float] = (0.0, 0.0)
) -> None:
    """Adds a uniform draw (kg) to the mass of each named body in the masked worlds, then lets
    MuJoCo Warp recompute what it derives from masses. Startup mode only (before the first step)."""
    _startup_only(env, "add_body_mass")
    mass = env.sim.per_world("body_mass")  # (num_envs, nbody)
    ids = env.sim.body_ids(bodies)
    draw = env.uniform((env.num_envs, len(bodies)), *mass_range)
    mass[:, ids] += torch.where(mask[:, None], draw, 0.0)
    env.sim.recompute_constants()
