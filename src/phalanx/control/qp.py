"""A batched dense QP solver for thousands of small problems at once:

    minimize 1/2 x'Hx + g'x  subject to  l <= Ax <= u        (per problem; l = u: an equality)

OSQP's ADMM (Stellato et al. 2020) on a fixed schedule, so a solve runs inside a captured CUDA
graph: no host reads, no data-dependent loop. After optional Ruiz scaling (`scaling_iterations`),
`iterations` steps run as torch operations or one Warp kernel (`QPSettings.backend`); rho adapts
every `adapt_every` steps; solutions, multipliers and step sizes warm-start the next solve. Each
problem reports its residuals (inf-norms, unscaled) and OSQP's certificates `primal_infeasible`
and `dual_infeasible` (x then finite but meaningless); nothing is NaN for finite H, g and A.
"""

# The QP literature's names (H, A, l, u, K) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

from __future__ import annotations

from dataclasses import dataclass

import torch

from phalanx.core.compiling import compiled
from phalanx.core.errors import ConfigError, check_choice

BACKENDS = ("auto", "torch", "warp")
"""The ways a solve can run (`QPSettings.backend`)."""


@dataclass(frozen=True)
class QPSettings:
    iterations: int = 200
    """ADMM steps per solve (fixed: the solve's work does not depend on the data)."""
    rho: float = 0.1
    """The first step size of the inequality rows (equality rows use `rho * equality_scale`)."""
    sigma: float = 1e-6
    """Regularization of x in the ADMM matrix (positive definite for a PSD H; in float32 its
    inverse's pivots are also kept above rounding, see `spd_inverse`)."""
    alpha: float = 1.6
    """Over-relaxation, in (0, 2)."""
    adapt_every: int = 25
    """Steps between rho updates from the ratio of the residuals (0: never)."""
    adapt_tolerance: float = 5.0
    """rho changes only by more than this factor (changing it often keeps ADMM from converging)."""
    converged_eps: float = 10.0
    """A problem whose relative primal and dual residuals are both below this many machine
    epsilons of the dtype keeps its rho: adapting to rounding noise drove rho to its floor."""
    equality_scale: float = 1e3
    """How much stiffer the step size of an equality row is than an inequality row's."""
    scaling_iterations: int = 0
    """Ruiz equilibration passes before the ADMM steps (0: solve the problem as given). They
    help problems whose rows differ in scale by orders of magnitude; on the force-distribution
    QPs of the tests they slowed the slowest problem down."""
    infeasibility_tol: float = 1e-4
    """Relative tolerance of the infeasibility certificates (OSQP's default; float32 rounding
    in the multipliers' change is about 3e-5 of it)."""
    backend: str = "auto"
    """How a solve runs: "torch", several tensor operations per ADMM step (with `compile`,
    fused by torch.compile); "warp", the whole solve as one Warp kernel, one thread per problem
    (`phalanx.control.admm_kernel`; float32 or float64); "auto", the kernel on a CUDA device
    for those dtypes (several times the compiled torch steps' QPs/s: docs/benchmarks.md,
    "Batched QP solver and RL over it") and torch elsewhere (on a CPU the kernel's threads run one
    after another). The same algorithm: solutions agree to rounding."""
    block_dim: int = 32
    """Threads per block of the warp backend's launch on a GPU (at most 256). A block runs on one
    multiprocessor: with Warp's default of 256, a few thousand problems fill a few of a GPU's
    multiprocessors and take as long as many fewer; with 32 they spread over all of them (the
    same speed once the problems fill the GPU either way). Each size compiles the kernel once
    more."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`qp.FIELD`)."""
        for name in ("iterations", "adapt_every", "scaling_iterations"):
            value, least = getattr(self, name), 1 if name == "iterations" else 0
            if not isinstance(value, int) or value < least:
                raise ConfigError(f"must be an integer >= {least}, got {value!r}", f"qp.{name}")
        if not 0 < self.alpha < 2:
            raise ConfigError(f"must be in (0, 2), got {self.alpha}", "qp.alpha")
        for name in ("rho", "sigma", "equality_scale", "converged_eps", "infeasibility_tol"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"must be positive, got {getattr(self, name)}", f"qp.{name}")
        check_backend(self.backend, "qp.backend")
        check_block_dim(self.block_dim, "qp.block_dim")
        if not self.adapt_tolerance >= 1:
            raise ConfigError(f"must be >= 1, got {self.adapt_tolerance}", "qp.adapt_tolerance")


def check_backend(value: str, field: str) -> None:
    """Raises ConfigError naming `field` unless `value` is one of `BACKENDS`."""
    check_choice(field, value, BACKENDS)


def check_block_dim(value: int, field: str) -> None:
    """Raises ConfigError naming `field` unless `value` is a multiple of 32 in [32, 256]: the
    kernel keeps much per thread, and larger blocks may not get the registers to launch."""
    if not isinstance(value, int) or isinstance(value, bool) or value % 32 or not 32 <= value <= 256:
        raise ConfigError(f"must be a multiple of 32 in [32, 256], got {value!r}", field)


@dataclass
class QPSolution:
    x: torch.Tensor
    """(B, n) the solutions."""
    y: torch.Tensor
    """(B, m) the constraints' multipliers (negative: lower bound active, positive: upper)."""
    primal_residual: torch.Tensor
    """(B,) |Ax - clamp(Ax, l, u)|_inf: how far Ax lies outside [l, u]."""
    dual_residual: torch.Tensor
    """(B,) |Hx + g + A'y|_inf."""
    primal_infeasible: torch.Tensor
    """(B,) bool."""
    dual_infeasible: torch.Tensor
    """(B,) bool."""


class BatchedQP:
    """Solves batches of `batch` QPs of `n` variables and `m` constraints; keeps each problem's
    last solution and step size to warm-start its next solve (`reset` forgets them, e.g. for envs
    that were reset).

    Inputs (batch first): H (B, n, n) symmetric positive semidefinite, g (B, n), A (B, m, n), or
    (m, n) when every problem has the same constraint matrix (the fast case: its products are
    one matrix product for the batch), l and u (B, m) with l <= u (+-inf: no bound). Their dtype
    and device are the solver's (`tensor_kw`: dtype, device)."""

    def __init__(
        self, batch: int, n: int, m: int, settings: QPSettings | None = None, compile: bool = False, **tensor_kw
    ):
        self.settings = settings or QPSettings()
        self.settings.check()
        self._step = compiled(admm_step, dynamic=False) if compile else admm_step
        """One ADMM step; with `compile`, torch.compile fuses its elementwise work into few kernels."""
        self.batch, self.n, self.m = batch, n, m
        self.x = torch.zeros(batch, n, **tensor_kw)
        """(B, n) the last solutions (unscaled)."""
        self.y = torch.zeros(batch, m, **tensor_kw)
        """(B, m) their multipliers (unscaled)."""
        self.rho = torch.full((batch, 1), self.settings.rho, **tensor_kw)
        """(B, 1) each problem's last inequality step size (in its scaled problem)."""
        self.backend = self.settings.backend
        """"torch" or "warp": the settings' backend, "auto" resolved for the device."""
        if self.backend == "auto":
            kernel_fits = self.x.device.type == "cuda" and self.x.dtype in (torch.float32, torch.float64)
            self.backend = "warp" if kernel_fits else "torch"
        self._kernel = None
        if self.backend == "warp":  # Warp imported only here: configs and `phalanx list` stay light
            from phalanx.control.admm_kernel import ADMMKernel

            state = (self.x, self.y, self.rho.view(batch))
            self._kernel = ADMMKernel(batch, n, m, state, self.x.dtype, self.x.device, self.settings.block_dim)

    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Forgets the warm start of the problems where `mask` (B,) is True (all when None)."""
        if mask is None:
            mask = torch.ones(self.batch, dtype=torch.bool, device=self.x.device)
        self.x.masked_fill_(mask[:, None], 0.0)
        self.y.masked_fill_(mask[:, None], 0.0)
        self.rho.masked_fill_(mask[:, None], self.settings.rho)

    def solve(self, H: torch.Tensor, g: torch.Tensor, A: torch.Tensor, l: torch.Tensor, u: torch.Tensor) -> QPSolution:
        """Solves every problem; graph-safe (no host reads)."""
        s = self.settings
        check_shapes("BatchedQP.solve", self.batch, self.n, self.m, H, g, A, l, u)
        if self._kernel is not None:
            return self._solve_in_one_kernel(H, g, A, l, u)
        Hs, gs, As, ls, us, D, E, c = _scaled(H, g, A, l, u, s.scaling_iterations)
        equality = (u - l).abs() <= 1e-9 * (1.0 + l.abs().nan_to_num(posinf=0.0))
        x, y = self.x / D, c * self.y / E
        z = _mv(As, x).clamp(ls, us)
        base = self.rho.clone()
        rho = self._row_rho(base, equality)
        K_inv = self._inverse(Hs, As, rho)
        for k in range(s.iterations):
            if s.adapt_every and k and k % s.adapt_every == 0:
                base = self._adapted(base, Hs, gs, As, x, z, y)
                rho = self._row_rho(base, equality)
                K_inv = self._inverse(Hs, As, rho)
            x_prev, y_prev = x, y
            x, z, y = self._step(x, z, y, K_inv, Hs, gs, As, ls, us, rho, s.alpha)
        primal_infeasible = _primal_infeasible(As, ls, us, y - y_prev, s.infeasibility_tol)
        dual_infeasible = _dual_infeasible(Hs, gs, As, ls, us, x - x_prev, s.infeasibility_tol) & ~primal_infeasible
        if s.adapt_every:  # for the next solve: solves shorter than `adapt_every` adapt once each
            base = self._adapted(base, Hs, gs, As, x, z, y)
        x, y = D * x, E * y / c
        self.x.copy_(x)
        self.y.copy_(y)
        self.rho.copy_(base)
        return QPSolution(x, y, *residuals(H, g, A, l, u, x, y), primal_infeasible, dual_infeasible)

    def _solve_in_one_kernel(self, H, g, A, l, u) -> QPSolution:
        """`solve` with the warp backend: the scaling (if any) in torch, the rest one kernel."""
        passes = self.settings.scaling_iterations
        if passes:
            H, g, A, l, u, D, E, c = _scaled(H, g, A, l, u, passes)
            scaling = (D, E, c[:, 0])
        else:
            scaling = self._kernel.unit
        B, kw, flag = self.batch, {"dtype": self.x.dtype, "device": self.x.device}, {"device": self.x.device}
        solution = QPSolution(
            *(torch.empty(B, self.n, **kw), torch.empty(B, self.m, **kw), torch.empty(B, **kw), torch.empty(B, **kw)),
            *(torch.empty(B, dtype=torch.bool, **flag), torch.empty(B, dtype=torch.bool, **flag)),
        )
        problem = (H, g, A if A.dim() == 3 else A[None], l, u)
        self._kernel.launch(problem, scaling, tuple(vars(solution).values()), self.settings)
        return solution

    def _adapted(self, base, H, g, A, x, z, y) -> torch.Tensor:
        """OSQP's rho update: rho * sqrt(relative primal residual / relative dual residual),
        where that factor exceeds `adapt_tolerance` either way and the problem has not converged."""
        s = self.settings
        primal, dual = _relative_residuals(H, g, A, x, z, y)
        tiny = torch.finfo(x.dtype).tiny ** 0.5
        ratio = (primal.clamp_min(tiny) / dual.clamp_min(tiny)).sqrt().clamp(1e-3, 1e3)[:, None]
        far = (ratio > s.adapt_tolerance) | (ratio < 1.0 / s.adapt_tolerance)
        tol = s.converged_eps * torch.finfo(x.dtype).eps
        converged = ((primal < tol) & (dual < tol))[:, None]
        return torch.where(far & ~converged, base * ratio, base).clamp(1e-6, 1e6)

    def _row_rho(self, base: torch.Tensor, equality: torch.Tensor) -> torch.Tensor:
        """(B, m) each row's step size: equality rows `equality_scale` stiffer, at most 1e6."""
        return torch.where(equality, (base * self.settings.equality_scale).clamp_max(1e6), base)

    def _inverse(self, H: torch.Tensor, A: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
        """(H + sigma I + A' diag(rho) A)^-1, with sigma raised to 10 eps x the largest diagonal
        entry where that is more: in float32 a rank-deficient H + A' rho A is otherwise singular
        to working precision. The correction-form step makes this cost speed, not accuracy."""
        K = H + A.mT @ (rho[..., None] * A)
        largest = K.diagonal(dim1=-2, dim2=-1).amax(-1)[:, None, None]
        sigma = (10 * torch.finfo(K.dtype).eps * largest).clamp_min(self.settings.sigma)
        return spd_inverse(K + sigma * torch.eye(self.n, dtype=H.dtype, device=H.device))


def check_shapes(solver: str, B: int, n: int, m: int, H, g, A, l, u) -> None:
    """Raises ValueError naming the `solver` and the first input whose shape does not fit a batch
    of B problems of n variables and m constraints."""
    allowed = {"H": [(B, n, n)], "g": [(B, n)], "A": [(B, m, n), (m, n)], "l": [(B, m)], "u": [(B, m)]}
    for name, value in zip(allowed, (H, g, A, l, u), strict=True):
        if tuple(value.shape) not in allowed[name]:
            shapes = " or ".join(str(shape) for shape in allowed[name])
            raise ValueError(f"{solver}: {name} has shape {tuple(value.shape)}, expected {shapes}")


def residuals(H, g, A, l, u, x, y) -> tuple[torch.Tensor, torch.Tensor]:
    """(B,) each problem's primal residual |Ax - clamp(Ax, l, u)|_inf and dual residual
    |Hx + g + A'y|_inf at `x` (B, n) and `y` (B, m)."""
    Ax = _mv(A, x)
    return (Ax - Ax.clamp(l, u)).abs().amax(-1), (_mv(H, x) + g + _mv(A.mT, y)).abs().amax(-1)


def spd_inverse(K: torch.Tensor, block: int = 32) -> torch.Tensor:
    """(B, n, n) inverses of symmetric positive definite matrices by Gauss-Jordan elimination
    without pivoting (stable for them, like Cholesky), which a CUDA graph can capture (torch's
    batched Cholesky and inverse read status back to the host). Columns are eliminated `block` at
    a time: each block's pivot block (SPD, a Schur complement of K) is inverted column by column,
    and the rest of the matrix is updated by one batched matrix product, so an MPC's 120 x 120
    matrices take n / block passes over the matrix instead of n. A pivot that rounding made tiny
    or negative (a nearly singular K in float32) is raised to eps x the largest diagonal entry:
    up to `block` columns the inverse is then inaccurate but finite (the force QP's K, whose H
    may be singular); larger matrices must be well conditioned (the MPC's: its force weight
    bounds H's eigenvalues from below)."""
    n = K.shape[-1]
    info = torch.finfo(K.dtype)
    floor = info.eps * K.diagonal(dim1=-2, dim2=-1).amax(-1).clamp_min(info.tiny)[:, None, None]
    if n <= block:
        return _gauss_jordan(K, floor)
    M = torch.cat((K, torch.eye(n, dtype=K.dtype, device=K.device).expand_as(K)), dim=-1)  # (B, n, 2n)
    for j in range(0, n, block):
        J = slice(j, min(j + block, n))
        rows = _gauss_jordan(M[:, J, J], floor) @ M[:, J]  # the block's rows, unit pivot block
        M = M - M[:, :, J] @ rows  # the block's columns out of every row (its own rows become 0) ...
        M[:, J] = rows  # ... and its rows put back
    return M[:, :, n:]


def _gauss_jordan(K: torch.Tensor, floor: torch.Tensor) -> torch.Tensor:
    """`spd_inverse` of small matrices, one column at a time: n steps of a few elementwise kernels."""
    n = K.shape[-1]
    M = torch.cat((K, torch.eye(n, dtype=K.dtype, device=K.device).expand_as(K)), dim=-1)  # (B, n, 2n)
    for j in range(n):
        pivot = M[:, j : j + 1] / M[:, j : j + 1, j : j + 1].clamp_min(floor)  # row j, unit diagonal
        M = M - M[:, :, j : j + 1] * pivot  # column j out of every row (row j becomes 0) ...
        M[:, j : j + 1] = pivot  # ... and row j put back, scaled
    return M[:, :, n:]


def admm_step(x, z, y, K_inv, H, g, A, l, u, rho, alpha: float):
    """One relaxed OSQP step from (x, z, y), with K_inv = (H + sigma I + A' diag(rho) A)^-1.
    The x update is OSQP's linear system written as a correction of x by the KKT residual, so
    that an inexact K_inv (float32) slows convergence down but does not move its fixed point."""
    x_tilde = x - _mv(K_inv, _mv(H, x) + g + _mv(A.mT, y + rho * (_mv(A, x) - z)))
    z_tilde = _mv(A, x_tilde)
    x = alpha * x_tilde + (1.0 - alpha) * x
    z_relaxed = alpha * z_tilde + (1.0 - alpha) * z
    z_next = (z_relaxed + y / rho).clamp(l, u)
    return x, z_next, y + rho * (z_relaxed - z_next)


def _mv(M: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """M v for every problem: M (B, r, c) per problem, or (r, c) shared by all (one matrix product)."""
    return v @ M.mT if M.dim() == 2 else (M @ v[..., None]).squeeze(-1)


def _scaled(H, g, A, l, u, passes: int):
    """The problem in Ruiz-scaled variables, and the scales (all 1.0 without passes): x = D xs,
    constraints E A D xs in [E l, E u], cost c (1/2 xs' D H D xs + g' D xs)."""
    if not passes:
        return H, g, A, l, u, 1.0, 1.0, 1.0
    D, E, c = _ruiz(H, A, g, passes)
    Hs, gs = c[..., None] * D[:, :, None] * H * D[:, None, :], c * D * g
    return Hs, gs, E[:, :, None] * A * D[:, None, :], E * l, E * u, D, E, c


def _ruiz(H: torch.Tensor, A: torch.Tensor, g: torch.Tensor, passes: int):
    """OSQP's scaling: D (B, n) and E (B, m) that bring the columns of [[H, A'], [A, 0]] to unit
    inf-norm, and a cost factor c (B, 1) that brings the mean column norm of H and |g| near 1."""
    B, n = g.shape
    D = torch.ones_like(g)
    E = torch.ones(B, A.shape[-2], dtype=g.dtype, device=g.device)
    for _ in range(passes):
        Hs = D[:, :, None] * H * D[:, None, :]
        As = E[:, :, None] * A * D[:, None, :]
        col = torch.maximum(Hs.abs().amax(-2), As.abs().amax(-2))  # (B, n)
        row = As.abs().amax(-1)  # (B, m)
        D = D / _limited(col).sqrt()
        E = E / _limited(row).sqrt()
    Hs = D[:, :, None] * H * D[:, None, :]
    mean_col = Hs.abs().amax(-2).mean(-1, keepdim=True)
    g_norm = (D * g).abs().amax(-1, keepdim=True)
    return D, E, 1.0 / _limited(torch.maximum(mean_col, g_norm))


def _limited(norm: torch.Tensor) -> torch.Tensor:
    """OSQP's limit on a scaling norm: below 1e-4 (a zero row or column) it counts as 1 (no
    scaling), above 1e4 as 1e4."""
    return torch.where(norm < 1e-4, 1.0, norm.clamp_max(1e4))


def _relative_residuals(H, g, A, x, z, y) -> tuple[torch.Tensor, torch.Tensor]:
    """(B,) OSQP's normalized primal and dual residuals: |Ax - z| / max(|Ax|, |z|) and
    |Hx + g + A'y| / max(|Hx|, |A'y|, |g|) (inf-norms)."""
    tiny = torch.finfo(x.dtype).tiny ** 0.5
    Ax, Hx, Aty = _mv(A, x), _mv(H, x), _mv(A.mT, y)
    primal = (Ax - z).abs().amax(-1) / torch.maximum(Ax.abs().amax(-1), z.abs().amax(-1)).clamp_min(tiny)
    scale = torch.maximum(torch.maximum(Hx.abs().amax(-1), Aty.abs().amax(-1)), g.abs().amax(-1))
    return primal, (Hx + g + Aty).abs().amax(-1) / scale.clamp_min(tiny)


def _primal_infeasible(A, l, u, dy, tol) -> torch.Tensor:
    """OSQP's certificate: |A'dy|_inf <= tol |dy|_inf and u'max(dy, 0) + l'min(dy, 0) < -tol |dy|_inf,
    with dy first projected as OSQP does: no push against a bound that is infinite."""
    dy = torch.where(((dy > 0) & torch.isinf(u)) | ((dy < 0) & torch.isinf(l)), 0.0, dy)
    norm = dy.abs().amax(-1)
    support = (torch.where(dy > 0, u * dy, 0.0) + torch.where(dy < 0, l * dy, 0.0)).sum(-1)
    return (norm > 0) & (_mv(A.mT, dy).abs().amax(-1) <= tol * norm) & (support < -tol * norm)


def _dual_infeasible(H, g, A, l, u, dx, tol) -> torch.Tensor:
    """OSQP's certificate: |H dx|, g'dx < 0, and A dx pointing out of [l, u] only where unbounded."""
    norm = dx.abs().amax(-1)
    Adx = _mv(A, dx)
    bound = tol * norm[:, None]
    along = torch.where(torch.isfinite(u), Adx <= bound, True) & torch.where(torch.isfinite(l), Adx >= -bound, True)
    return (norm > 0) & (_mv(H, dx).abs().amax(-1) <= tol * norm) & ((g * dx).sum(-1) < -tol * norm) & along.all(-1)
