"""The policy's action distribution: independent Gaussians with a state-independent log-std."""

from __future__ import annotations

import math

import torch

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
"""log(2 pi) / 2: a Gaussian's log-density and entropy per dimension hold it (also the update's loss kernel)."""


class DiagonalGaussian:
    """Gaussians of per-sample means (N, A) and one log standard deviation per action dimension
    (A,). Written out rather than `torch.distributions.Normal` over an expanded scale: the
    log-probability needs half the batch-sized kernels and the entropy none, and a small policy's
    update is bound by kernel launches, not arithmetic."""

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor):
        self.mean = mean
        self.log_std = log_std

    @property
    def stddev(self) -> torch.Tensor:
        """(N, A) standard deviations."""
        return self.log_std.exp().expand_as(self.mean)

    def sample(self, noise: torch.Tensor) -> torch.Tensor:
        """mean + std * noise, for standard normal noise (N, A)."""
        return self.mean + self.log_std.exp() * noise

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """(N,) log-density of actions (N, A), summed over the action dimensions."""
        z = (actions - self.mean) * torch.exp(-self.log_std)
        return -0.5 * z.square().sum(dim=-1) - (self.log_std.sum() + self.mean.shape[-1] * HALF_LOG_2PI)

    def entropy(self) -> torch.Tensor:
        """() entropy summed over the action dimensions; the same for every sample."""
        return self.log_std.sum() + self.mean.shape[-1] * (0.5 + HALF_LOG_2PI)
