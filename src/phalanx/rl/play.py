"""Running a trained policy: load it from a checkpoint, act deterministically, collect episode
statistics, optionally record env 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from phalanx.envs.task_env import TaskEnv
from phalanx.rl.config import PolicyCfg
from phalanx.rl.models import ActorCritic
from phalanx.rl.normalizer import EmpiricalNormalizer
from phalanx.sim.video import EnvRecorder


def load_actor(state: dict[str, Any], env: TaskEnv) -> Callable[[torch.Tensor], torch.Tensor]:
    """The checkpoint's deterministic policy: policy observations (N, obs_dim) -> mean actions."""
    cfg = state["config"]
    policy = ActorCritic.for_env(env.observation_spec, env.action_dim, PolicyCfg(**cfg["policy"])).to(env.device)
    policy.load_state_dict(state["policy"])
    normalizer = EmpiricalNormalizer(env.observation_spec["policy"][0]).to(env.device)
    normalizer.load_state_dict(state["obs_norm"])

    @torch.no_grad()
    def act(obs: torch.Tensor) -> torch.Tensor:
        return policy.act_deterministic(normalizer(obs) if cfg["empirical_normalization"] else obs)

    return act


def run_episodes(
    env: TaskEnv, act: Callable[[torch.Tensor], torch.Tensor], steps: int, recorder: EnvRecorder | None = None
) -> tuple[list[float], list[int]]:
    """Steps every env `steps` times from a reset; returns the returns and lengths of the episodes
    that finished (host reads every step: for evaluation, not training)."""
    returns: list[float] = []
    lengths: list[int] = []
    obs = env.reset()
    for _ in range(steps):
        if recorder is not None:
            recorder.capture()
        obs, _, _, _, extras = env.step(act(obs["policy"]))
        episode = extras["episode"]
        returns += episode["return"][episode["done"]].tolist()
        lengths += episode["length"][episode["done"]].tolist()
    return returns, lengths
