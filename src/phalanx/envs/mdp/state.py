"""Read-only accessors for the robot state that terms share. Shapes lead with num_envs.

The root is the model's first free joint: its qpos is position (world) then orientation
(w, x, y, z); its qvel is linear velocity (world) then angular velocity (body frame).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.mdp.math import quat_apply, quat_apply_inverse, yaw_from_quat

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv

FORWARD_B = (1.0, 0.0, 0.0)
GRAVITY_DIR_W = (0.0, 0.0, -1.0)


def root_addresses(env: TaskEnv) -> tuple[int, int]:
    """qpos and qvel addresses of the free root joint."""
    if env.sim.root_qposadr is None:
        raise ValueError(f"task {env.cfg.name!r}: a root-state term needs a free-floating base; this robot's is fixed")
    return env.sim.root_qposadr, env.sim.root_dofadr


def root_pos_w(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) root position, world frame."""
    a, _ = root_addresses(env)
    return env.sim.qpos[:, a : a + 3]


def root_quat_w(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 4) root orientation (w, x, y, z)."""
    a, _ = root_addresses(env)
    return env.sim.qpos[:, a + 3 : a + 7]


def root_lin_vel_w(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) root linear velocity, world frame (m/s)."""
    _, d = root_addresses(env)
    return env.sim.qvel[:, d : d + 3]


def root_lin_vel_b(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) root linear velocity, body frame."""
    return quat_apply_inverse(root_quat_w(env), root_lin_vel_w(env))


def root_ang_vel_b(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) root angular velocity, body frame."""
    _, d = root_addresses(env)
    return env.sim.qvel[:, d + 3 : d + 6]


def projected_gravity_b(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) unit gravity direction in the body frame ((0, 0, -1) when upright)."""
    q = root_quat_w(env)
    return quat_apply_inverse(q, env.constant(GRAVITY_DIR_W).expand(q.shape[0], 3))


def heading_w(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 3) the body's forward axis (+x) in the world frame."""
    q = root_quat_w(env)
    return quat_apply(q, env.constant(FORWARD_B).expand(q.shape[0], 3))


def yaw_w(env: TaskEnv) -> torch.Tensor:
    """(num_envs,) the heading of the body's forward axis about world z (rad, in (-pi, pi])."""
    return yaw_from_quat(root_quat_w(env))


def joint_pos(env: TaskEnv) -> torch.Tensor:
    """(num_envs, J) positions of the 1-dof joints, in `sim.joint_names` order."""
    return env.sim.qpos[:, env.sim.joint_qpos_columns]


def joint_vel(env: TaskEnv) -> torch.Tensor:
    """(num_envs, J) velocities of the 1-dof joints, in `sim.joint_names` order."""
    return env.sim.qvel[:, env.sim.joint_dof_columns]


def to_target_xy(env: TaskEnv, target_pos: tuple[float, float, float]) -> torch.Tensor:
    """(num_envs, 2) horizontal vector from the root to the target, world frame."""
    return env.constant(tuple(target_pos[:2])) - root_pos_w(env)[:, :2]
