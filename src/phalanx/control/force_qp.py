"""The force-distribution QP of a legged robot's body controller: ground reaction forces f
(feet x 3, world frame) that best produce a desired body wrench,

    minimize |G f - w|^2_S + r |f|^2   subject to  |f_x|, |f_y| <= mu f_z,  0 <= f_z <= f_max,

with G = [I ... I; [p_1]x ... [p_k]x] (p_i: foot i relative to the center of mass) and f_max = 0
for a swing foot (its pyramid then forces f = 0), in `BatchedQP`'s form (H, g, A, l, u)."""

# The QP literature's names (H, A, l, u) read better here than PEP 8's.
# ruff: noqa: N806, E741

from __future__ import annotations

import torch


def skew(p: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) the cross-product matrices [p]x of (..., 3) vectors: [p]x v = p x v."""
    zero = torch.zeros_like(p[..., 0])
    x, y, z = p.unbind(-1)
    return torch.stack((zero, -z, y, z, zero, -x, -y, x, zero), dim=-1).unflatten(-1, (3, 3))


def force_bounds(stance: torch.Tensor, f_max: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """l and u (..., 5k) of the rows of `ForceDistributionQP.A` for feet standing where `stance`
    (..., k) is True: the 4k friction rows at most 0, then 0 <= f_z <= `f_max` (0 for a foot in
    the air, so that its pyramid holds it at f = 0)."""
    upper = torch.where(stance, f_max, 0.0).to(dtype)
    friction = torch.zeros(*stance.shape[:-1], 4 * stance.shape[-1], dtype=dtype, device=stance.device)
    return torch.cat((friction - float("inf"), torch.zeros_like(upper)), -1), torch.cat((friction, upper), -1)


class ForceDistributionQP:
    """Builds the QP of each of B robots with `num_feet` feet (k), from constants made once, so a
    call is graph-safe device work. Friction pyramids of slope `mu`, normal forces up to `f_max`
    (N) on standing feet, wrench errors weighted by `wrench_weights` (force, then torque), |f|^2
    by `regularization`."""

    def __init__(
        self,
        num_feet: int,
        mu: float,
        f_max: float,
        wrench_weights: tuple[float, ...] = (1.0, 1.0, 1.0, 10.0, 10.0, 10.0),
        regularization: float = 1e-3,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ):
        k = num_feet
        self.f_max = f_max
        self.eye = torch.eye(3, dtype=dtype, device=device)
        self.weights = torch.tensor(wrench_weights, dtype=dtype, device=device)
        self.regularization = regularization * torch.eye(3 * k, dtype=dtype, device=device)
        # One foot's rows: +-f_x - mu f_z <= 0, +-f_y - mu f_z <= 0, then 0 <= f_z <= f_max.
        pyramid = torch.tensor([[1, 0, -mu], [-1, 0, -mu], [0, 1, -mu], [0, -1, -mu]], dtype=dtype, device=device)
        self.A = torch.zeros(5 * k, 3 * k, dtype=dtype, device=device)
        for i in range(k):
            self.A[4 * i : 4 * i + 4, 3 * i : 3 * i + 3] = pyramid
            self.A[4 * k + i, 3 * i + 2] = 1.0

    def __call__(
        self, feet: torch.Tensor, wrench: torch.Tensor, stance: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """`feet` (B, k, 3) positions relative to the center of mass (world axes, m), `wrench`
        (B, 6) the desired force (N) and torque (N m) about the center of mass, `stance` (B, k)
        bool. Returns H (B, 3k, 3k), g (B, 3k), A (5k, 3k), one matrix for every problem (4k
        friction rows, then k normal-force rows), l and u (B, 5k)."""
        B, k, _ = feet.shape
        G = torch.cat((self.eye.expand(B, k, 3, 3), skew(feet)), dim=-2)  # (B, k, 6, 3): foot i's block
        G = G.permute(0, 2, 1, 3).reshape(B, 6, 3 * k)
        S = self.weights
        H = 2.0 * (G.mT @ (S[:, None] * G) + self.regularization)
        g = -2.0 * (G.mT @ (S * wrench)[..., None]).squeeze(-1)
        return H, g, self.A, *force_bounds(stance, self.f_max, H.dtype)


def force_distribution_qp(
    feet: torch.Tensor,
    wrench: torch.Tensor,
    stance: torch.Tensor,
    mu: float,
    f_max: float,
    wrench_weights: tuple[float, ...] = (1.0, 1.0, 1.0, 10.0, 10.0, 10.0),
    regularization: float = 1e-3,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """`ForceDistributionQP(...)(feet, wrench, stance)` for one batch of problems, its constants
    built for this call (in `wrench`'s dtype and device)."""
    qp = ForceDistributionQP(feet.shape[1], mu, f_max, wrench_weights, regularization, wrench.dtype, wrench.device)
    return qp(feet, wrench, stance.to(wrench.device))
