"""Two distributional critics (C51) over a fixed return support, their categorical projection
and their cross-entropy loss: what FastTD3 and FastSAC share (`phalanx.rl.td3`, `phalanx.rl.sac`)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from phalanx.rl.models import mlp

_FIXED_POINT = 2.0**40
"""`project`'s unit: its shares are summed as integer multiples of 1 / _FIXED_POINT."""


class TwinCritic(nn.Module):
    """Two critics (obs, action) -> logits over the return support `support` (num_atoms,)."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: tuple[int, ...], v_min: float, v_max: float, atoms: int):
        super().__init__()
        self.q1 = mlp(obs_dim + action_dim, hidden, atoms, "relu")
        self.q2 = mlp(obs_dim + action_dim, hidden, atoms, "relu")
        self.register_buffer("support", torch.linspace(v_min, v_max, atoms))

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, actions], dim=-1)
        return self.q1(x), self.q2(x)

    def value(self, logits: torch.Tensor) -> torch.Tensor:
        """The expected return of a distribution's logits (batch, atoms) -> (batch,), in float32."""
        return (functional.softmax(logits.float(), dim=-1) * self.support).sum(dim=-1)

    def q_value(self, obs: torch.Tensor, actions: torch.Tensor, clipped_double_q: bool) -> torch.Tensor:
        """The smaller (clipped double Q) or the mean of the two critics' expected returns, (batch,)."""
        q1, q2 = self(obs, actions)
        v1, v2 = self.value(q1), self.value(q2)
        return torch.minimum(v1, v2) if clipped_double_q else (v1 + v2) / 2


def project(
    probs: torch.Tensor, support: torch.Tensor, reward: torch.Tensor, bootstrap: torch.Tensor, discount: torch.Tensor
) -> torch.Tensor:
    """The categorical projection of C51: the distribution `probs` (batch, atoms) over `support`
    (atoms,), shifted to reward + bootstrap * discount * z and clamped to the support, spread back
    onto its atoms (each moved atom splits its mass between the two nearest, by distance).
    Shape: (batch, atoms); each row sums to 1."""
    atoms = support.shape[0]
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (atoms - 1)
    target = (reward[:, None] + (bootstrap * discount)[:, None] * support).clamp(v_min, v_max)
    # The moved atom's position in atoms, in [0, atoms - 1] (clamped: at v_max the division can
    # round one float step past the last atom).
    b = ((target - v_min) / delta).clamp(0, atoms - 1)
    lower, upper = b.floor().long(), b.ceil().long()
    # On an atom exactly (lower == upper) the whole mass goes to it: widen the pair by one.
    on_atom = lower == upper
    lower = torch.where(on_atom & (upper > 0), lower - 1, lower)
    upper = torch.where(on_atom & (lower == upper), upper + 1, upper)
    # Summed in fixed point: each share rounded to a multiple of 2^-40 (far below what a float32
    # target can hold of a share) and added as int64, whose sums come out the same in any order
    # (a GPU's float atomics do not): training repeats bit for bit on a GPU as on the CPU.
    out = torch.zeros(probs.shape, dtype=torch.int64, device=probs.device)
    out.scatter_add_(1, lower, (probs * (upper.float() - b) * _FIXED_POINT).round().long())
    out.scatter_add_(1, upper, (probs * (b - lower.float()) * _FIXED_POINT).round().long())
    return out.to(probs.dtype) / _FIXED_POINT


def critic_loss(
    critic: TwinCritic,
    target_critic: TwinCritic,
    batch: dict,
    next_actions: torch.Tensor,
    reward: torch.Tensor,
    clipped_double_q: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both critics' cross-entropy to the target critics' distributions at (next obs,
    `next_actions`), projected through `reward` (the batch's, or shifted by an entropy bonus) and
    the batch's bootstrap and discount; with clipped double Q both learn the target whose expected
    value is smaller. `batch`: `ReplayBuffer.sample`'s with normalized obs ("critic": the critics'
    group). Returns the loss and the target's mean value."""
    with torch.no_grad():
        logits1, logits2 = target_critic(batch["next_obs"]["critic"], next_actions)
        support = target_critic.support
        args = (support, reward, batch["bootstrap"], batch["discount"])
        target1 = project(functional.softmax(logits1.float(), -1), *args)
        target2 = project(functional.softmax(logits2.float(), -1), *args)
        value1, value2 = (target1 * support).sum(-1), (target2 * support).sum(-1)
        if clipped_double_q:
            target1 = target2 = torch.where((value1 < value2)[:, None], target1, target2)
    q1, q2 = critic(batch["obs"]["critic"], batch["actions"])
    # Cross-entropy H(target, q) = -sum_z target(z) log softmax(q)(z), per critic, batch mean.
    loss1 = -(target1 * functional.log_softmax(q1.float(), -1)).sum(-1).mean()
    loss2 = -(target2 * functional.log_softmax(q2.float(), -1)).sum(-1).mean()
    return loss1 + loss2, torch.minimum(value1, value2).mean()
