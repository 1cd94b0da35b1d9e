"""Terms for an object that an arm grasps and lifts to a commanded position (Isaac Lab's lift task
in spirit). The object and the end effector are sites (the object's at its center); the goal is
a `uniform_pose` command, of which only the position counts. Heights are world z above the table
(the plane z = 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.mdp.end_effector import site_position_error, site_position_error_tanh

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def site_lifted(env: TaskEnv, site: str, minimal_height: float) -> torch.Tensor:
    """(num_envs,) 1.0 where the site is higher than `minimal_height` (m), else 0.0."""
    return (env.sim.site_xpos[:, env.sim.site_index(site), 2] > minimal_height).float()


def lifted_site_goal_tanh(
    env: TaskEnv, site: str, minimal_height: float, std: float, command: str = "object_pose"
) -> torch.Tensor:
    """(num_envs,) 1 - tanh(distance / `std`) of the site from the commanded position, where it is
    lifted (above `minimal_height`), else 0: carrying the object to the goal pays, pushing it does not."""
    return site_lifted(env, site, minimal_height) * site_position_error_tanh(env, site, std, command)


def site_at_goal(env: TaskEnv, site: str, tolerance: float, command: str = "object_pose") -> torch.Tensor:
    """(num_envs,) 1.0 where the site is within `tolerance` (m) of the commanded position: a lift's
    success, when judged at an episode's end."""
    return (site_position_error(env, site, command) < tolerance).float()
