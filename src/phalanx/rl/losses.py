"""PPO's loss terms and the KL divergence that adapts its learning rate."""

from __future__ import annotations

import torch


def surrogate_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """Clipped surrogate: mean of max(-A r, -A clip(r, 1 - c, 1 + c)), r = exp(logp - logp_old)."""
    ratio = torch.exp(log_prob - old_log_prob)
    return torch.max(-advantages * ratio, -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)).mean()


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float, clipped: bool
) -> torch.Tensor:
    """Mean squared error to the returns; clipped: max of the plain and the clipped-update error."""
    if not clipped:
        return (returns - values).square().mean()
    values_clipped = old_values + (values - old_values).clamp(-clip, clip)
    return torch.max((values - returns).square(), (values_clipped - returns).square()).mean()


def gaussian_kl(mu_old: torch.Tensor, std_old: torch.Tensor, mu: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of KL(old || new) for diagonal Gaussians, summed over action dims."""
    kl = torch.log(std / std_old) + (std_old.square() + (mu_old - mu).square()) / (2.0 * std.square()) - 0.5
    return kl.sum(dim=-1).mean()
