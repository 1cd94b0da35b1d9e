"""HostQP, the force QPs solved one by one on the CPU with proxsuite, against the batched solver:
the same solutions, its warm starts and resets, infeasible problems flagged and never NaN; and
quadruped_control solving its QP on the host in an uncaptured env, and refusing a captured one."""

# The QP literature's names (H, A, l, u) read better here than PEP 8's.
# ruff: noqa: N806, E741

from __future__ import annotations

import sys

import pytest
import torch

from helpers import make_cpu
from phalanx.control.body import BodyCfg, BodyController
from phalanx.control.host_qp import HostQP
from phalanx.control.qp import BatchedQP
from phalanx.core.errors import ConfigError
from phalanx.tasks.anymal.mdp import quadruped_control
from phalanx.training.registry import env_cfg

pytest.importorskip("proxsuite", reason="HostQP's solver: pip install -e '.[test]'")

from test_qp import force_distribution_qps, infeasible_and_unbounded_qps, objective  # noqa: E402 (needs proxsuite)

F64 = {"dtype": torch.float64}


def test_host_solutions_match_the_batched_solver() -> None:
    """64 force QPs, half with two feet in swing: x and the objective within 1e-5 relative of
    BatchedQP's (200 float64 ADMM steps), residuals at proxsuite's tolerance (the dual residual
    checks y's sign convention: y itself is not unique where a swinging foot's rows all bind), for a
    constraint matrix per problem or shared."""
    H, g, A, l, u = force_distribution_qps(64, seed=1)
    batched = BatchedQP(64, 12, 20, **F64).solve(H, g, A[0], l, u)
    for A_in in (A, A[0]):
        host = HostQP(64, 12, 20, **F64).solve(H, g, A_in, l, u)
        error = (host.x - batched.x).norm(dim=1) / batched.x.norm(dim=1).clamp_min(1.0)
        assert error.max() <= 1e-5
        ours, theirs = objective(H, g, host.x), objective(H, g, batched.x)
        assert ((ours - theirs).abs() <= 1e-5 * theirs.abs().clamp_min(1.0)).all()
        assert host.primal_residual.max() <= 1e-6 and host.dual_residual.max() <= 1e-6
        assert not host.primal_infeasible.any() and not host.dual_infeasible.any()
        assert host.x.dtype == torch.float64 and host.primal_infeasible.dtype == torch.bool


def test_a_solve_warm_starts_from_the_last_solution_and_a_reset_starts_cold() -> None:
    """With one iteration allowed, a solve started from the exact solution (written into x and y,
    as a controller's load_state_dict does) stays solved; the problems reset start from x = 0,
    y = 0 and one iteration leaves them unsolved (flagged, as proxsuite stopped short)."""
    H, g, A, l, u = force_distribution_qps(32, seed=4)
    exact = HostQP(32, 12, 20, **F64)
    exact.solve(H, g, A[0], l, u)
    qp = HostQP(32, 12, 20, max_iter=1, **F64)
    qp.x.copy_(exact.x)
    qp.y.copy_(exact.y)
    warm = qp.solve(H, g, A[0], l, u)
    assert warm.primal_residual.max() <= 1e-6 and warm.dual_residual.max() <= 1e-6
    assert torch.equal(qp.x, warm.x) and (warm.x - exact.x).abs().max() <= 1e-9
    qp.reset(torch.arange(32) < 16)
    assert (qp.x[:16] == 0).all() and (qp.y[:16] == 0).all() and torch.equal(qp.x[16:], warm.x[16:])
    again = qp.solve(H, g, A[0], l, u)
    assert (again.primal_residual[:16] > 1e-3).all() and again.primal_infeasible[:16].all()
    assert again.primal_residual[16:].max() <= 1e-6 and not again.primal_infeasible[16:].any()


def test_infeasible_and_unbounded_problems_are_flagged_never_nan() -> None:
    H, g, A, l, u = infeasible_and_unbounded_qps()
    solution = HostQP(6, 4, 8, max_iter=200, **F64).solve(H, g, A, l, u)
    assert solution.primal_infeasible.tolist() == [True, True, False, False, False, False]
    assert solution.dual_infeasible.tolist() == [False, False, True, True, False, False]
    for value in (solution.x, solution.y, solution.primal_residual, solution.dual_residual):
        assert torch.isfinite(value).all()


def test_bad_shapes_a_bad_solver_name_and_a_missing_proxsuite_are_refused(monkeypatch) -> None:
    qp = HostQP(2, 3, 4)
    with pytest.raises(ValueError, match=r"HostQP.solve: A has shape \(2, 3, 3\), expected \(2, 4, 3\) or \(4, 3\)"):
        qp.solve(
            torch.eye(3).expand(2, 3, 3), torch.zeros(2, 3), torch.zeros(2, 3, 3), torch.zeros(2, 4), torch.ones(2, 4)
        )
    with pytest.raises(ConfigError, match="must be one of 'device', 'host', got 'gpu'") as error:
        BodyController(BodyCfg(mass=50.0, inertia=(1.0, 2.0, 2.0), qp_solver="gpu"), 2, 4)
    assert error.value.field == "body.qp_solver"
    monkeypatch.setitem(sys.modules, "proxsuite", None)  # import proxsuite now fails
    with pytest.raises(ConfigError, match="pip install proxsuite"):
        HostQP(2, 3, 4)


def test_quadruped_control_solves_on_the_host_and_refuses_a_captured_step() -> None:
    """anymal-qp with qp_solver="host": the robots stand on zero actions with every QP solved;
    a captured step, or a solver name that is not one, is refused naming the param."""
    cfg = env_cfg("anymal-qp")
    cfg.actions.controller.params["qp_solver"] = "host"
    env = make_cpu(cfg, num_envs=2)
    qp = env.low_level.controller.body.qp
    assert isinstance(qp, HostQP)
    zeros = torch.zeros(2, env.action_dim)
    for _ in range(3):
        obs, _, terminated, truncated, _ = env.step(zeros)
        assert torch.isfinite(obs["policy"]).all() and not (terminated | truncated).any()
    assert qp.host_solves >= 3 * 4 * 2 and (quadruped_control.qp_infeasible(env) == 0).all()
    assert qp.x.abs().max() > 50.0, "the standing feet carry the robot's weight"
    field = "env.actions.controller.params.qp_solver"
    with pytest.raises(ConfigError, match="build the env with capture=False") as error:
        make_cpu(cfg, num_envs=2, capture=True)
    assert error.value.field == field
    cfg.actions.controller.params["qp_solver"] = "gpu"
    with pytest.raises(ConfigError, match="must be one of 'device', 'host', got 'gpu'") as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == field
