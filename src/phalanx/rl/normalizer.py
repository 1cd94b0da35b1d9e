"""Empirical observation normalization, kept on the device."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from phalanx.dist import DistContext


class EmpiricalNormalizer(nn.Module):
    """Running mean and variance of observations and `forward(x) = (x - mean) / sqrt(var + eps)`.
    Shapes: x is (batch, dim); statistics are (dim,). Batches are `accumulate`d (float64 sums) and
    folded into the statistics by `commit` (Chan et al.'s parallel merge), which with several
    ranks first sums every rank's batches: one collective per commit, and every rank keeps the
    same statistics. Tensor ops only: no host sync."""

    def __init__(self, dim: int, eps: float = 1e-8):
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        # Pending batches: count, sum and sum of squares (not part of the saved state).
        self.register_buffer("pending", torch.zeros(1 + 2 * dim, dtype=torch.float64), persistent=False)

    @torch.no_grad()
    def accumulate(self, x: torch.Tensor) -> None:
        """Adds the batch x (batch, dim) to the pending batches; `forward` is unchanged until `commit`."""
        x64 = x.double()
        self.pending[0] += x.shape[0]
        self.pending[1:].add_(torch.cat([x64.sum(dim=0), x64.square().sum(dim=0)]))

    @torch.no_grad()
    def commit(self, dist: DistContext | None = None) -> None:
        """Folds the pending batches (of all ranks, with `dist`) into the statistics and clears them."""
        if dist is not None and dist.active:
            dist.sum_(self.pending)
        dim = self.mean.shape[0]
        batch_count = self.pending[0]
        divisor = batch_count.clamp_min(1)  # no pending batch: zero moments and zero weight
        batch_mean64 = self.pending[1 : 1 + dim] / divisor
        batch_var = (self.pending[1 + dim :] / divisor - batch_mean64.square()).clamp_min(0).float()
        batch_mean = batch_mean64.float()
        total = self.count + batch_count
        weight = (batch_count / total.clamp_min(1)).float()
        delta = batch_mean - self.mean
        # Parallel variance: M2 = M2_a + M2_b + delta^2 * n_a * n_b / (n_a + n_b), divided by n_a + n_b.
        self.var.copy_((1 - weight) * self.var + weight * batch_var + delta.square() * weight * (1 - weight))
        self.mean.add_(delta * weight)
        self.count.copy_(total)
        self.pending.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / torch.sqrt(self.var + self.eps)
