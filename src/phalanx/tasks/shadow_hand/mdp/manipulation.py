"""Terms for an object turned in a fixed hand (in-hand reorientation, Isaac Lab's
InHandManipulationEnv in spirit): the object is the model's free body, read through `state`'s root
accessors; it should stay at a fixed `target` position (where it rests at the start) and reach
the orientation the `goal_orientation` command holds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from phalanx.envs.cfg import CommandTerm
from phalanx.envs.markers import Marker
from phalanx.envs.mdp import state
from phalanx.envs.mdp.math import matrix_from_quat, quat_apply, quat_mul, quat_unique

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


GOAL_BESIDE = 0.15
"""Metres along the world's y axis from the object that the viewer shows its goal orientation."""
CORNERS = tuple(float(s) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1) for s in (x, y, z))
"""The corners of the cube [-1, 1]^3, flattened."""


def quat_conjugate(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) the inverse rotation of unit quaternions (w, x, y, z)."""
    return torch.cat((q[..., :1], -q[..., 1:]), dim=-1)


def rotation_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(...) the angle (rad, in [0, pi]) of the rotation from unit quaternions `b` to `a`."""
    vector = quat_mul(a, quat_conjugate(b))[..., 1:]
    return 2.0 * torch.asin(vector.norm(dim=-1).clamp(max=1.0))


def random_quat(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 4) rotations uniform over SO(3) (Shoemake's method), from the env's generator."""
    u = env.uniform((env.num_envs, 3), 0.0, 1.0)
    a, b = torch.sqrt(1.0 - u[:, 0]), torch.sqrt(u[:, 0])
    t1, t2 = 2.0 * torch.pi * u[:, 1], 2.0 * torch.pi * u[:, 2]
    q = torch.stack((b * torch.cos(t2), a * torch.sin(t1), a * torch.cos(t1), b * torch.sin(t2)), dim=1)
    return quat_unique(q)


class goal_orientation(CommandTerm):  # noqa: N801 (terms are named like functions)
    """(num_envs, 4) the orientation the object should reach (w, x, y, z), uniform over all
    rotations. A new goal is drawn at every reset (and on the resampling timer, which in-hand
    tasks set beyond the episode), and each time the object comes within `success_tolerance`
    (rad) of the goal: a success, rewarded in that step (`object_goal_reached`), the goal moving on
    at its end. `successes` counts an episode's successes of the steps before, `goal_start` the
    episode step at which the current goal was set; a reset zeroes both. (Commands update after
    each reset too, so `update` must give the same result when called twice in one step.)"""

    def __init__(self, env: TaskEnv, success_tolerance: float = 0.1):
        if not success_tolerance > 0:
            raise ValueError(f"goal_orientation: success_tolerance must be positive, got {success_tolerance}")
        self.success_tolerance = success_tolerance
        self.command = torch.zeros(env.num_envs, 4, device=env.device)
        self.command[:, 0] = 1.0
        self.successes = torch.zeros(env.num_envs, device=env.device)
        self.goal_start = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)

    def resample(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self._draw(env, mask)

    def reset(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.successes.masked_fill_(mask, 0.0)
        self.goal_start.masked_fill_(mask, 0)

    def update(self, env: TaskEnv) -> None:
        reached = self.reached(env)
        self.successes += reached.float()
        self.goal_start.copy_(torch.where(reached, env.episode_length, self.goal_start))
        self._draw(env, reached)

    def reached(self, env: TaskEnv) -> torch.Tensor:
        """(num_envs,) bool: the object is within the tolerance of the goal."""
        return rotation_distance(state.root_quat_w(env), self.command) < self.success_tolerance

    def markers(self, env: TaskEnv) -> dict[str, Marker]:
        """The goal orientation as a frame of axes beside the object (15 cm along the world's y axis)."""
        at = state.root_pos_w(env) + env.constant((0.0, GOAL_BESIDE, 0.0))
        return {"goal": Marker("axes", at, self.command, torch.full_like(at, 0.06), (240, 190, 30))}

    def _draw(self, env: TaskEnv, mask: torch.Tensor) -> None:
        self.command.copy_(torch.where(mask[:, None], random_quat(env), self.command))


def _goal(env: TaskEnv, command: str) -> goal_orientation:
    term = env.command_term(command)
    if not isinstance(term, goal_orientation):
        raise ValueError(f"task {env.cfg.name!r}: command {command!r} is not a goal_orientation")
    return term


def _offset(env: TaskEnv, target: tuple[float, float, float]) -> torch.Tensor:
    return state.root_pos_w(env) - env.constant(target)


# ----------------------------------------------------------------------------- observations


def object_pos_rel(env: TaskEnv, target: tuple[float, float, float]) -> torch.Tensor:
    """(num_envs, 3) the object's position relative to `target` (world axes, m)."""
    return _offset(env, target)


def _corners(env: TaskEnv, quat: torch.Tensor, half_size: float) -> torch.Tensor:
    """(num_envs, 8, 3) the corners of a cube of `half_size` (m) about its centre, turned by `quat`."""
    corners = half_size * env.constant(CORNERS).view(8, 3)  # in the cube's frame
    q = quat[:, None].expand(-1, 8, 4).reshape(-1, 4)
    return quat_apply(q, corners.repeat(env.num_envs, 1)).view(env.num_envs, 8, 3)


def object_keypoints(env: TaskEnv, target: tuple[float, float, float], half_size: float) -> torch.Tensor:
    """(num_envs, 24) the 8 corners of a cube of `half_size` (m) posed as the object, relative to
    `target` (world axes, m): its pose as points, which images show (the keypoints Isaac Lab's
    vision variant predicts)."""
    points = _corners(env, state.root_quat_w(env), half_size)
    return (points + _offset(env, target)[:, None]).flatten(1)


def goal_keypoints(env: TaskEnv, half_size: float, command: str = "goal") -> torch.Tensor:
    """(num_envs, 24) the corners of a cube of `half_size` (m) centred at 0 and turned to the goal,
    in `object_keypoints`' order: where the object's corners should be relative to its centre (the
    goal as Isaac Lab's vision variant gives it to the policy, comparable with predicted keypoints)."""
    return _corners(env, _goal(env, command).command, half_size).flatten(1)


def object_quat(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 4) the object's orientation (w, x, y, z), world frame."""
    return state.root_quat_w(env)


def object_goal_quat_diff(env: TaskEnv, command: str = "goal") -> torch.Tensor:
    """(num_envs, 4) the rotation from the goal to the object: object x goal^-1 (identity at the goal)."""
    return quat_mul(state.root_quat_w(env), quat_conjugate(_goal(env, command).command))


def object_rotation(env: TaskEnv) -> torch.Tensor:
    """(num_envs, 9) the object's orientation as a rotation matrix (world frame, row-major). Unlike
    its quaternion, whose sign the simulation's history sets (q and -q turn alike), one value per
    orientation: what an observer of the object, a camera, can tell."""
    return matrix_from_quat(state.root_quat_w(env)).flatten(-2)


def object_goal_rotation(env: TaskEnv, command: str = "goal") -> torch.Tensor:
    """(num_envs, 9) `object_goal_quat_diff` as a rotation matrix (row-major): one value per rotation."""
    return matrix_from_quat(object_goal_quat_diff(env, command)).flatten(-2)


# ----------------------------------------------------------------------------- rewards, terminations, metrics


def object_distance(env: TaskEnv, target: tuple[float, float, float]) -> torch.Tensor:
    """(num_envs,) distance of the object from `target` (m)."""
    return _offset(env, target).norm(dim=1)


def object_rotation_error(env: TaskEnv, command: str = "goal") -> torch.Tensor:
    """(num_envs,) the angle between the object's orientation and the goal (rad)."""
    return rotation_distance(state.root_quat_w(env), _goal(env, command).command)


def object_rotation_alignment(env: TaskEnv, command: str = "goal", eps: float = 0.1) -> torch.Tensor:
    """(num_envs,) 1 / (rotation error + eps): grows steeply near the goal (Isaac Lab's rot_rew)."""
    return 1.0 / (object_rotation_error(env, command) + eps)


def object_goal_reached(env: TaskEnv, command: str = "goal") -> torch.Tensor:
    """(num_envs,) 1.0 where the object is within the goal's success tolerance (Isaac Lab's
    reach-goal bonus); the goal moves on at the end of this step."""
    return _goal(env, command).reached(env).float()


def object_dropped(env: TaskEnv, target: tuple[float, float, float], distance: float) -> torch.Tensor:
    """(num_envs,) bool: the object is farther than `distance` (m) from `target` (it fell)."""
    return object_distance(env, target) > distance


def goal_time_out(env: TaskEnv, time_s: float, command: str = "goal") -> torch.Tensor:
    """(num_envs,) bool: the goal was not reached within `time_s` (s) of being set (OpenAI's and
    Isaac Lab's per-goal timeout: each success restarts the clock). Use it as a time-out."""
    if not time_s > 0:
        raise ValueError(f"goal_time_out: time_s must be positive, got {time_s}")
    goal = _goal(env, command)
    limit = math.ceil(time_s / env.step_dt - 1e-6)
    return (env.episode_length - goal.goal_start >= limit) & ~goal.reached(env)


def successes_reached(env: TaskEnv, count: int, command: str = "goal") -> torch.Tensor:
    """(num_envs,) bool: this step's success is the episode's `count`th (the episode is won;
    OpenAI's and Isaac Lab's max_consecutive_success). Use it as a time-out."""
    if not count >= 1:
        raise ValueError(f"successes_reached: count must be at least 1, got {count}")
    return consecutive_successes(env, command) >= count


def consecutive_successes(env: TaskEnv, command: str = "goal") -> torch.Tensor:
    """(num_envs,) goals reached so far in the episode, this step's included (log it with `final`:
    the episode's count)."""
    goal = _goal(env, command)
    return goal.successes + goal.reached(env).float()
