"""PPO's loss terms and the KL divergence that adapts its learning rate."""

from __future__ import annotations

import torch


def _mean_of_larger(term: torch.Tensor, clipped_term: torch.Tensor, inside: torch.Tensor | None = None) -> torch.Tensor:
    """mean(max(term, clipped_term)) with `torch.maximum`'s and `clamp`'s gradient, in a third of
    their kernels (a small policy's update is bound by kernel launches).

    `clipped_term` is `term` computed through a clamp and carries no gradient: inside the clamp's
    range it equals `term` (`inside`: where that holds only up to rounding), outside it is constant.
    So the gradient is `term`'s wherever `term` is the larger or the clamp is inside, else 0."""
    larger = term >= clipped_term
    if inside is not None:
        larger |= inside
    return torch.where(larger, term, clipped_term).mean()


def surrogate_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """Clipped surrogate: mean of max(-A r, -A clip(r, 1 - c, 1 + c)), r = exp(logp - logp_old)."""
    ratio = torch.exp(log_prob - old_log_prob)
    with torch.no_grad():
        clipped = -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)
    return _mean_of_larger(-advantages * ratio, clipped)


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float, clipped: bool
) -> torch.Tensor:
    """Mean squared error to the returns; clipped: max of the plain and the clipped-update error."""
    error = (values - returns).square()
    if not clipped:
        return error.mean()
    with torch.no_grad():
        change = values - old_values
        clipped_error = (old_values + change.clamp(-clip, clip) - returns).square()
        inside = change.abs() <= clip
    return _mean_of_larger(error, clipped_error, inside)


def gaussian_kl(mu_old: torch.Tensor, std_old: torch.Tensor, mu: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of KL(old || new) for diagonal Gaussians, summed over action dims."""
    kl = torch.log(std / std_old) + (std_old.square() + (mu_old - mu).square()) / (2.0 * std.square()) - 0.5
    return kl.sum(dim=-1).mean()
