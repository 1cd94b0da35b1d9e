"""`BatchedQP`'s whole solve as one Warp kernel (`QPSettings.backend="warp"`): one thread per
problem runs every ADMM step, so a solve is one launch, where torch operations launch several
kernels per step (at a control loop's batch the launches, not the arithmetic, set the time).

It runs `BatchedQP`'s torch steps operation for operation (warm start, the ADMM matrix's inverse,
the steps and their rho updates, OSQP's certificates, the residuals) but one: y / rho is
y x (1 / rho), the reciprocal taken once per run of steps. The problem sizes are compile-time
constants (one kernel per dtype and size), so each thread keeps its problem in local values. The
inputs keep torch's batch-first layout; a constraint matrix shared by every problem (A's first
dimension 1) is read from one copy. On a CPU the threads run one after another.
"""

# No `from __future__ import annotations`: Warp reads the kernel's annotations as types.
# The QP literature's names (H, A, l, u, K) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

import functools

import torch
import warp as wp

from phalanx.core.compiling import compile_boundary
from phalanx.core.warp_cache import init_warp
from phalanx.core.warp_streams import launch


class ADMMKernel:
    """Launches the solve kernel for batches of `batch` problems of `n` variables and `m` rows in
    `dtype` on `device`, on torch's current stream there (eagerly, or recorded into a torch CUDA
    graph being captured), from and into the warm start `state` (x (B, n), y (B, m), rho (B,):
    tensors written in place, never replaced), `block_dim` threads per block."""

    def __init__(
        self, batch: int, n: int, m: int, state: tuple, dtype: torch.dtype, device: torch.device, block_dim: int
    ):
        if dtype not in WARP_TYPES:
            raise ValueError(f"BatchedQP: the warp backend solves in float32 or float64, got {dtype}")
        init_warp()
        kw = {"dtype": dtype, "device": device}
        self.batch, self.dtype, self.device = batch, dtype, device
        self.kept = [wp.from_torch(t) for t in state]
        """The warm-start state as Warp arrays (each keeps its tensor), made once: it is the same at
        every launch."""
        self.unit = (torch.ones(batch, n, **kw), torch.ones(batch, m, **kw), torch.ones(batch, **kw))
        """D, E and c of a problem solved as given (no scaling)."""
        self.kernel = admm_solve_kernel(WARP_TYPES[dtype], n, m)
        self.wp_device = wp.device_from_torch(device)
        self.launch_kw = {"block_dim": block_dim} if self.wp_device.is_cuda else {}
        """Where the threads of a block run at once: on a GPU (on a CPU they run one after another)."""
        wp.load_module(self.kernel.module, device=self.wp_device, **self.launch_kw)  # compiled before any capture

    @compile_boundary
    def launch(self, problem: tuple, scaling: tuple, results: tuple, settings) -> None:
        """Solves `problem` (H, g, A (B or 1, m, n), l, u; scaled by `scaling`: D, E, c (B,)) from
        and into the state, writing `results` (x, y, residuals, flags) as `QPSettings` `settings`
        say."""
        s, info = settings, torch.finfo(self.dtype)
        constants = (
            *(s.iterations, s.adapt_every, s.alpha, s.sigma, s.adapt_tolerance),
            *(s.converged_eps * info.eps, s.equality_scale, s.infeasibility_tol, info.eps, info.tiny**0.5),
        )
        arrays = [t.to(self.dtype) for t in (*problem, *scaling)] + [*self.kept, *results]
        inputs = [*arrays[:8], *constants, *arrays[8:]]
        launch(self.kernel, self.batch, inputs, [], self.device, **self.launch_kw)


WARP_TYPES = {torch.float32: wp.float32, torch.float64: wp.float64}


@functools.cache
def admm_solve_kernel(T: type, n: int, m: int) -> wp.Kernel:
    """The solve kernel for the scalar type `T` (wp.float32 or wp.float64) and problems of `n`
    variables and `m` rows: the sizes are compile-time constants, so each problem's vectors and
    matrices are local values, and loops over them of up to Warp's `max_unroll` (16) iterations
    unroll (those over the 12 forces of the force QP; its 20 rows stay loops)."""
    array1, array2, array3 = wp.array(dtype=T), wp.array2d(dtype=T), wp.array3d(dtype=T)
    vec_n, vec_m = wp.types.vector(length=n, dtype=T), wp.types.vector(length=m, dtype=T)
    mat_nn = wp.types.matrix(shape=(n, n), dtype=T)

    @wp.func
    def times_a(A: array3, a: int, v: vec_n) -> vec_m:
        """A[a] v."""
        out = vec_m()
        for r in range(m):
            s = T(0.0)
            for i in range(n):
                s += A[a, r, i] * v[i]
            out[r] = s
        return out

    @wp.func
    def times_a_transposed(A: array3, a: int, w: vec_m) -> vec_n:
        """A[a]' w, row by row: each row's n products are independent, and each sum adds the rows
        in order."""
        out = vec_n()
        for r in range(m):
            for i in range(n):
                out[i] = out[i] + A[a, r, i] * w[r]
        return out

    @wp.func
    def row_step_sizes(base: T, lower: vec_m, upper: vec_m, equality_scale: T) -> vec_m:
        """Each row's step size: equality rows (l = u to 1e-9 relative) `equality_scale` stiffer,
        at most 1e6."""
        rho = vec_m()
        for r in range(m):
            magnitude = T(0.0)
            if wp.isfinite(lower[r]):
                magnitude = wp.abs(lower[r])
            rho[r] = base
            if wp.abs(upper[r] - lower[r]) <= T(1e-9) * (T(1.0) + magnitude):
                rho[r] = wp.min(base * equality_scale, T(1e6))
        return rho

    @wp.func
    def reciprocal(v: vec_m) -> vec_m:
        """1 / v, row by row."""
        out = vec_m()
        for r in range(m):
            out[r] = T(1.0) / v[r]
        return out

    @wp.func
    def invert(H: mat_nn, A: array3, a: int, rho: vec_m, sigma: T, eps: T, tiny: T) -> mat_nn:
        """(H + sigma' I + A' diag(rho) A)^-1 with sigma' = max(sigma, 10 eps x the largest
        diagonal entry), by Gauss-Jordan elimination in place without pivoting; a pivot that
        rounding made tiny or negative is raised to eps x the largest diagonal entry."""
        K = H
        for r in range(m):  # row by row, as in `times_a_transposed`
            row = vec_n()
            for j in range(n):
                row[j] = A[a, r, j]
            for i in range(n):
                scaled = row[i] * rho[r]
                for j in range(n):
                    K[i, j] = K[i, j] + scaled * row[j]
        largest = T(0.0)
        for i in range(n):
            largest = wp.max(largest, K[i, i])
        shift = wp.max(sigma, T(10.0) * eps * largest)
        for i in range(n):
            K[i, i] = K[i, i] + shift
        floor = wp.max(eps * (largest + shift), tiny)
        for k in range(n):
            p = T(1.0) / wp.max(K[k, k], floor)
            K[k, k] = T(1.0)
            for j in range(n):
                K[k, j] = K[k, j] * p
            for i in range(n):
                if i != k:
                    f = K[i, k]
                    K[i, k] = T(0.0)
                    for j in range(n):
                        K[i, j] = K[i, j] - f * K[k, j]
        return K

    @wp.func
    def adapted(
        base: T, H: mat_nn, g: vec_n, A: array3, a: int, x: vec_n, z: vec_m, y: vec_m, tol: T, converged: T, tiny: T
    ) -> T:
        """OSQP's step-size update: base x sqrt(relative primal / relative dual residual) where
        that factor is beyond `tol` either way and the problem has not converged (both
        relative residuals below `converged`), within [1e-6, 1e6]."""
        ax = times_a(A, a, x)
        hx = H @ x
        aty = times_a_transposed(A, a, y)
        primal = wp.max(wp.abs(ax - z)) / wp.max(wp.max(wp.max(wp.abs(ax)), wp.max(wp.abs(z))), tiny)
        scale = wp.max(wp.max(wp.max(wp.abs(hx)), wp.max(wp.abs(aty))), wp.max(wp.abs(g)))
        dual = wp.max(wp.abs(hx + g + aty)) / wp.max(scale, tiny)
        ratio = wp.clamp(wp.sqrt(wp.max(primal, tiny) / wp.max(dual, tiny)), T(1e-3), T(1e3))
        far = ratio > tol or ratio < T(1.0) / tol
        factor = T(1.0)
        if far and not (primal < converged and dual < converged):
            factor = ratio
        return wp.clamp(base * factor, T(1e-6), T(1e6))

    @wp.func
    def admm_step(
        H: mat_nn,
        g: vec_n,
        A: array3,
        a: int,
        K: mat_nn,
        rho: vec_m,
        inv_rho: vec_m,
        lower: vec_m,
        upper: vec_m,
        alpha: T,
        x: vec_n,
        z: vec_m,
        y: vec_m,
    ):
        """One relaxed OSQP step from (x, z, y), K the inverse of the ADMM matrix for `rho`; the
        torch steps' `admm_step`, with y / rho as y x (1 / rho): `inv_rho`, one division per row and
        run instead of per row and step."""
        # x~ = x - K^-1 (H x + g + A'(y + rho (A x - z))): OSQP's linear system as a correction
        w = y + wp.cw_mul(rho, times_a(A, a, x) - z)
        x_tilde = x - K @ (times_a_transposed(A, a, w) + H @ x + g)
        relaxed = alpha * times_a(A, a, x_tilde) + (T(1.0) - alpha) * z  # alpha z~ + (1 - alpha) z
        z_next = wp.min(wp.max(relaxed + wp.cw_mul(y, inv_rho), lower), upper)
        return alpha * x_tilde + (T(1.0) - alpha) * x, z_next, y + wp.cw_mul(rho, relaxed - z_next)

    @wp.kernel(enable_backward=False, module="unique")
    def solve(
        # the (scaled) problems: H (B, n, n), g (B, n), A (B or 1, m, n), l and u (B, m)
        H_in: array3,
        g_in: array2,
        A: array3,
        l: array2,
        u: array2,
        # the scaling: x = D xs, rows E A D, cost c (all 1 for a problem solved as given)
        D: array2,
        E: array2,
        c: array1,
        iterations: int,
        adapt_every: int,
        alpha: T,
        sigma: T,
        adapt_tolerance: T,
        converged: T,
        equality_scale: T,
        infeasibility_tol: T,
        eps: T,
        tiny: T,
        # the warm start, read and then overwritten: x (B, n), y (B, m) unscaled, rho (B,)
        x_state: array2,
        y_state: array2,
        rho_state: array1,
        # results: x (B, n), y (B, m) unscaled, residuals and certificates (B,)
        x_out: array2,
        y_out: array2,
        primal_residual: array1,
        dual_residual: array1,
        primal_infeasible: wp.array(dtype=wp.bool),
        dual_infeasible: wp.array(dtype=wp.bool),
    ):
        b = wp.tid()
        a = wp.min(b, A.shape[0] - 1)
        H = mat_nn()
        g = vec_n()
        x = vec_n()
        for i in range(n):
            for j in range(n):
                H[i, j] = H_in[b, i, j]
            g[i] = g_in[b, i]
            x[i] = x_state[b, i] / D[b, i]
        lower = vec_m()
        upper = vec_m()
        y = vec_m()
        for r in range(m):
            lower[r] = l[b, r]
            upper[r] = u[b, r]
            y[r] = c[b] * y_state[b, r] / E[b, r]
        z = wp.min(wp.max(times_a(A, a, x), lower), upper)
        base = rho_state[b]
        rho = row_step_sizes(base, lower, upper, equality_scale)
        K = invert(H, A, a, rho, sigma, eps, tiny)
        inv_rho = reciprocal(rho)
        x_prev = x
        y_prev = y
        done = int(0)  # noqa: UP018 (Warp: a variable the loop changes, not a constant)
        # In runs of `adapt_every` steps (all in one when 0), rho fixed in each: the steps' loop then assigns
        # neither K nor rho, which it would otherwise select and copy at every step.
        while done < iterations:
            if done > 0:
                base = adapted(base, H, g, A, a, x, z, y, adapt_tolerance, converged, tiny)
                rho = row_step_sizes(base, lower, upper, equality_scale)
                K = invert(H, A, a, rho, sigma, eps, tiny)
                inv_rho = reciprocal(rho)
            steps = iterations - done
            if adapt_every > 0:
                steps = wp.min(steps, adapt_every)
            for _ in range(steps - 1):
                x, z, y = admm_step(H, g, A, a, K, rho, inv_rho, lower, upper, alpha, x, z, y)
            x_prev = x  # the last step's change certifies infeasibility (kept once per run, not every step)
            y_prev = y
            x, z, y = admm_step(H, g, A, a, K, rho, inv_rho, lower, upper, alpha, x, z, y)
            done += steps

        # OSQP's certificates on the last step's change. Primal: dy (projected: no push against
        # an infinite bound) with |A'dy| <= tol |dy| and u'max(dy, 0) + l'min(dy, 0) < -tol |dy|.
        dy = y - y_prev
        support = T(0.0)
        for r in range(m):
            if (dy[r] > T(0.0) and wp.isinf(upper[r])) or (dy[r] < T(0.0) and wp.isinf(lower[r])):
                dy[r] = T(0.0)
            if dy[r] > T(0.0):
                support += upper[r] * dy[r]
            if dy[r] < T(0.0):
                support += lower[r] * dy[r]
        dy_norm = wp.max(wp.abs(dy))
        tol = infeasibility_tol * dy_norm
        primal_flag = dy_norm > T(0.0) and wp.max(wp.abs(times_a_transposed(A, a, dy))) <= tol and support < -tol
        # Dual (unbounded): dx with |H dx| <= tol |dx|, g'dx < -tol |dx|, and A dx pointing out of
        # [l, u] only where that side is unbounded.
        dx = x - x_prev
        dx_norm = wp.max(wp.abs(dx))
        tol = infeasibility_tol * dx_norm
        adx = times_a(A, a, dx)
        along = bool(True)  # noqa: UP018 (Warp: a variable the loop may change, not a constant)
        for r in range(m):
            if wp.isfinite(upper[r]) and adx[r] > tol:
                along = False
            if wp.isfinite(lower[r]) and adx[r] < -tol:
                along = False
        dual_flag = dx_norm > T(0.0) and wp.max(wp.abs(H @ dx)) <= tol and wp.dot(g, dx) < -tol and along
        primal_infeasible[b] = primal_flag
        dual_infeasible[b] = dual_flag and not primal_flag

        if adapt_every > 0:  # for the next solve: solves shorter than `adapt_every` adapt once each
            base = adapted(base, H, g, A, a, x, z, y, adapt_tolerance, converged, tiny)
        rho_state[b] = base

        # Residuals of the problem as given: A x = (As xs) / E and H x + g + A'y = (Hs xs + gs + As'ys) / (c D).
        ax = times_a(A, a, x)
        primal = T(0.0)
        for r in range(m):
            primal = wp.max(primal, wp.abs(ax[r] - wp.clamp(ax[r], lower[r], upper[r])) / E[b, r])
            y_out[b, r] = E[b, r] * y[r] / c[b]
            y_state[b, r] = y_out[b, r]
        stationarity = H @ x + g + times_a_transposed(A, a, y)
        dual = T(0.0)
        for i in range(n):
            dual = wp.max(dual, wp.abs(stationarity[i]) / (c[b] * D[b, i]))
            x_out[b, i] = D[b, i] * x[i]
            x_state[b, i] = x_out[b, i]
        primal_residual[b] = primal
        dual_residual[b] = dual

    return solve
