"""Observation terms of named bodies, sites and sensors, for end effectors and fixed-base robots
(arms) as well as floating ones. Each returns (num_envs, d) float32 (the distances between two
sites (num_envs,), for rewards and metrics); names are resolved when the term is built, so a
missing one raises then, with the names the model has.

They read MuJoCo's derived quantities (xpos, xquat, site_xpos, cvel, sensordata), which come from
the last physics substep's forward pass: the state one substep before `sim.qpos`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import Term

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv
    from phalanx.sim.simulator import Simulator


def base_body_id(sim: Simulator, base: str | None = None) -> int:
    """Index of the robot's base body: the body named `base`; None: the body of the model's free
    root joint, or, for a fixed base, the first body under the world body (body 1, an arm's
    mounting link). MuJoCo fuses a URDF's unjointed root link into the world body: there body 1
    is the first moving link, and `base="world"` names the root link's frame."""
    if base is not None:
        return int(sim.body_ids([base])[0])
    if sim.root_dofadr is not None:
        return int(sim.mjm.dof_bodyid[sim.root_dofadr])
    if sim.mjm.nbody < 2:
        raise ValueError("the model has no body under the world body to be the base")
    return 1


class site_pos_w(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3 * len(sites)) positions of the named sites, world frame (m)."""

    def __init__(self, env: TaskEnv, sites: list[str]):
        self.ids = env.sim.site_ids(sites)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return env.sim.site_xpos[:, self.ids].flatten(1)


class site_pos_b(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3 * len(sites)) positions of the named sites in the base body's frame (m); the
    base is `base_body_id(sim, base)`: by default the free root's body, or body 1 for a fixed base."""

    def __init__(self, env: TaskEnv, sites: list[str], base: str | None = None):
        self.ids = env.sim.site_ids(sites)
        self.base = base_body_id(env.sim, base)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        sim = env.sim
        offset_w = sim.site_xpos[:, self.ids] - sim.xpos[:, self.base, None]  # (num_envs, S, 3)
        return (offset_w @ sim.xmat[:, self.base]).flatten(1)  # rows of R^T offset_w


def site_offset_w(env: TaskEnv, site: str, to_site: str) -> torch.Tensor:
    """(num_envs, 3) from the site `site` to the site `to_site`, world axes (m)."""
    return env.sim.site_xpos[:, env.sim.site_index(to_site)] - env.sim.site_xpos[:, env.sim.site_index(site)]


def site_distance(env: TaskEnv, site: str, to_site: str) -> torch.Tensor:
    """(num_envs,) the distance (m) between two sites."""
    return site_offset_w(env, site, to_site).norm(dim=-1)


def site_distance_tanh(env: TaskEnv, site: str, to_site: str, std: float) -> torch.Tensor:
    """(num_envs,) 1 - tanh(distance / `std`) between two sites: e.g. an end effector reaching an object."""
    return 1.0 - torch.tanh(site_distance(env, site, to_site) / std)


class body_pos_w(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3 * len(bodies)) positions of the named bodies' frames, world frame (m)."""

    def __init__(self, env: TaskEnv, bodies: list[str]):
        self.ids = env.sim.body_ids(bodies)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return env.sim.xpos[:, self.ids].flatten(1)


class body_quat_w(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 4 * len(bodies)) orientations of the named bodies (w, x, y, z), world frame."""

    def __init__(self, env: TaskEnv, bodies: list[str]):
        self.ids = env.sim.body_ids(bodies)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return env.sim.xquat[:, self.ids].flatten(1)


class body_lin_vel_w(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3 * len(bodies)) linear velocities of the named bodies' frame origins, world
    frame (m/s), as MuJoCo's mj_objectVelocity of an mjOBJ_XBODY."""

    def __init__(self, env: TaskEnv, bodies: list[str]):
        self.ids = env.sim.body_ids(bodies)
        roots = torch.tensor(env.sim.mjm.body_rootid, dtype=torch.long, device=env.sim.device)
        self.roots = roots[self.ids]  # the root of each body's kinematic tree

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        sim = env.sim
        ang, lin = sim.cvel[:, self.ids, :3], sim.cvel[:, self.ids, 3:]  # lin: at the tree's center of mass
        offset = sim.xpos[:, self.ids] - sim.subtree_com[:, self.roots]
        return (lin + torch.linalg.cross(ang, offset)).flatten(1)


class body_ang_vel_w(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3 * len(bodies)) angular velocities of the named bodies, world frame (rad/s)."""

    def __init__(self, env: TaskEnv, bodies: list[str]):
        self.ids = env.sim.body_ids(bodies)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return env.sim.cvel[:, self.ids, :3].flatten(1)


class sensor(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, total dimension) the named sensors' values (`sensordata`), of any dimension,
    concatenated in the order given."""

    def __init__(self, env: TaskEnv, sensors: list[str]):
        self.columns = env.sim.sensor_columns(sensors)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return env.sim.sensordata[:, self.columns]


class body_contact_force_w(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 3 * len(bodies)) the contact force on each named body (MuJoCo's cfrc_ext: the
    sum of its contacts' forces), world frame (N): fingertip forces. Needs `sim.body_forces = True`."""

    def __init__(self, env: TaskEnv, bodies: list[str]):
        if not env.sim.cfg.body_forces:
            raise ValueError(f"task {env.cfg.name!r}: body_contact_force_w needs sim.body_forces = True")
        self.ids = env.sim.body_ids(bodies)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return env.sim.cfrc_ext[:, self.ids, 3:].flatten(1)
