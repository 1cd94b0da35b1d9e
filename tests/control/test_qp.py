"""The batched QP solver against proxsuite (a proximal augmented-Lagrangian solver, run to
1e-10) on random feasible QPs and on quadruped force-distribution QPs: solution and objective
within 1e-4 relative, constraint violation <= 1e-5; infeasible and unbounded problems flagged,
never NaN; warm starts track a changing problem."""

# The QP literature's names (H, A, l, u) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

from __future__ import annotations

import numpy as np
import pytest
import torch

from phalanx.control.force_qp import force_distribution_qp, skew
from phalanx.control.host_qp import proxsuite_problem
from phalanx.control.qp import BatchedQP, QPSettings, spd_inverse
from phalanx.core.errors import ConfigError

proxsuite = pytest.importorskip("proxsuite", reason="the reference solver: pip install -e '.[test]'")

INF = float("inf")
BACKENDS = ("torch", "warp")  # "auto" is one of them
EACH_BACKEND = pytest.mark.parametrize("backend", BACKENDS)


def reference(H, g, A, l, u) -> tuple[np.ndarray, float]:
    """proxsuite's solution and objective of one problem (float64, numpy)."""
    Hn, gn, An, ln, un = (t.double().numpy() for t in (H, g, A, l, u))
    result = proxsuite.proxqp.dense.solve(*proxsuite_problem(Hn, gn, An, ln, un), eps_abs=1e-10, eps_rel=0.0)
    assert result.info.status == proxsuite.proxqp.QPSolverOutput.PROXQP_SOLVED
    x = result.x
    return x, 0.5 * x @ Hn @ x + gn @ x


def objective(H, g, x) -> torch.Tensor:
    return 0.5 * torch.einsum("bi,bij,bj->b", x, H, x) + (g * x).sum(-1)


def violation(A, l, u, x) -> torch.Tensor:
    Ax = (A @ x[..., None]).squeeze(-1)
    return (Ax - Ax.clamp(l, u)).abs().amax(-1)


def random_qps(batch: int, n: int, m: int, seed: int):
    """Feasible QPs (a point x0 satisfies every row) with equality rows, one-sided and two-sided
    bounds, well- and ill-conditioned Hessians."""
    g = torch.Generator().manual_seed(seed)
    M = torch.randn(batch, n, n, generator=g, dtype=torch.float64)
    H = M @ M.mT / n
    H[: batch // 2] += 0.1 * torch.eye(n, dtype=torch.float64)  # the other half: ill-conditioned
    q = torch.randn(batch, n, generator=g, dtype=torch.float64)
    A = torch.randn(batch, m, n, generator=g, dtype=torch.float64)
    x0 = torch.randn(batch, n, generator=g, dtype=torch.float64)
    Ax0 = (A @ x0[..., None]).squeeze(-1)
    l = Ax0 - torch.rand(batch, m, generator=g, dtype=torch.float64)
    u = Ax0 + torch.rand(batch, m, generator=g, dtype=torch.float64)
    l[:, :2] = u[:, :2] = Ax0[:, :2]  # two equality rows
    l[:, 2:4] = -INF  # upper bounds only
    u[:, 4:6] = INF  # lower bounds only
    return H, q, A, l, u


def force_distribution_qps(batch: int, seed: int):
    """A 50 kg quadruped's feet near a 0.7 x 0.5 m rectangle 0.5 m below the center of mass, a
    desired wrench around its weight; in half the problems two diagonal feet swing (a trot)."""
    g = torch.Generator().manual_seed(seed)
    feet = torch.tensor([[0.35, 0.25, -0.5], [0.35, -0.25, -0.5], [-0.35, 0.25, -0.5], [-0.35, -0.25, -0.5]])
    feet = feet.double() + 0.05 * torch.randn(batch, 4, 3, generator=g, dtype=torch.float64)
    wrench = torch.randn(batch, 6, generator=g, dtype=torch.float64) * torch.tensor([40, 40, 60, 10, 10, 5.0])
    wrench[:, 2] += 50.0 * 9.81
    stance = torch.ones(batch, 4, dtype=torch.bool)
    stance[: batch // 2, 0] = stance[: batch // 2, 3] = False
    H, g, A, l, u = force_distribution_qp(feet, wrench, stance, mu=0.6, f_max=500.0)
    return H, g, A.expand(batch, -1, -1), l, u  # per problem, as the reference solver takes them


def check_against_reference(solution, H, g, A, l, u) -> None:
    assert torch.isfinite(solution.x).all() and torch.isfinite(solution.y).all()
    assert not solution.primal_infeasible.any() and not solution.dual_infeasible.any()
    assert violation(A, l, u, solution.x).max() <= 1e-5
    ours = objective(H, g, solution.x)
    for b in range(len(H)):
        x_ref, f_ref = reference(H[b], g[b], A[b], l[b], u[b])
        assert abs(ours[b].item() - f_ref) <= 1e-4 * max(1.0, abs(f_ref)), f"problem {b}: objective"
        error = (solution.x[b] - torch.from_numpy(x_ref)).norm() / max(1.0, float(np.linalg.norm(x_ref)))
        assert error <= 1e-4, f"problem {b}: |x - x_ref| / |x_ref| = {error:.2e}"


@EACH_BACKEND
@pytest.mark.parametrize(("m", "iterations"), [(8, 400), (30, 1000)])
def test_random_feasible_qps_match_the_reference(m: int, iterations: int, backend: str) -> None:
    """10 variables and 8 or 30 rows, equilibrated first (Ruiz scaling)."""
    H, g, A, l, u = random_qps(64, 10, m, seed=0)
    settings = QPSettings(iterations=iterations, scaling_iterations=10, backend=backend)
    solution = BatchedQP(64, 10, m, settings, dtype=torch.float64).solve(H, g, A, l, u)
    check_against_reference(solution, H, g, A, l, u)
    assert solution.primal_residual.max() <= 1e-5 and solution.dual_residual.max() <= 1e-5


@EACH_BACKEND
def test_force_distribution_qps_match_the_reference(backend: str) -> None:
    H, g, A, l, u = force_distribution_qps(64, seed=1)
    solution = BatchedQP(64, 12, 20, QPSettings(backend=backend), dtype=torch.float64).solve(H, g, A, l, u)
    check_against_reference(solution, H, g, A, l, u)
    forces = solution.x.view(64, 4, 3)
    assert forces[:32, 0].abs().max() <= 1e-6 and forces[:32, 3].abs().max() <= 1e-6, "swing feet push nothing"
    assert (forces[..., 2] >= -1e-6).all()


@EACH_BACKEND
def test_float32_meets_the_tolerances_too(backend: str) -> None:
    H, g, A, l, u = force_distribution_qps(32, seed=2)
    solution = BatchedQP(32, 12, 20, QPSettings(backend=backend)).solve(*(t.float() for t in (H, g, A, l, u)))
    assert violation(A, l, u, solution.x.double()).max() <= 1e-5 * 500  # relative to the 500 N bound
    for b in range(4):
        _, f_ref = reference(H[b], g[b], A[b], l[b], u[b])
        ours = objective(H[b : b + 1], g[b : b + 1], solution.x[b : b + 1].double()).item()
        assert abs(ours - f_ref) <= 1e-4 * max(1.0, abs(f_ref))


def infeasible_and_unbounded_qps():
    """Six problems of 4 variables and 8 rows: 0-1 primal infeasible (x0 >= 1 and x0 <= 0), 2-3
    unbounded (H = 0, g pulls x0 to -inf, x0 only bounded above), 4-5 feasible."""
    H, g, A, l, u = random_qps(6, 4, 8, seed=3)
    A[:4] = 0.0
    A[:4, 0, 0] = A[:4, 1, 0] = 1.0
    l[:4], u[:4] = -INF, INF
    l[:2, 0], u[:2, 1] = 1.0, 0.0
    u[2:4, 0] = 0.0
    H[2:4] = 0.0
    g[2:4] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    return H, g, A, l, u


@EACH_BACKEND
def test_infeasible_and_unbounded_problems_are_flagged_never_nan(backend: str) -> None:
    H, g, A, l, u = infeasible_and_unbounded_qps()
    solution = BatchedQP(6, 4, 8, QPSettings(backend=backend), dtype=torch.float64).solve(H, g, A, l, u)
    assert solution.primal_infeasible.tolist() == [True, True, False, False, False, False]
    assert solution.dual_infeasible.tolist() == [False, False, True, True, False, False]
    for value in (solution.x, solution.y, solution.primal_residual, solution.dual_residual):
        assert not torch.isnan(value).any()


@EACH_BACKEND
def test_warm_starts_track_a_changing_problem_with_few_iterations(backend: str) -> None:
    """A control loop: the wrench drifts 0.2 % per step and each step gets 10 ADMM iterations.
    Warm-started (solution, multipliers and step size), the solver tracks the optimum; started
    cold every step, 10 iterations get nowhere near it."""
    H, g, A, l, u = force_distribution_qps(32, seed=4)
    few = QPSettings(iterations=10, backend=backend)
    warm, cold = BatchedQP(32, 12, 20, few, dtype=torch.float64), BatchedQP(32, 12, 20, few, dtype=torch.float64)
    for step in range(10):
        g_step = g * (1 + 0.002 * step)
        tracked = warm.solve(H, g_step, A, l, u)
        cold.reset()
        fresh = cold.solve(H, g_step, A, l, u)
    assert tracked.dual_residual.max() < 1e-2 * fresh.dual_residual.median()
    assert tracked.primal_residual.max() < 2e-2  # N, on forces of hundreds of N
    warm.reset(torch.arange(32) < 16)
    assert (warm.x[:16] == 0).all() and (warm.x[16:] == tracked.x[16:]).all()
    assert (warm.rho[:16] == few.rho).all()


def test_bad_settings_and_shapes_are_refused() -> None:
    with pytest.raises(ConfigError, match="qp.alpha: must be in"):
        BatchedQP(2, 3, 4, QPSettings(alpha=2.0))
    with pytest.raises(ConfigError, match="qp.iterations"):
        BatchedQP(2, 3, 4, QPSettings(iterations=0))
    with pytest.raises(ConfigError, match="qp.backend: must be one of 'auto', 'torch', 'warp', got 'cuda'"):
        BatchedQP(2, 3, 4, QPSettings(backend="cuda"))
    for block_dim in (48, 0, 512, 64.0):
        with pytest.raises(
            ConfigError, match=f"qp.block_dim: must be a multiple of 32 in \\[32, 256\\], got {block_dim}"
        ):
            BatchedQP(2, 3, 4, QPSettings(block_dim=block_dim))
    assert BatchedQP(2, 3, 4).backend == "torch", "auto: torch on a CPU"
    with pytest.raises(ValueError, match="the warp backend solves in float32 or float64, got torch.float16"):
        BatchedQP(2, 3, 4, QPSettings(backend="warp"), dtype=torch.float16)
    qp = BatchedQP(2, 3, 4)
    with pytest.raises(ValueError, match=r"A has shape \(2, 3, 3\), expected \(2, 4, 3\) or \(4, 3\)"):
        qp.solve(
            torch.eye(3).expand(2, 3, 3), torch.zeros(2, 3), torch.zeros(2, 3, 3), torch.zeros(2, 4), torch.ones(2, 4)
        )


def test_the_force_qp_realizes_a_wrench_its_feet_can_produce() -> None:
    """Four stance feet, a wrench inside their friction cones: the optimum produces it (up to the
    small force regularization), and G maps forces to the net force and torque about the CoM."""
    feet = torch.tensor(
        [[[0.3, 0.2, -0.5], [0.3, -0.2, -0.5], [-0.3, 0.2, -0.5], [-0.3, -0.2, -0.5]]], dtype=torch.float64
    )
    wrench = torch.tensor([[5.0, -3.0, 400.0, 2.0, -1.0, 0.5]], dtype=torch.float64)
    H, g, A, l, u = force_distribution_qp(feet, wrench, torch.ones(1, 4, dtype=torch.bool), mu=0.6, f_max=500.0)
    solution = BatchedQP(1, 12, 20, dtype=torch.float64).solve(H, g, A, l, u)
    f = solution.x.view(4, 3)
    net_force = f.sum(0)
    net_torque = torch.linalg.cross(feet[0], f).sum(0)
    assert torch.allclose(torch.cat((net_force, net_torque)), wrench[0], rtol=1e-3, atol=0.02)
    v = torch.tensor([0.1, -2.0, 3.0], dtype=torch.float64)
    assert torch.allclose(skew(feet[0, 0]) @ v, torch.linalg.cross(feet[0, 0], v))


@EACH_BACKEND
def test_a_shared_constraint_matrix_gives_the_same_solutions(backend: str) -> None:
    H, g, A, l, u = force_distribution_qps(16, seed=5)
    settings = QPSettings(backend=backend)
    per_problem = BatchedQP(16, 12, 20, settings, dtype=torch.float64).solve(H, g, A, l, u)
    shared = BatchedQP(16, 12, 20, settings, dtype=torch.float64).solve(H, g, A[0], l, u)
    assert torch.allclose(shared.x, per_problem.x, atol=1e-9) and torch.allclose(shared.y, per_problem.y, atol=1e-7)
    with pytest.raises(ValueError, match=r"A has shape \(20, 11\), expected \(16, 20, 12\) or \(20, 12\)"):
        BatchedQP(16, 12, 20, dtype=torch.float64).solve(H, g, A[0, :, :11], l, u)


@EACH_BACKEND
def test_scaling_works_with_a_shared_constraint_matrix(backend: str) -> None:
    H, g, A, l, u = force_distribution_qps(16, seed=6)
    settings = QPSettings(iterations=400, scaling_iterations=10, backend=backend)
    shared = BatchedQP(16, 12, 20, settings, dtype=torch.float64).solve(H, g, A[0], l, u)
    check_against_reference(shared, H, g, A, l, u)


@EACH_BACKEND
def test_float32_stays_finite_on_nearly_singular_admm_matrices(backend: str) -> None:
    """No cost (H = 0) and fewer rows than variables: sigma I + A' rho A is singular to float32's
    precision. The solution may be rough, but it is finite."""
    gen = torch.Generator().manual_seed(7)
    A = torch.randn(256, 4, 10, generator=gen)
    l, u = -torch.rand(256, 4, generator=gen), torch.rand(256, 4, generator=gen)
    u[:, 0] = l[:, 0]  # one equality row each, at the largest step size
    solver = BatchedQP(256, 10, 4, QPSettings(backend=backend))
    solution = solver.solve(torch.zeros(256, 10, 10), torch.zeros(256, 10), A, l, u)
    for value in (solution.x, solution.y, solution.primal_residual, solution.dual_residual):
        assert torch.isfinite(value).all()


def test_spd_inverse_is_exact_at_any_scale() -> None:
    """The pivot floor guards against rounding relative to the matrix's own scale: a well-
    conditioned matrix of tiny or huge entries is inverted as accurately as one near 1."""
    base = torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    for scale in (1e-9, 1.0, 1e9):
        K = (scale * base).expand(2, 3, 3)
        assert torch.allclose(spd_inverse(K) @ K, torch.eye(3).expand(2, 3, 3), atol=1e-5)


@pytest.mark.parametrize("scaling_iterations", [0, 10])
def test_the_backends_agree_to_rounding(scaling_iterations: int) -> None:
    """The one-kernel solve runs the torch steps' algorithm: over warm-started solves of a drifting
    problem (the step size adapting within and between them) solutions and multipliers agree to
    rounding, as amplified by the ill-conditioned half of the problems and by step sizes adapted
    to residuals near rounding; the flags agree, and the residuals (linear in the solution) to the
    solutions' tolerance times the matrices' norms."""
    H, g, A, l, u = random_qps(32, 10, 8, seed=3)
    # the residuals are linear in the solution (A x - z; H x + g + A' y): they agree to the
    # solutions' tolerance times the largest of the matrices' inf-norms
    norm = max(H.abs().sum(-1).amax(), A.abs().sum(-1).amax(), A.abs().sum(-2).amax()).item()
    settings = {"iterations": 60, "adapt_every": 25, "scaling_iterations": scaling_iterations}
    solvers = [BatchedQP(32, 10, 8, QPSettings(**settings, backend=b), dtype=torch.float64) for b in BACKENDS]
    for step in range(3):
        g_step = g * (1 + 0.01 * step)
        ours, theirs = (solver.solve(H, g_step, A, l, u) for solver in solvers)
        assert (ours.primal_infeasible == theirs.primal_infeasible).all()
        assert (ours.dual_infeasible == theirs.dual_infeasible).all()
        assert torch.allclose(ours.x, theirs.x, atol=1e-7) and torch.allclose(ours.y, theirs.y, atol=1e-7)
        for name in ("primal_residual", "dual_residual"):
            assert torch.allclose(getattr(ours, name), getattr(theirs, name), atol=1e-7 * norm), name


def test_the_backends_agree_on_every_step_schedule() -> None:
    """The kernel runs its steps in runs between step-size updates (`adapt_every` steps each, all
    in one when 0, a shorter last one): one step, updates after every step, none, and runs that
    do not divide the steps give the torch steps' solutions, as above."""
    H, g, A, l, u = random_qps(32, 10, 8, seed=3)
    for iterations, adapt_every in ((1, 25), (2, 1), (7, 0), (7, 3), (26, 25)):
        settings = {"iterations": iterations, "adapt_every": adapt_every}
        solvers = [BatchedQP(32, 10, 8, QPSettings(**settings, backend=b), dtype=torch.float64) for b in BACKENDS]
        for step in range(3):
            ours, theirs = (solver.solve(H, g * (1 + 0.01 * step), A, l, u) for solver in solvers)
            assert (ours.primal_infeasible == theirs.primal_infeasible).all(), settings
            assert torch.allclose(ours.x, theirs.x, atol=1e-7) and torch.allclose(ours.y, theirs.y, atol=1e-7), settings


@pytest.mark.parametrize("n", [12, 120, 125])
def test_spd_inverse_by_blocks_inverts_to_rounding(n: int) -> None:
    """Blocks of 32 columns (an MPC's 120 x 120 matrices, and sizes that leave a partial block)
    invert as exactly as one column at a time: K^-1 K = I to float64 rounding. A singular float32
    matrix of at most one block's columns gets a finite inverse."""
    gen = torch.Generator().manual_seed(n)
    X = torch.randn(4, n, 2 * n, generator=gen, dtype=torch.float64)
    K = X @ X.mT / n + 1e-3 * torch.eye(n, dtype=torch.float64)
    torch.testing.assert_close(spd_inverse(K) @ K, torch.eye(n, dtype=torch.float64).expand_as(K), atol=1e-10, rtol=0)
    if n <= 32:
        singular = (X[:, :, :3] @ X[:, :, :3].mT).float()  # rank 3
        assert torch.isfinite(spd_inverse(singular)).all()
