"""Curriculum terms: run at every reset, before the resetting envs lose their episode; each
returns its current level as a scalar device tensor (see `CurriculumTermCfg`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


def command_velocity_levels(
    env: TaskEnv,
    mask: torch.Tensor,
    command: str,
    reward: str,
    threshold: float = 0.8,
    step: float = 0.5,
    limit: tuple[float, float] = (-2.0, 2.0),
) -> torch.Tensor:
    """legged_gym's command curriculum: once every episode length of env steps (`env.step_count`),
    if the envs resetting then earned on average more than `threshold` of the most the `reward`
    term (values at most 1) gives over a full episode, the forward-speed range of `command` (a
    `uniform_velocity`) widens by `step` on both sides, up to `limit`, never narrowing. Returns
    the range's upper end. Graph-safe: the decision stays on the device."""
    term = env.command_term(command)
    ranges = term.ranges
    # The most the term can sum to over a full episode (its values are at most 1, e.g. exp tracking).
    best = (
        env.cfg.rewards[reward].weight * env.max_episode_length * (env.step_dt if env.cfg.reward_scale_by_dt else 1.0)
    )
    count = mask.sum()
    mean = torch.where(mask, env.episode_reward_sum(reward), 0.0).sum() / count.clamp(min=1)
    due = env.step_count % env.max_episode_length == 0
    harder = due & (count > 0) & (mean > threshold * best)
    low = torch.minimum(ranges[0, 0], (ranges[0, 0] - step).clamp(min=limit[0]))  # never narrower
    high = torch.maximum(ranges[0, 1], (ranges[0, 1] + step).clamp(max=limit[1]))
    wider = torch.stack([low, high])
    ranges[0] = torch.where(harder, wider, ranges[0])
    return ranges[0, 1]


def reward_weight(env: TaskEnv, mask: torch.Tensor, reward: str, weight: float, num_steps: int) -> torch.Tensor:
    """Isaac Lab's modify_reward_weight: from `num_steps` env steps on (`env.step_count`, counted
    once per step of all envs), the reward term `reward` weighs `weight` instead of its configured
    weight (e.g. action penalties that grow once a task is learned). Returns the weight in force.
    Graph-safe: the switch stays on the device."""
    del mask
    index = env.rewards.names.index(reward)
    scale = env.step_dt if env.cfg.reward_scale_by_dt else 1.0
    weights = env.rewards.weights
    weights[index] = torch.where(env.step_count >= num_steps, weight * scale, weights[index])
    return weights[index] / scale
