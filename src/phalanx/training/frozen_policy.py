"""Frozen actors for hierarchical tasks: a trained policy (or an untrained one of the same
shape) as a module from observations to mean actions, with its observation normalizer folded in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from phalanx.core.errors import ConfigError
from phalanx.rl.cfg import PolicyCfg
from phalanx.rl.models import mlp
from phalanx.rl.normalizer import EmpiricalNormalizer
from phalanx.training.checkpoint import load_weights, stored_cfg

ActorFactory = Callable[[int, int, torch.device, int], nn.Module]
"""(obs_dim, action_dim, device, seed) -> a frozen module: observations -> mean actions."""


class FrozenActor(nn.Module):
    """mean action = actor(normalizer(obs)); no gradients."""

    def __init__(self, actor: nn.Sequential, normalizer: EmpiricalNormalizer | None):
        super().__init__()
        self.actor, self.normalizer = actor, normalizer
        self.requires_grad_(False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(obs if self.normalizer is None else self.normalizer(obs))


def untrained_actor(policy: PolicyCfg, normalize: bool) -> ActorFactory:
    """An untrained actor of the given size (for listing, tests and benchmarks): the same
    weights for the same seed."""

    def build(obs_dim: int, action_dim: int, device: torch.device, seed: int) -> nn.Module:
        with torch.random.fork_rng(devices=[]):  # the CPU generator only, restored after
            torch.default_generator.manual_seed(seed)
            actor = mlp(obs_dim, policy.actor_hidden_dims, action_dim, policy.activation)
        return FrozenActor(actor, EmpiricalNormalizer(obs_dim) if normalize else None).to(device)

    return build


def checkpoint_actor(state: dict[str, Any], source: str) -> ActorFactory:
    """The actor of a checkpoint written by `phalanx train` (`source` names it in errors)."""
    config = state["config"]
    policy = stored_cfg(PolicyCfg, config["policy"], "config.policy", source)
    if policy.image_group is not None:
        raise ConfigError(f"{source}: its policy reads images ({policy.image_group!r}); a frozen actor reads vectors")

    def build(obs_dim: int, action_dim: int, device: torch.device, seed: int) -> nn.Module:
        module = untrained_actor(policy, config["empirical_normalization"])(
            obs_dim, action_dim, torch.device("cpu"), seed
        )
        weights = {k.removeprefix("actor."): v for k, v in state["policy"].items() if k.startswith("actor.")}
        where = f"{source} on its task's observations ({obs_dim})"
        load_weights(module.actor, weights, f"{where}: the actor")
        if module.normalizer is not None:
            load_weights(module.normalizer, state["obs_norm"], f"{where}: the normalizer")
        return module.to(device)

    return build
