"""Gaussian actor-critic MLPs with a state-independent log standard deviation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.distributions import Normal

if TYPE_CHECKING:
    from phalanx.rl.config import PolicyCfg

from phalanx.errors import ConfigError

ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh, "selu": nn.SELU, "silu": nn.SiLU}


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int, activation: str) -> nn.Sequential:
    """Linear layers of the given widths with `activation` between them (none after the last)."""
    if activation not in ACTIVATIONS:
        raise ConfigError(f"got {activation!r}; allowed: {', '.join(ACTIVATIONS)}", "policy.activation")
    layers: list[nn.Module] = []
    dims = (in_dim, *hidden)
    for a, b in zip(dims[:-1], dims[1:], strict=True):
        layers += [nn.Linear(a, b), ACTIVATIONS[activation]()]
    layers.append(nn.Linear(dims[-1], out_dim))
    return nn.Sequential(*layers)


def critic_group(observation_spec: dict[str, tuple[int, ...]]) -> str:
    """The observation group the critic sees: "critic" (privileged) if the env has one, else "policy"."""
    return "critic" if "critic" in observation_spec else "policy"


class ActorCritic(nn.Module):
    """actor(obs) -> action mean; critic(critic_obs) -> value; one learned log-std per action."""

    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_dim: int,
        actor_hidden: tuple[int, ...],
        critic_hidden: tuple[int, ...],
        activation: str,
        init_noise_std: float,
    ):
        super().__init__()
        self.actor = mlp(obs_dim, actor_hidden, action_dim, activation)
        self.critic = mlp(critic_obs_dim, critic_hidden, 1, activation)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(torch.log(torch.tensor(init_noise_std)))))

    @classmethod
    def for_env(cls, observation_spec: dict[str, tuple[int, ...]], action_dim: int, cfg: PolicyCfg) -> ActorCritic:
        """Networks sized for an env's observation groups and action dimension."""
        for group in {"policy", critic_group(observation_spec)}:
            if len(observation_spec[group]) != 1:
                raise ConfigError(
                    f"the actor-critic reads vectors; group {group!r} is of shape {observation_spec[group]} "
                    "(images need a convolutional policy, which phalanx does not have yet)",
                    f"env.observations.{group}",
                )
        obs_dim = observation_spec["policy"][0]
        critic_dim = observation_spec[critic_group(observation_spec)][0]
        return cls(
            obs_dim,
            critic_dim,
            action_dim,
            cfg.actor_hidden_dims,
            cfg.critic_hidden_dims,
            cfg.activation,
            cfg.init_noise_std,
        )

    def distribution(self, obs: torch.Tensor) -> Normal:
        """The policy for obs (N, obs_dim): independent Gaussians per action dimension, in float32
        (the mean too, when the actor ran under autocast)."""
        mean = self.actor(obs).float()
        return Normal(mean, self.log_std.exp().expand_as(mean), validate_args=False)  # validation syncs the host

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """(N,) state values."""
        return self.critic(critic_obs).squeeze(-1)

    def act_deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """(N, action_dim) the mean action, for evaluation and play."""
        return self.actor(obs)
