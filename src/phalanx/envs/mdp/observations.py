"""Observation terms: each returns (num_envs, d) float32."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import ObsTermCfg, Term
from phalanx.envs.mdp import state
from phalanx.envs.mdp.math import quat_apply_inverse, roll_from_quat, wrap_to_pi, yaw_from_quat

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def root_height(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 1) root height above the world origin (m)."""
    return state.root_pos_w(env)[:, 2:3]


def root_lin_vel_b(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) root linear velocity in the body frame (m/s)."""
    return state.root_lin_vel_b(env)


def root_ang_vel_b(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) root angular velocity in the body frame (rad/s)."""
    return state.root_ang_vel_b(env)


def root_yaw_roll(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 2) root yaw and roll (rad, in (-pi, pi])."""
    q = state.root_quat_w(env)
    return torch.stack((yaw_from_quat(q), roll_from_quat(q)), dim=1)


def root_angle_to_target(env: TaskEnv, target_pos: tuple[float, float, float]) -> torch.Tensor:
    """(num_envs, 1) angle from the root's yaw to the direction of the target (rad, in (-pi, pi])."""
    to_target = state.to_target_xy(env, target_pos)
    return wrap_to_pi(torch.atan2(to_target[:, 1], to_target[:, 0]) - state.yaw_w(env))[:, None]


def root_up_proj(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 1) cosine between the body z axis and world up (1 when upright)."""
    return -state.projected_gravity_b(env)[:, 2:3]


def root_heading_proj(env: TaskEnv, target_pos: tuple[float, float, float]) -> torch.Tensor:
    """(num_envs, 1) cosine between the body's forward axis and the horizontal direction to the target."""
    return _heading_proj(env, target_pos)[:, None]


def _heading_proj(env: TaskEnv, target_pos: tuple[float, float, float]) -> torch.Tensor:
    to_target = torch.nn.functional.normalize(state.to_target_xy(env, target_pos), dim=1)
    return (state.heading_w(env)[:, :2] * to_target).sum(dim=1)


def joint_pos(env: TaskEnv, joints: str = ".*") -> torch.Tensor:
    """(num_envs, J) positions of the 1-dof joints matching `joints` (rad or m)."""
    return state.joint_pos(env)[:, env.joint_columns(joints)]


def joint_vel(env: TaskEnv, joints: str = ".*") -> torch.Tensor:
    """(num_envs, J) velocities of the 1-dof joints matching `joints` (rad/s or m/s)."""
    return state.joint_vel(env)[:, env.joint_columns(joints)]


def joint_pos_limit_normalized(env: TaskEnv) -> torch.Tensor:
    """(num_envs, J) joint positions mapped to [-1, 1] over each joint's range (limited joints)."""
    low, high = env.sim.joint_range[:, 0], env.sim.joint_range[:, 1]
    return 2.0 * (state.joint_pos(env) - 0.5 * (low + high)) / (high - low)


def projected_gravity(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) unit gravity direction in the base frame ((0, 0, -1) when level)."""
    return state.projected_gravity_b(env)


def joint_pos_rel(env: TaskEnv) -> torch.Tensor:
    """(num_envs, J) joint positions minus their defaults (the "home" keyframe)."""
    return state.joint_pos(env) - env.sim.default_qpos[env.sim.joint_qposadr]


def generated_commands(env: TaskEnv, command: str) -> torch.Tensor:
    """(num_envs, d) the current value of the named command."""
    return env.command(command)


def last_action(env: TaskEnv) -> torch.Tensor:
    """(num_envs, action_dim) the action of the last step, after clipping (0 after a reset)."""
    return env.action


class body_wrench(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, 6 * len(bodies)) the wrench each named body receives from its parent (MuJoCo's
    com-based cfrc_int: force, then torque about the robot's center of mass), rotated into the
    root's body frame. Needs `sim.body_forces = True`."""

    def __init__(self, env: TaskEnv, bodies: list[str]):
        if not env.sim.cfg.body_forces:
            raise ValueError(f"task {env.cfg.name!r}: body_wrench needs sim.body_forces = True")
        self.ids = env.sim.body_ids(bodies)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        wrench = env.sim.cfrc_int[:, self.ids]  # (num_envs, B, 6): torque, force (world axes)
        n, b = wrench.shape[:2]
        q = state.root_quat_w(env).repeat_interleave(b, dim=0)
        torque = quat_apply_inverse(q, wrench[..., :3].reshape(n * b, 3))
        force = quat_apply_inverse(q, wrench[..., 3:].reshape(n * b, 3))
        return torch.cat((force, torque), dim=1).reshape(n, 6 * b)


class height_scan(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, points) terrain heights on a level grid around the base: base height - terrain
    height - offset per point (`HeightScanner`; params are its arguments). On the task's generated
    terrain the heights come from its grid, unless `groups` names geoms to cast rays at."""

    def __init__(self, env: TaskEnv, **params):
        from phalanx.sensors.height_scan import HeightScanner  # Warp and MuJoCo Warp: only when a task scans

        if env.terrain is not None and "groups" not in params:
            params = {**params, "surface": env.terrain.height_at}
        self.scanner = HeightScanner(env.sim, **params)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return self.scanner()


class camera_image(Term):  # noqa: N801 (terms are named like functions)
    """(num_envs, H, W, C) what one of the model's cameras sees in every env (`TiledCamera`):
    `data_type` "rgb" (uint8), "depth" (float, m) or "segmentation" (geom ids, or classes with
    `classes`), or a list of them, rendered at once and stacked along the channels as float32
    (RGB in [0, 1]); the other params are the camera's. Image terms go in their own group,
    concatenated along the channels.

    `every`: render at the env steps whose count since the env was made is a multiple of it (the
    first observations included), in all envs at once; in between, every env sees the last render,
    an env reset since too (up to `every - 1` steps stale)."""

    def __init__(self, env: TaskEnv, data_type: str | list[str] = "rgb", every: int = 1, **params):
        from phalanx.sensors.tiled_camera import TiledCamera  # Warp and MuJoCo Warp: only when a task sees

        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"camera every must be a positive number of env steps, got {every!r}")
        self.data_types = (data_type,) if isinstance(data_type, str) else tuple(data_type)
        self.every = every
        self.camera = TiledCamera(env.sim, data_types=self.data_types, **params)

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        due = None if self.every == 1 else env.step_count % self.every == 0
        images = self.camera(due)
        if len(self.data_types) == 1:
            return images[self.data_types[0]]
        return torch.cat([_as_float(images[t], t) for t in self.data_types], dim=-1)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {} if self.every == 1 else self.camera.state_dict()  # the render shown until the next

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if self.every > 1:
            self.camera.load_state_dict(state)


def colour_first(terms: Mapping[str, ObsTermCfg]) -> bool:
    """Whether an image observation group's first channels are RGB: its first term a camera whose
    first data type is "rgb" (how a video or the viewer shows what the policy sees)."""
    term = next(iter(terms.values()), None)
    if term is None or term.func is not camera_image:
        return False
    data_type = term.params.get("data_type", "rgb")
    return (data_type if isinstance(data_type, str) else data_type[0]) == "rgb"


def _as_float(image: torch.Tensor, data_type: str) -> torch.Tensor:
    """One data type's channels as float32 for a stack of several: RGB in [0, 1], the rest as they are."""
    return image.float() / 255.0 if data_type == "rgb" else image.float()
