"""The contract between phalanx environments and learners."""

from __future__ import annotations

import abc
from typing import Any

import torch


class VecEnv(abc.ABC):
    """A batch of `num_envs` environments stepped together on one device.

    All tensors live on `device` and lead with `num_envs`. Done envs reset automatically inside
    `step`; nothing in `step` synchronizes with the host.

    Attributes:
        num_envs: number of environments.
        device: the torch device of every tensor going in and out.
        observation_spec: observation group name -> shape of one env's observation, e.g.
            {"policy": (60,)}.
        action_dim: size of one env's action vector.
        max_episode_length: episode time limit in env steps.
        step_dt: seconds of simulated time per env step.
    """

    num_envs: int
    device: torch.device
    observation_spec: dict[str, tuple[int, ...]]
    action_dim: int
    max_episode_length: int
    step_dt: float

    @abc.abstractmethod
    def reset(self) -> dict[str, torch.Tensor]:
        """Resets every env and returns the observations: group -> (num_envs, *shape)."""

    @abc.abstractmethod
    def step(
        self, actions: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """Applies `actions` (num_envs, action_dim) and advances every env by one step.

        The returned tensors may be buffers the next call overwrites (a captured CUDA graph's
        outputs): copy what you keep across steps.

        Returns:
            obs: group -> (num_envs, *shape), after the auto-reset of done envs.
            reward: (num_envs,) float.
            terminated: (num_envs,) bool, the episode ended in a terminal state (no bootstrap).
            truncated: (num_envs,) bool, the episode hit a time limit (bootstrap from final_obs).
            extras: "final_obs": observations before the auto-reset (group -> tensor; rows of
                done envs hold their last observation); "episode": per-env statistics of the
                episodes that ended this step, valid where "done" is True: "done", "return",
                "length", "terms" (reward term name -> episode sum) and "metrics" (metric
                name -> mean over the episode's steps, or its last value); "log": scalar device
                tensors the trainer logs as env/NAME (their mean over ranks), e.g. the mean
                terrain level.
        """
