"""Empirical observation normalization, kept on the device."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from phalanx.dist import DistContext


class EmpiricalNormalizer(nn.Module):
    """Running mean and variance of observations, merged batch by batch (Chan et al.), and
    `forward(x) = (x - mean) / sqrt(var + eps)`. Shapes: x is (batch, dim); statistics are (dim,).
    Updates are tensor ops only: no host sync."""

    def __init__(self, dim: int, eps: float = 1e-8):
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor, dist: DistContext | None = None) -> None:
        """Folds the batch x (batch, dim) into the running statistics; with `dist`, the batches of
        all ranks together, so every rank keeps the same statistics."""
        batch_count = x.shape[0]
        batch_mean = x.mean(dim=0)
        batch_var = x.var(dim=0, unbiased=False)
        if dist is not None and dist.active:
            # Global batch moments from each rank's count, mean and mean of squares (float64).
            mean64 = batch_mean.double()
            moments = torch.cat([mean64, batch_var.double() + mean64.square()])
            dist.mean_(moments)  # equal batch sizes on every rank: the mean of means is the global mean
            batch_mean = moments[: x.shape[1]].float()
            batch_var = (moments[x.shape[1] :] - moments[: x.shape[1]].square()).clamp_min(0).float()
            batch_count *= dist.world_size
        total = self.count + batch_count
        weight = (batch_count / total).float()
        delta = batch_mean - self.mean
        # Parallel variance: M2 = M2_a + M2_b + delta^2 * n_a * n_b / (n_a + n_b), divided by n_a + n_b.
        self.var.copy_((1 - weight) * self.var + weight * batch_var + delta.square() * weight * (1 - weight))
        self.mean.add_(delta * weight)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / torch.sqrt(self.var + self.eps)
