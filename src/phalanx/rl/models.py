"""Gaussian actor-critic MLPs with a state-independent log standard deviation, optionally seeing
an image group through a convolutional encoder."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from phalanx.rl.cfg import PolicyCfg

from phalanx.core.errors import ConfigError
from phalanx.rl.gaussian import DiagonalGaussian
from phalanx.rl.image_encoder import ImageEncoder

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


def _group_shape(
    observation_spec: dict[str, tuple[int, ...]], group: str, dims: int, what: str, field: str
) -> tuple[int, ...]:
    """The shape of observation `group`, which must have `dims` dimensions (`what` says so in the
    ConfigError on `field`, the flag that named the group)."""
    shape = observation_spec.get(group)
    if shape is None or len(shape) != dims:
        got = "no such group" if shape is None else f"shape {shape}"
        raise ConfigError(f"{group!r}: expected {what}, got {got}; the env's groups: {observation_spec}", field)
    return shape


class ActorCritic(nn.Module):
    """actor(obs[, image]) -> action mean; critic(critic_obs[, image]) -> value; one learned
    log-std per action. With encoders, the image's features join the vector observations: the
    actor's and the critic's own, or one encoder both train (the same module passed twice). With
    `image_targets` (a width), a linear head predicts that many values from the actor's image
    features (trained by a supervised loss on an observation group, `PolicyCfg.image_targets`) and
    the actor reads the prediction, detached, instead of the features."""

    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_dim: int,
        actor_hidden: tuple[int, ...],
        critic_hidden: tuple[int, ...],
        activation: str,
        init_noise_std: float,
        actor_encoder: ImageEncoder | None = None,
        critic_encoder: ImageEncoder | None = None,
        image_targets: int = 0,
    ):
        super().__init__()
        self.actor_encoder, self.critic_encoder = actor_encoder, critic_encoder
        self.target_head = None
        if image_targets:
            if actor_encoder is None:
                raise ConfigError("image targets are predicted by the actor's image encoder: it has none", "policy")
            self.target_head = nn.Linear(actor_encoder.features, image_targets)
        actor_features = 0 if actor_encoder is None else image_targets or actor_encoder.features
        critic_features = 0 if critic_encoder is None else critic_encoder.features
        self.actor = mlp(obs_dim + actor_features, actor_hidden, action_dim, activation)
        self.critic = mlp(critic_obs_dim + critic_features, critic_hidden, 1, activation)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(torch.log(torch.tensor(init_noise_std)))))

    @classmethod
    def for_env(cls, observation_spec: dict[str, tuple[int, ...]], action_dim: int, cfg: PolicyCfg) -> ActorCritic:
        """Networks sized for an env's observation groups and action dimension; with
        `cfg.image_group`, convolutional encoders for that group's images."""
        for group in {"policy", critic_group(observation_spec)}:
            if len(observation_spec[group]) != 1:
                raise ConfigError(
                    f"the actor-critic reads vectors; group {group!r} is of shape {observation_spec[group]} "
                    "(put images in a group of their own and name it with --policy.image-group)",
                    f"env.observations.{group}",
                )
        encoders, image_targets = (None, None), 0
        if cfg.image_targets is not None:
            image_targets = _group_shape(
                observation_spec, cfg.image_targets, 1, "a vector observation group", "policy.image_targets"
            )[0]
        if cfg.image_group is not None:
            shape = _group_shape(
                observation_spec, cfg.image_group, 3, "an observation group of (H, W, C) images", "policy.image_group"
            )

            def encoder() -> ImageEncoder:
                return ImageEncoder(
                    shape, cfg.cnn_channels, cfg.cnn_kernel_sizes, cfg.cnn_strides, cfg.cnn_features,
                    ACTIVATIONS[cfg.activation],
                )  # fmt: skip

            actor_encoder = encoder()
            critic_encoder = None if not cfg.critic_image else actor_encoder if cfg.shared_encoder else encoder()
            encoders = (actor_encoder, critic_encoder)
        for group, encoder_ in zip(("policy", critic_group(observation_spec)), encoders, strict=True):
            if observation_spec[group] == (0,) and encoder_ is None:
                who = "actor" if group == "policy" else "critic"
                raise ConfigError(
                    f"the {who} would see nothing: group {group!r} has no terms and no image joins it "
                    f"(policy.image_group {cfg.image_group!r}, policy.critic_image {cfg.critic_image})",
                    f"env.observations.{group}",
                )
        return cls(
            observation_spec["policy"][0],
            observation_spec[critic_group(observation_spec)][0],
            action_dim,
            cfg.actor_hidden_dims,
            cfg.critic_hidden_dims,
            cfg.activation,
            cfg.init_noise_std,
            *encoders,
            image_targets,
        )

    @staticmethod
    def _joined(obs: torch.Tensor, features: torch.Tensor | None) -> torch.Tensor:
        return obs if features is None else torch.cat([obs, features], dim=-1)

    @staticmethod
    def _encoded(encoder: nn.Module | None, image: torch.Tensor | None) -> torch.Tensor | None:
        return None if encoder is None else encoder(image)

    def image_input(self) -> nn.Module | None:
        """The module from the image to what the actor reads of it: the encoder, and the target
        head after it when there is one (for export)."""
        if self.actor_encoder is None or self.target_head is None:
            return self.actor_encoder
        return nn.Sequential(self.actor_encoder, self.target_head)

    def distribution_and_value(
        self, obs: torch.Tensor, critic_obs: torch.Tensor, image: torch.Tensor | None = None, predict: bool = False
    ) -> tuple[DiagonalGaussian, torch.Tensor] | tuple[DiagonalGaussian, torch.Tensor, torch.Tensor | None]:
        """The policy for obs (N, obs_dim), independent Gaussians per action dimension in float32
        (the mean too, when the actor ran under autocast), and the (N,) values of critic_obs; with
        encoders both also see image (N, H, W, C), which a shared encoder encodes once. With
        `predict`, also the target head's prediction (None without one), for its loss."""
        features = self._encoded(self.actor_encoder, image)
        shared = self.critic_encoder is self.actor_encoder
        critic_features = features if shared else self._encoded(self.critic_encoder, image)
        predicted = None if self.target_head is None or features is None else self.target_head(features)
        actor_input = features if predicted is None else predicted.detach()
        mean = self.actor(self._joined(obs, actor_input)).float()
        value = self.critic(self._joined(critic_obs, critic_features)).squeeze(-1)
        dist = DiagonalGaussian(mean, self.log_std)
        return (dist, value, predicted) if predict else (dist, value)

    def value(self, critic_obs: torch.Tensor, image: torch.Tensor | None = None) -> torch.Tensor:
        """(N,) state values."""
        return self.critic(self._joined(critic_obs, self._encoded(self.critic_encoder, image))).squeeze(-1)

    def act_deterministic(self, obs: torch.Tensor, image: torch.Tensor | None = None) -> torch.Tensor:
        """(N, action_dim) the mean action, for evaluation and play."""
        return self.actor(self._joined(obs, self._encoded(self.image_input(), image)))
