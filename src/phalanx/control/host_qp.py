"""`BatchedQP`'s batch of QPs solved on the host CPU instead, one problem after another, with
proxsuite's dense solver (ProxQP, Bambade et al. 2022), as a controller running on a robot's CPU
would solve its own: what the full-GPU pipeline is measured against (tools/qp_pipeline.py).

A solve copies the batch to the host and the solutions back, so it cannot run inside a captured
CUDA graph. proxsuite is optional (`pip install proxsuite`): it is imported when a `HostQP` is built.
"""

# The QP literature's names (H, A, l, u) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

from __future__ import annotations

import time

import numpy as np
import torch

from phalanx.control.qp import QPSolution, check_shapes, residuals
from phalanx.core.errors import ConfigError

PROXSUITE_INF = 1e20
"""The bound proxsuite reads as infinite."""


def proxsuite_problem(H: np.ndarray, g: np.ndarray, A: np.ndarray, l: np.ndarray, u: np.ndarray) -> tuple:
    """QPs of `BatchedQP`'s form (float64: H (..., n, n), g (..., n), A (..., m, n), l and u
    (..., m), +-inf: no bound) as the arguments of proxsuite's dense QP, (H, g, A, b, C, l, u):
    no equality block (an equality row is a row of C with l = u), infinite bounds as 1e20."""
    return H, g, None, None, A, l.clip(-PROXSUITE_INF, PROXSUITE_INF), u.clip(-PROXSUITE_INF, PROXSUITE_INF)


class HostQP:
    """Solves batches of `batch` QPs of `n` variables and `m` constraints as `BatchedQP` does (same
    inputs, same `QPSolution`, in `tensor_kw`'s dtype and device), each with its own proxsuite dense
    QP on the host, set up at its first solve and warm-started from its last x and y after (`reset`
    zeroes them). A solve copies the batch to the host once (float64), solves each problem in turn to
    `eps_abs` (inf-norm of the residuals) or `max_iter` iterations, and copies the results back once.
    A problem is flagged primal (dual) infeasible where proxsuite certifies it, or where it stopped
    without a solution and the primal (else the dual) residual is above `eps_abs` (proxsuite runs many
    infeasible problems to `max_iter` without a certificate). x and y are never NaN: a problem whose
    iterates are not finite returns x = 0, y = 0."""

    def __init__(self, batch: int, n: int, m: int, eps_abs: float = 1e-6, max_iter: int = 1000, **tensor_kw):
        try:
            import proxsuite
        except ImportError:
            raise ConfigError("HostQP solves with proxsuite, which is not installed: pip install proxsuite") from None
        self._proxqp = proxsuite.proxqp
        self.batch, self.n, self.m = batch, n, m
        self.eps_abs, self.max_iter = eps_abs, max_iter
        self.x = torch.zeros(batch, n, **tensor_kw)
        """(B, n) the last solutions."""
        self.y = torch.zeros(batch, m, **tensor_kw)
        """(B, m) their multipliers (negative: lower bound active, positive: upper)."""
        self.rho = torch.full((batch, 1), 1e-6, **tensor_kw)
        """(B, 1) a constant, proxsuite's default proximal step size: proxsuite adapts its penalties
        within a solve and none is carried to the next. There so that a controller's state has
        `BatchedQP`'s fields."""
        self._solvers: list = [None] * batch  # each problem's proxsuite QP, made at its first solve
        self.host_seconds = 0.0
        """Seconds spent in proxsuite's solves (the per-problem loop, no copies), summed over calls."""
        self.host_solves = 0
        """Problems solved so far (the batch size times the calls)."""

    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Forgets the warm start of the problems where `mask` (B,) is True (all when None)."""
        if mask is None:
            mask = torch.ones(self.batch, dtype=torch.bool, device=self.x.device)
        self.x.masked_fill_(mask[:, None], 0.0)
        self.y.masked_fill_(mask[:, None], 0.0)

    def solve(self, H: torch.Tensor, g: torch.Tensor, A: torch.Tensor, l: torch.Tensor, u: torch.Tensor) -> QPSolution:
        """Solves every problem on the host (reads the device: not graph-safe)."""
        B, n, m = self.batch, self.n, self.m
        check_shapes("HostQP.solve", B, n, m, H, g, A, l, u)
        shared = A.dim() == 2
        H, g, l, u, x, y, *batched_A = _to_host(H, g, l, u, self.x, self.y, *(() if shared else (A,)))
        A = A.cpu().double() if shared else batched_A[0]
        Hn, gn, _, _, Cn, ln, un = proxsuite_problem(H.numpy(), g.numpy(), A.numpy(), l.numpy(), u.numpy())
        x, y = x.numpy().copy(), y.numpy().copy()  # the warm starts, overwritten by the solutions
        status = np.empty(B, dtype=np.int64)
        start = time.perf_counter()
        for b in range(B):
            C = Cn if shared else Cn[b]
            qp = self._solvers[b]
            if qp is None:
                qp = self._solvers[b] = self._new_solver()
                qp.init(Hn[b], gn[b], None, None, C, ln[b], un[b])
            else:
                qp.update(Hn[b], gn[b], None, None, C, ln[b], un[b])
            qp.solve(x[b], None, y[b])
            x[b], y[b], status[b] = qp.results.x, qp.results.z, qp.results.info.status.value
        self.host_seconds += time.perf_counter() - start
        self.host_solves += B
        broken = ~(np.isfinite(x).all(1) & np.isfinite(y).all(1))
        x[broken], y[broken] = 0.0, 0.0
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        primal, dual = residuals(H, g, A, l, u, x, y)
        primal_infeasible, dual_infeasible = self._flags(status, primal, dual)
        back = torch.cat((x, y, torch.stack((primal, dual, primal_infeasible, dual_infeasible), 1).double()), 1)
        x, y, rest = back.to(self.x.device).split((n, m, 4), dim=1)  # one copy back
        self.x.copy_(x)
        self.y.copy_(y)
        dtype = self.x.dtype
        return QPSolution(
            x.to(dtype), y.to(dtype), rest[:, 0].to(dtype), rest[:, 1].to(dtype), rest[:, 2] > 0, rest[:, 3] > 0
        )

    def _flags(self, status: np.ndarray, primal: torch.Tensor, dual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B,) bool each: primal and dual infeasible, from proxsuite's `status` (B,) codes and the
        residuals (B,) where it stopped without a solution."""
        out = self._proxqp.QPSolverOutput
        unsolved = torch.from_numpy(status != out.PROXQP_SOLVED.value)
        primal_infeasible = torch.from_numpy(status == out.PROXQP_PRIMAL_INFEASIBLE.value)
        primal_infeasible |= unsolved & (primal > self.eps_abs)
        dual_infeasible = torch.from_numpy(status == out.PROXQP_DUAL_INFEASIBLE.value)
        dual_infeasible |= unsolved & (dual > self.eps_abs)
        return primal_infeasible, dual_infeasible & ~primal_infeasible

    def _new_solver(self):
        """A proxsuite dense QP of this batch's sizes, to `eps_abs`, warm-started by `solve`'s x and y."""
        qp = self._proxqp.dense.QP(self.n, 0, self.m)
        qp.settings.eps_abs, qp.settings.eps_rel, qp.settings.max_iter = self.eps_abs, 0.0, self.max_iter
        qp.settings.initial_guess = self._proxqp.InitialGuess.WARM_START
        return qp


def _to_host(*tensors: torch.Tensor) -> list[torch.Tensor]:
    """The (B, ...) `tensors` on the host in float64, from one copy: views of one (B, total) tensor."""
    B = tensors[0].shape[0]
    flat = torch.cat([t.reshape(B, -1) for t in tensors], dim=1).cpu().double()
    parts = flat.split([t[0].numel() for t in tensors], dim=1)
    return [part.reshape(t.shape) for part, t in zip(parts, tensors, strict=True)]
