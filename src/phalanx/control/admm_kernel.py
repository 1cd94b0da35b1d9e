"""`BatchedQP`'s whole solve as one Warp kernel (`QPSettings.backend="warp"`): one thread per
problem runs every ADMM step.

A solve written as torch operations launches several kernels per ADMM step, each reading every
problem once: at a control loop's batch (a few thousand robots) the launches, not the arithmetic,
set its time on a GPU. Here one thread takes one problem through the warm start, the ADMM
matrix's inverse, the fixed number of steps with their step-size updates, OSQP's infeasibility
certificates and the residuals, and writes back the solution and the next warm start: the
algorithm of `BatchedQP`'s torch steps, operation for operation. On a CPU the threads run one
after another, slower than torch's batched operations.

Each thread keeps its vectors and its inverse in scratch arrays laid out variable-major ((n, B),
(n, n, B)), so that the threads of a warp read consecutive addresses. The inputs keep torch's
batch-first layout; a constraint matrix shared by every problem is read from one copy (A's first
dimension is then 1).
"""

# No `from __future__ import annotations`: Warp reads the kernel's annotations as types.
# The QP literature's names (H, A, l, u, K) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

import functools

import torch
import warp as wp

from phalanx.compiling import compile_boundary


class ADMMKernel:
    """Launches the solve kernel for batches of `batch` problems of `n` variables and `m` rows in
    `dtype` on `device`, on torch's current stream there (eagerly, or recorded into a torch CUDA
    graph being captured), from and into the warm start `state` (x (B, n), y (B, m), rho (B,):
    tensors written in place, never replaced); holds the kernel's work space."""

    def __init__(self, batch: int, n: int, m: int, state: tuple, dtype: torch.dtype, device: torch.device):
        if dtype not in WARP_TYPES:
            raise ValueError(f"BatchedQP: the warp backend solves in float32 or float64, got {dtype}")
        wp.init()
        kw = {"dtype": dtype, "device": device}
        self.batch, self.dtype, self.device = batch, dtype, device
        # The work space, per problem and variable-major: K^-1, x, x_prev, x~, an n-vector, z, y,
        # y_prev, each row's rho, an m-vector.
        scratch = (
            torch.empty(n, n, batch, **kw),
            *(torch.empty(n, batch, **kw) for _ in range(4)),
            *(torch.empty(m, batch, **kw) for _ in range(5)),
        )
        self.kept = [wp.from_torch(t) for t in (*state, *scratch)]
        """The state and the work space as Warp arrays (each keeps its tensor), made once: they
        are the same at every launch."""
        self.unit = (torch.ones(batch, n, **kw), torch.ones(batch, m, **kw), torch.ones(batch, **kw))
        """D, E and c of a problem solved as given (no scaling)."""
        self.kernel = admm_solve_kernel(WARP_TYPES[dtype])
        self.wp_device = wp.device_from_torch(device)
        wp.load_module(self.kernel.module, device=self.wp_device)  # compiled before any capture

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
        arrays = [wp.from_torch(t.to(self.dtype)) for t in (*problem, *scaling)]
        arrays += [*self.kept, *(wp.from_torch(t) for t in results)]
        inputs = [*arrays[:8], *constants, *arrays[8:]]
        stream = wp.stream_from_torch(torch.cuda.current_stream(self.device)) if self.wp_device.is_cuda else None
        wp.launch(self.kernel, dim=self.batch, inputs=inputs, device=self.wp_device, stream=stream)


WARP_TYPES = {torch.float32: wp.float32, torch.float64: wp.float64}


@functools.cache
def admm_solve_kernel(T: type) -> wp.Kernel:
    """The solve kernel for the scalar type `T` (wp.float32 or wp.float64)."""
    array1, array2, array3 = wp.array(dtype=T), wp.array2d(dtype=T), wp.array3d(dtype=T)

    @wp.func
    def times_a(A: array3, a: int, v: array2, b: int, out: array2):
        """out[:, b] = A[a] v[:, b] (A's rows; with H and b: H[b] v[:, b])."""
        for r in range(A.shape[1]):
            s = T(0.0)
            for i in range(A.shape[2]):
                s += A[a, r, i] * v[i, b]
            out[r, b] = s

    @wp.func
    def times_a_transposed(A: array3, a: int, v: array2, b: int, out: array2):
        """out[:, b] = A[a]' v[:, b] (n entries)."""
        for i in range(A.shape[2]):
            s = T(0.0)
            for r in range(A.shape[1]):
                s += A[a, r, i] * v[r, b]
            out[i, b] = s

    @wp.func
    def max_abs(v: array2, b: int) -> T:
        s = T(0.0)
        for i in range(v.shape[0]):
            s = wp.max(s, wp.abs(v[i, b]))
        return s

    @wp.func
    def row_step_sizes(base: T, l: array2, u: array2, b: int, equality_scale: T, rho: array2):
        """Each row's step size: equality rows (l = u to 1e-9 relative) `equality_scale` stiffer,
        at most 1e6."""
        for r in range(rho.shape[0]):
            lower = l[b, r]
            magnitude = T(0.0)
            if wp.isfinite(lower):
                magnitude = wp.abs(lower)
            if wp.abs(u[b, r] - lower) <= T(1e-9) * (T(1.0) + magnitude):
                rho[r, b] = wp.min(base * equality_scale, T(1e6))
            else:
                rho[r, b] = base

    @wp.func
    def invert(H: array3, A: array3, a: int, rho: array2, b: int, sigma: T, eps: T, tiny: T, K: array3):
        """K[:, :, b] = (H + sigma' I + A' diag(rho) A)^-1 with sigma' = max(sigma, 10 eps x the
        largest diagonal entry), by Gauss-Jordan elimination in place without pivoting; a pivot
        that rounding made tiny or negative is raised to eps x the largest diagonal entry."""
        n = H.shape[1]
        largest = T(0.0)
        for i in range(n):
            for j in range(n):
                s = H[b, i, j]
                for r in range(A.shape[1]):
                    s += A[a, r, i] * rho[r, b] * A[a, r, j]
                K[i, j, b] = s
            largest = wp.max(largest, K[i, i, b])
        shift = wp.max(sigma, T(10.0) * eps * largest)
        for i in range(n):
            K[i, i, b] = K[i, i, b] + shift
        floor = wp.max(eps * (largest + shift), tiny)
        for k in range(n):
            p = T(1.0) / wp.max(K[k, k, b], floor)
            K[k, k, b] = T(1.0)
            for j in range(n):
                K[k, j, b] = K[k, j, b] * p
            for i in range(n):
                if i != k:
                    f = K[i, k, b]
                    K[i, k, b] = T(0.0)
                    for j in range(n):
                        K[i, j, b] = K[i, j, b] - f * K[k, j, b]

    @wp.func
    def adapted(
        base: T,
        H: array3,
        g: array2,
        A: array3,
        a: int,
        x: array2,
        z: array2,
        y: array2,
        b: int,
        tolerance: T,
        converged: T,
        tiny: T,
        ax: array2,
        hx: array2,
        aty: array2,
    ) -> T:
        """OSQP's step-size update: base x sqrt(relative primal / relative dual residual) where
        that factor is beyond `tolerance` either way and the problem has not converged (both
        relative residuals below `converged`), within [1e-6, 1e6]."""
        times_a(A, a, x, b, ax)
        times_a(H, b, x, b, hx)
        times_a_transposed(A, a, y, b, aty)
        primal = T(0.0)
        for r in range(z.shape[0]):
            primal = wp.max(primal, wp.abs(ax[r, b] - z[r, b]))
        primal = primal / wp.max(wp.max(max_abs(ax, b), max_abs(z, b)), tiny)
        dual = T(0.0)
        g_norm = T(0.0)
        for i in range(x.shape[0]):
            dual = wp.max(dual, wp.abs(hx[i, b] + g[b, i] + aty[i, b]))
            g_norm = wp.max(g_norm, wp.abs(g[b, i]))
        dual = dual / wp.max(wp.max(wp.max(max_abs(hx, b), max_abs(aty, b)), g_norm), tiny)
        ratio = wp.clamp(wp.sqrt(wp.max(primal, tiny) / wp.max(dual, tiny)), T(1e-3), T(1e3))
        far = ratio > tolerance or ratio < T(1.0) / tolerance
        factor = T(1.0)
        if far and not (primal < converged and dual < converged):
            factor = ratio
        return wp.clamp(base * factor, T(1e-6), T(1e6))

    @wp.kernel(enable_backward=False, module="unique")
    def solve(
        # the (scaled) problems: H (B, n, n), g (B, n), A (B or 1, m, n), l and u (B, m)
        H: array3,
        g: array2,
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
        # scratch, variable-major: (n, n, B), (n, B) and (m, B)
        K: array3,
        x: array2,
        x_prev: array2,
        x_tilde: array2,
        work_n: array2,
        z: array2,
        y: array2,
        y_prev: array2,
        rho: array2,
        work_m: array2,
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
        n = H.shape[1]
        m = A.shape[1]
        for i in range(n):
            x[i, b] = x_state[b, i] / D[b, i]
        for r in range(m):
            y[r, b] = c[b] * y_state[b, r] / E[b, r]
        times_a(A, a, x, b, z)
        for r in range(m):
            z[r, b] = wp.clamp(z[r, b], l[b, r], u[b, r])
        base = rho_state[b]
        row_step_sizes(base, l, u, b, equality_scale, rho)
        invert(H, A, a, rho, b, sigma, eps, tiny, K)
        for k in range(iterations):
            if adapt_every > 0 and k > 0 and k % adapt_every == 0:
                base = adapted(base, H, g, A, a, x, z, y, b, adapt_tolerance, converged, tiny, work_m, x_tilde, work_n)
                row_step_sizes(base, l, u, b, equality_scale, rho)
                invert(H, A, a, rho, b, sigma, eps, tiny, K)
            if k == iterations - 1:  # the last step's change certifies infeasibility
                for i in range(n):
                    x_prev[i, b] = x[i, b]
                for r in range(m):
                    y_prev[r, b] = y[r, b]
            # x~ = x - K^-1 (H x + g + A'(y + rho (A x - z))): OSQP's linear system as a correction
            times_a(A, a, x, b, work_m)
            for r in range(m):
                work_m[r, b] = y[r, b] + rho[r, b] * (work_m[r, b] - z[r, b])
            times_a_transposed(A, a, work_m, b, work_n)
            times_a(H, b, x, b, x_tilde)
            for i in range(n):
                work_n[i, b] = work_n[i, b] + x_tilde[i, b] + g[b, i]
            for i in range(n):
                s = T(0.0)
                for j in range(n):
                    s += K[i, j, b] * work_n[j, b]
                x_tilde[i, b] = x[i, b] - s
            times_a(A, a, x_tilde, b, work_m)  # z~ = A x~
            for i in range(n):
                x[i, b] = alpha * x_tilde[i, b] + (T(1.0) - alpha) * x[i, b]
            for r in range(m):
                relaxed = alpha * work_m[r, b] + (T(1.0) - alpha) * z[r, b]
                z_next = wp.clamp(relaxed + y[r, b] / rho[r, b], l[b, r], u[b, r])
                y[r, b] = y[r, b] + rho[r, b] * (relaxed - z_next)
                z[r, b] = z_next

        # OSQP's certificates on the last step's change. Primal: dy (projected: no push against
        # an infinite bound) with |A'dy| <= tol |dy| and u'max(dy, 0) + l'min(dy, 0) < -tol |dy|.
        dy_norm = T(0.0)
        support = T(0.0)
        for r in range(m):
            dy = y[r, b] - y_prev[r, b]
            if (dy > T(0.0) and wp.isinf(u[b, r])) or (dy < T(0.0) and wp.isinf(l[b, r])):
                dy = T(0.0)
            if dy > T(0.0):
                support += u[b, r] * dy
            if dy < T(0.0):
                support += l[b, r] * dy
            dy_norm = wp.max(dy_norm, wp.abs(dy))
            work_m[r, b] = dy
        times_a_transposed(A, a, work_m, b, work_n)
        tol = infeasibility_tol * dy_norm
        primal_flag = dy_norm > T(0.0) and max_abs(work_n, b) <= tol and support < -tol
        # Dual (unbounded): dx with |H dx| <= tol |dx|, g'dx < -tol |dx|, and A dx pointing out of
        # [l, u] only where that side is unbounded.
        dx_norm = T(0.0)
        g_dx = T(0.0)
        for i in range(n):
            dx = x[i, b] - x_prev[i, b]
            x_tilde[i, b] = dx
            g_dx += g[b, i] * dx
            dx_norm = wp.max(dx_norm, wp.abs(dx))
        tol = infeasibility_tol * dx_norm
        times_a(A, a, x_tilde, b, work_m)
        along = bool(True)  # noqa: UP018 (Warp: a variable the loop may change, not a constant)
        for r in range(m):
            if wp.isfinite(u[b, r]) and work_m[r, b] > tol:
                along = False
            if wp.isfinite(l[b, r]) and work_m[r, b] < -tol:
                along = False
        times_a(H, b, x_tilde, b, work_n)
        dual_flag = dx_norm > T(0.0) and max_abs(work_n, b) <= tol and g_dx < -tol and along
        primal_infeasible[b] = primal_flag
        dual_infeasible[b] = dual_flag and not primal_flag

        if adapt_every > 0:  # for the next solve: solves shorter than `adapt_every` adapt once each
            base = adapted(base, H, g, A, a, x, z, y, b, adapt_tolerance, converged, tiny, work_m, x_tilde, work_n)
        rho_state[b] = base

        # Residuals of the problem as given: A x = (As xs) / E and H x + g + A'y = (Hs xs + gs + As'ys) / (c D).
        times_a(A, a, x, b, work_m)
        primal = T(0.0)
        for r in range(m):
            v = work_m[r, b]
            primal = wp.max(primal, wp.abs(v - wp.clamp(v, l[b, r], u[b, r])) / E[b, r])
            y_out[b, r] = E[b, r] * y[r, b] / c[b]
            y_state[b, r] = y_out[b, r]
        times_a_transposed(A, a, y, b, work_n)
        times_a(H, b, x, b, x_tilde)
        dual = T(0.0)
        for i in range(n):
            dual = wp.max(dual, wp.abs(x_tilde[i, b] + g[b, i] + work_n[i, b]) / (c[b] * D[b, i]))
            x_out[b, i] = D[b, i] * x[i, b]
            x_state[b, i] = x_out[b, i]
        primal_residual[b] = primal
        dual_residual[b] = dual

    return solve
