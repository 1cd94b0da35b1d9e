"""Small helpers shared by tests."""

from __future__ import annotations

import torch

import phalanx


def make_cpu(task, num_envs: int = 8, seed: int = 0, **kwargs):
    return phalanx.make(task, num_envs=num_envs, device="cpu", seed=seed, verbose=False, **kwargs)


def random_actions(env, generator: torch.Generator) -> torch.Tensor:
    return torch.rand(env.num_envs, env.action_dim, generator=generator) * 2 - 1
