"""Event terms: `func(env, mask, **params)` changes the state of the envs where mask is True.

They run after `sim.reset_` put those envs in the default state, so they add offsets to it.
Random draws come from `env.rng` for all envs and are applied through the mask (no host sync).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


@torch.compiler.disable  # one tiny op; compiling it would specialize on every (low, high) pair
def _uniform(env: TaskEnv, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
    return low + (high - low) * torch.rand(shape, device=env.device, generator=env.rng)


def reset_joints_by_offset(
    env: TaskEnv,
    mask: torch.Tensor,
    joints: str = ".*",
    position_range: tuple[float, float] = (0.0, 0.0),
    velocity_range: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Adds uniform offsets to the default position and velocity of the joints matching `joints`,
    then clamps positions into the joints' ranges."""
    sim = env.sim
    ids = env.joint_ids(joints)
    qadr, dadr = sim.joint_qposadr[ids], sim.joint_dofadr[ids]
    shape = (env.num_envs, len(ids))
    low, high = sim.joint_range[ids, 0], sim.joint_range[ids, 1]
    pos = (sim.default_qpos[qadr] + _uniform(env, shape, *position_range)).clamp(low, high)
    vel = _uniform(env, shape, *velocity_range)
    m = mask[:, None]
    sim.qpos[:, qadr] = torch.where(m, pos, sim.qpos[:, qadr])
    sim.qvel[:, dadr] = torch.where(m, vel, sim.qvel[:, dadr])
