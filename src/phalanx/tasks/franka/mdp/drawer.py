"""Terms for an arm that grasps a drawer's handle and pulls the drawer open (Isaac Lab's cabinet
task in spirit). The handle is a site whose x axis points out of the drawer (toward the robot)
and whose y axis runs along the bar; the gripper is the site "ee" (its z the approach direction,
its y the direction the fingers close along) and a site on each finger pad. A handle is
"grasped around" when the left finger is above it and the right one below."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.mdp import bodies, state

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv

FINGERTIPS = ("left_fingertip", "right_fingertip")


def approach_handle(env: TaskEnv, threshold: float, site: str = "ee", handle: str = "handle") -> torch.Tensor:
    """(num_envs,) 1 / (1 + d^2)^2 of the distance d (m) from the gripper to the handle, doubled
    within `threshold`."""
    distance = bodies.site_distance(env, site, handle)
    reward = (1.0 + distance**2) ** -2
    return torch.where(distance <= threshold, 2.0 * reward, reward)


def align_with_handle(env: TaskEnv, site: str = "ee", handle: str = "handle") -> torch.Tensor:
    """(num_envs,) in [-1, 1]: 0.5 (sign(a) a^2 + sign(b) b^2) with a the cosine between the
    gripper's approach axis (z) and the handle's inward direction (-x), and b that between the
    gripper's x and the handle's -y: 1 when the gripper faces the drawer with its fingers closing
    across the bar."""
    gripper, bar = env.sim.site_xmat[:, env.sim.site_index(site)], env.sim.site_xmat[:, env.sim.site_index(handle)]
    a = -(gripper[:, :, 2] * bar[:, :, 0]).sum(dim=1)
    b = -(gripper[:, :, 0] * bar[:, :, 1]).sum(dim=1)
    return 0.5 * (torch.sign(a) * a**2 + torch.sign(b) * b**2)


def _fingertip_heights(env: TaskEnv, handle: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    left, right = (env.sim.site_xpos[:, env.sim.site_index(tip), 2] for tip in FINGERTIPS)
    return left, right, env.sim.site_xpos[:, env.sim.site_index(handle), 2]


def grasped_around_handle(env: TaskEnv, handle: str = "handle") -> torch.Tensor:
    """(num_envs,) 1.0 where the left finger pad is above the handle and the right one below it."""
    left, right, bar = _fingertip_heights(env, handle)
    return ((left > bar) & (right < bar)).float()


def fingers_around_handle(env: TaskEnv, offset: float, handle: str = "handle") -> torch.Tensor:
    """(num_envs,) where the handle is grasped around: (offset - the left pad's height above it)
    + (offset - the right pad's depth below it) (m), which grows as the fingers close on it; else 0."""
    left, right, bar = _fingertip_heights(env, handle)
    return grasped_around_handle(env, handle) * ((offset - (left - bar).abs()) + (offset - (right - bar).abs()))


def close_on_handle(
    env: TaskEnv, threshold: float, open_position: float, fingers: str, site: str = "ee", handle: str = "handle"
) -> torch.Tensor:
    """(num_envs,) within `threshold` (m) of the handle, how far the fingers (the joints matching
    `fingers`, 0 closed) are from `open_position`, summed: closing the gripper on the handle."""
    near = bodies.site_distance(env, site, handle) <= threshold
    closed = (open_position - state.joint_pos(env)[:, env.joint_columns(fingers)]).sum(dim=1)
    return near * closed


def drawer_opening(env: TaskEnv, joint: str = "drawer_joint") -> torch.Tensor:
    """(num_envs,) how far the drawer is open (m): its slide joint's position."""
    return state.joint_pos(env)[:, env.joint_columns(joint)][:, 0]


def open_drawer_bonus(env: TaskEnv, joint: str = "drawer_joint", handle: str = "handle") -> torch.Tensor:
    """(num_envs,) the drawer's opening (m), doubled while the handle is grasped around."""
    return (grasped_around_handle(env, handle) + 1.0) * drawer_opening(env, joint)


def drawer_stages(env: TaskEnv, joint: str = "drawer_joint", handle: str = "handle") -> torch.Tensor:
    """(num_envs,) 0.5 once the drawer is open 1 cm, then 1 more each beyond 20 cm and 30 cm
    while the handle is grasped around."""
    opening, grasped = drawer_opening(env, joint), grasped_around_handle(env, handle)
    return 0.5 * (opening > 0.01) + grasped * ((opening > 0.2).float() + (opening > 0.3).float())


def drawer_opened(env: TaskEnv, distance: float, joint: str = "drawer_joint") -> torch.Tensor:
    """(num_envs,) 1.0 where the drawer is open at least `distance` (m)."""
    return (drawer_opening(env, joint) >= distance).float()
