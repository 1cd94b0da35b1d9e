"""The contract between phalanx environments and learners."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import torch


class VecEnv(abc.ABC):
    """A batch of `num_envs` environments stepped together on one device: everything a learner
    (`phalanx.training.trainer.Trainer`) uses of an env.

    All tensors live on `device` and lead with `num_envs`. Done envs reset automatically inside
    `step`; nothing in `step` synchronizes with the host.
    """

    num_envs: int
    """Number of environments."""
    device: torch.device
    """The torch device of every tensor going in and out."""
    observation_spec: dict[str, tuple[int, ...]]
    """Observation group name -> shape of one env's observation, e.g. {"policy": (60,)}; a "critic"
    group, if there is one, is the critic's (privileged). Vectors are float32; images (H, W, C)
    float32 or, for RGB, uint8."""
    obs: dict[str, torch.Tensor]
    """The current observations (group -> (num_envs, *shape)), as the last `reset` or `step`
    returned them."""
    action_dim: int
    """Size of one env's action vector."""
    max_episode_length: int
    """Episode time limit in env steps."""
    step_dt: float
    """Seconds of simulated time per env step."""
    capture: bool = False
    """Whether `step` replays a CUDA graph (its outputs are then static buffers and a learner may
    record its own work around it as graphs too)."""
    reset_pending: bool = False
    """Whether the env waits for its first `reset` (made with `reset=False`): `obs` are
    placeholders of the right shapes, and the reset may take long (a `TaskEnv`'s traces its
    compiled step), so a learner may start work to run beside it."""
    reward_names: list[str] = []  # noqa: RUF012 (read-only default: no terms)
    """The reward terms of `extras["episode"]["terms"]` (term name -> (num_envs,) episode sum), in
    order."""
    metric_names: list[str] = []  # noqa: RUF012
    """The metrics of `extras["episode"]["metrics"]` (name -> (num_envs,) mean over the episode's
    steps, or its last value), in order."""

    action_clip: float | None = None
    """The bound the env clamps each action to, [-action_clip, action_clip]; None: none."""
    episode_length: torch.Tensor
    """(num_envs,) long: env steps into each env's current episode; writing it (rsl_rl's random
    initial episode lengths) brings each env's time limit closer."""
    cfg: Any = None
    """The env's configuration (a `TaskEnv`'s `TaskCfg`), for a library to store with its run."""

    @abc.abstractmethod
    def reset(self) -> dict[str, torch.Tensor]:
        """Resets every env and returns the observations: group -> (num_envs, *shape)."""

    @abc.abstractmethod
    def step(
        self, actions: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """Applies `actions` (num_envs, action_dim) and advances every env by one step; the returned
        tensors may be buffers the next call overwrites (a captured CUDA graph's): copy what you keep.

        Returns:
            obs: group -> (num_envs, *shape), after the auto-reset of done envs.
            reward: (num_envs,) float.
            terminated: (num_envs,) bool, the episode ended in a terminal state (no bootstrap).
            truncated: (num_envs,) bool, the episode hit a time limit (bootstrap from final_obs).
            extras: "final_obs" (observations before the auto-reset); "episode" ("done", and where it is
                True "return", "length", "terms", "metrics"); "log" (device scalars logged as env/NAME).
        """

    def randomize_time_limits(self) -> None:  # noqa: B027 (optional: this default does nothing)
        """Ends each env's current episode at a random time limit, 1 to `max_episode_length` env
        steps from its start (uniform), and every later one at `max_episode_length`: episodes
        that end only by time out then end spread over time (a learner calls it once, after the
        first reset). Returns and metrics of a cut episode cover the steps it ran. An env without
        time limits keeps its episodes as they are (this default)."""

    @property
    def invalid_resets(self) -> torch.Tensor:
        """Device scalar: envs reset so far because their simulation broke (no host sync)."""
        return torch.zeros((), dtype=torch.long, device=self.device)

    @property
    def nonfinite_actions(self) -> torch.Tensor:
        """Device scalar: env steps so far (in this process) whose action held a NaN or inf, applied as 0."""
        return torch.zeros((), dtype=torch.long, device=self.device)

    def report_invalid(self) -> list[str]:
        """Host-side lines on those resets, by reason, with what to change, and on non-finite
        actions (once per iteration)."""
        return []

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything that decides the next steps (for an exact resume): tensors, numbers,
        strings, lists and dicts only (checkpoints load with weights_only=True)."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a `state_dict` in place; the envs continue exactly where they were saved."""

    def manual_seed(self, seed: int) -> None:
        """Reseeds the env's random numbers (initial states, events): what it draws from now on,
        the next `reset` included, follows `seed`."""
        raise NotImplementedError(f"{type(self).__name__} cannot be reseeded")

    def watch_action_std(self, std: Callable[[], torch.Tensor]) -> None:  # noqa: B027 (optional: does nothing)
        """Another library's learner hands over its policy's action std (a device tensor over the
        action dimensions); an env that logs the run's metrics (training's `MeteredEnv`) logs its
        mean each iteration, any other (this default) ignores it."""
