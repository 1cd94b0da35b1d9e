"""The centroidal MPC's QP: its condensed prediction against the dynamics stepped by hand, a robot
at rest holding its weight, the batched device solve against proxsuite on the CPU (the same QPs),
feet in the air carrying nothing, and bad settings refused in one line."""

# The control literature's names (A, B, H, X) read better here than PEP 8's.
# ruff: noqa: N806, E741

from __future__ import annotations

import math

import pytest
import torch

from phalanx.control.force_qp import skew
from phalanx.control.host_qp import HostQP
from phalanx.control.mpc import STATE, CentroidalMPC, MPCCfg, body_state, reference
from phalanx.control.qp import BatchedQP, QPSettings
from phalanx.core.errors import ConfigError

F64 = {"dtype": torch.float64}
MASS, INERTIA, MU, F_MAX = 40.0, (0.6, 1.8, 2.0), 0.6, 500.0
HIPS = torch.tensor([[0.35, 0.2, -0.5], [0.35, -0.2, -0.5], [-0.35, 0.2, -0.5], [-0.35, -0.2, -0.5]], **F64)


def _mpc(cfg: MPCCfg | None = None) -> CentroidalMPC:
    return CentroidalMPC(cfg or MPCCfg(), 4, MASS, INERTIA, MU, F_MAX, **F64)


def _robots(batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random states near standing at 0.5 m, feet near the hips, a trot's stance schedule (diagonal
    pairs alternating every 3 intervals, phases random), and the reference of a random command."""
    gen = torch.Generator().manual_seed(seed)
    cfg = MPCCfg()
    N = cfg.horizon
    x0 = torch.zeros(batch, STATE, **F64)
    x0[:, :3] = 0.1 * (torch.rand(batch, 3, generator=gen, **F64) - 0.5)
    x0[:, 2] = math.pi * (2 * torch.rand(batch, generator=gen, **F64) - 1)
    x0[:, 3:6] = torch.tensor([0.0, 0.0, 0.5], **F64) + 0.05 * torch.randn(batch, 3, generator=gen, **F64)
    x0[:, 6:] = 0.3 * torch.randn(batch, 6, generator=gen, **F64)
    feet = HIPS + 0.03 * torch.randn(batch, N, 4, 3, generator=gen, **F64)
    phase = torch.randint(0, 6, (batch, 1), generator=gen) + torch.arange(N)
    first_pair = (phase // 3) % 2 == 0  # (B, N)
    stance = torch.stack((first_pair, ~first_pair, ~first_pair, first_pair), dim=-1)
    command = torch.tensor([1.0, 0.3, 0.5], **F64) * (2 * torch.rand(batch, 3, generator=gen, **F64) - 1)
    return x0, feet, stance, reference(x0, command[:, :2], command[:, 2], torch.full((batch,), 0.5, **F64), cfg)


def test_the_condensed_prediction_steps_the_dynamics_as_written() -> None:
    """X = Gamma F + X_free against the Euler step of the centroidal dynamics, written out term by
    term, interval after interval, for random states, footholds and forces."""
    mpc = _mpc()
    x0, feet, _, _ = _robots(8, seed=0)
    forces = 100 * torch.randn(8, mpc.cfg.horizon, 4, 3, generator=torch.Generator().manual_seed(1), **F64)
    gamma, free = mpc.predict(x0, feet)
    predicted = (gamma @ forces.flatten(1)[..., None]).squeeze(-1) + free
    dt, x, expected = mpc.cfg.dt, x0.clone(), []
    for t in range(mpc.cfg.horizon):
        yaw = x0[:, 2]
        Rz = torch.zeros(8, 3, 3, **F64)
        Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1] = yaw.cos(), -yaw.sin(), yaw.sin(), yaw.cos()
        Rz[:, 2, 2] = 1.0
        inertia = Rz @ torch.diag(torch.tensor(INERTIA, **F64)) @ Rz.mT
        torque = torch.cross(feet[:, t], forces[:, t], dim=-1).sum(1)
        force = forces[:, t].sum(1) + torch.tensor([0.0, 0.0, -9.81 * MASS], **F64)
        angles = x[:, 0:3] + dt * (Rz.mT @ x[:, 6:9, None]).squeeze(-1)
        position = x[:, 3:6] + dt * x[:, 9:12]
        spin = x[:, 6:9] + dt * torch.linalg.solve(inertia, torque)
        velocity = x[:, 9:12] + dt * force / MASS
        x = torch.cat((angles, position, spin, velocity), dim=1)
        expected.append(x)
    torch.testing.assert_close(predicted, torch.cat(expected, dim=1), rtol=1e-12, atol=1e-10)


def _solve(mpc: CentroidalMPC, qp, x0, feet, stance, ref):
    H, g, A, l, u = mpc(x0, feet, stance, ref)
    return qp.solve(H, g, A, l, u), (H, g, A, l, u)


def test_a_robot_at_rest_on_four_feet_holds_its_weight() -> None:
    """Standing at the reference with every foot down: each interval's forces add up to the weight
    (to 0.1 %), to the horizon's end, with no torque about the center of mass, and the predicted
    body stays put."""
    mpc = _mpc()
    N = mpc.cfg.horizon
    x0 = torch.zeros(1, STATE, **F64)
    x0[0, 5] = 0.5
    feet, stance = HIPS.expand(1, N, 4, 3), torch.ones(1, N, 4, dtype=torch.bool)
    ref = reference(x0, torch.zeros(1, 2, **F64), torch.zeros(1, **F64), torch.tensor([0.5], **F64), mpc.cfg)
    host = HostQP(1, mpc.num_variables, mpc.num_constraints, eps_abs=1e-9, **F64)
    solution, _ = _solve(mpc, host, x0, feet, stance, ref)
    forces = mpc.forces(solution.x)[0]
    weight = torch.tensor([0.0, 0.0, 9.81 * MASS], **F64)
    torch.testing.assert_close(forces.sum(1), weight.expand(N, 3), rtol=0.0, atol=1e-3 * weight[2].item())
    torque = torch.cross(HIPS.expand(N, 4, 3), forces, dim=-1).sum(1)
    assert torque.abs().max() <= 1e-3 * weight[2] * 0.5
    gamma, free = mpc.predict(x0, feet)
    states = ((gamma @ forces.flatten()[:, None]).squeeze(-1) + free).view(N, STATE)
    assert (states[:, 3:6] - x0[0, 3:6]).abs().max() <= 1e-3


def test_the_batched_device_solve_matches_proxsuite_on_the_cpu() -> None:
    """64 robots of random states, footholds, trot phases and commands, cold: BatchedQP's ADMM
    (torch backend, 400 steps) against proxsuite to 1e-9, the same QPs. In float64 the forces agree
    to 1e-4 of the robot's weight (the QP's unit; 400 steps reach about 5e-6 here); in float32 to
    rounding (1.2e-7) times H's condition number. Every foot in the air carries nothing, every
    other stays in its friction pyramid."""
    mpc = _mpc()
    inputs = _robots(64, seed=2)
    n, m = mpc.num_variables, mpc.num_constraints
    H, g, A, l, u = mpc(*inputs)
    condition = torch.linalg.cond(H).max().item()
    theirs = HostQP(64, n, m, eps_abs=1e-9, max_iter=10000, **F64).solve(H, g, A, l, u)
    assert not theirs.primal_infeasible.any() and theirs.dual_residual.max() <= 1e-9
    weight = 9.81 * MASS
    for dtype, tolerance in ((torch.float64, 1e-4), (torch.float32, torch.finfo(torch.float32).eps * condition)):
        device = BatchedQP(64, n, m, QPSettings(iterations=400, backend="torch"), dtype=dtype)
        ours = device.solve(*(t.to(dtype) for t in (H, g, A, l, u)))
        assert not ours.primal_infeasible.any()
        forces = mpc.forces(ours.x.double())
        assert (forces - mpc.forces(theirs.x)).abs().max() <= tolerance * weight, dtype
    stance = inputs[2]
    assert forces[~stance].abs().max() <= 1e-4 * weight
    assert (forces[..., 2] >= -1e-4 * weight).all()
    assert (forces[..., :2].abs().amax(-1) <= MU * forces[..., 2] + 1e-4 * weight).all()


def test_a_robot_with_every_foot_in_the_air_gets_no_force_not_a_failed_solve() -> None:
    """A foothold off every stone: no foot down over the whole horizon. The QP stays feasible (zero
    forces), the solve finite and unflagged, beside robots that stand."""
    mpc = _mpc()
    x0, feet, stance, ref = _robots(4, seed=3)
    stance[1] = False
    device = BatchedQP(4, mpc.num_variables, mpc.num_constraints, QPSettings(backend="torch"), **F64)
    solution, _ = _solve(mpc, device, x0, feet, stance, ref)
    forces = mpc.forces(solution.x)
    assert torch.isfinite(forces).all() and not solution.primal_infeasible.any()
    assert forces[1].abs().max() <= 1e-6 and forces[0].abs().max() > 1.0


def test_the_reference_integrates_the_command() -> None:
    """A robot facing +y commanded 1 m/s along +y and 0.5 rad/s of yaw rate: the reference moves
    along +y at 1 m/s and turns at 0.5 rad/s, level at the commanded height."""
    cfg = MPCCfg()
    x0 = torch.zeros(1, STATE, **F64)
    x0[0, 2] = math.pi / 2
    ref = reference(x0, torch.tensor([[0.0, 1.0]], **F64), torch.tensor([0.5], **F64), torch.tensor([0.45], **F64), cfg)
    ref, t = ref[0], cfg.dt * torch.arange(1, cfg.horizon + 1, **F64)
    torch.testing.assert_close(ref[:, 4], t)
    torch.testing.assert_close(ref[:, 3], torch.zeros_like(t), atol=1e-12, rtol=0)
    torch.testing.assert_close(ref[:, 2], math.pi / 2 + 0.5 * t)
    assert (ref[:, 5] == 0.45).all() and (ref[:, 8] == 0.5).all() and (ref[:, 10] == 1.0).all()
    assert (ref[:, :2] == 0).all() and (ref[:, 9] == 0).all()


def test_the_body_state_reads_the_euler_angles_back() -> None:
    """Roll, pitch and yaw of a rotation built as Rz(yaw) Ry(pitch) Rx(roll) come back."""
    angles = torch.tensor([[0.1, -0.2, 2.5], [-0.3, 0.25, -1.0]], **F64)

    def axis(i: int, a: torch.Tensor) -> torch.Tensor:
        c, s, R = a.cos(), a.sin(), torch.eye(3, **F64).repeat(len(a), 1, 1)
        j, k = [(1, 2), (2, 0), (0, 1)][i]
        R[:, j, j], R[:, j, k], R[:, k, j], R[:, k, k] = c, -s, s, c
        return R

    rotation = axis(2, angles[:, 2]) @ axis(1, angles[:, 1]) @ axis(0, angles[:, 0])
    state = body_state(rotation, torch.zeros(2, 3, **F64), torch.zeros(2, 3, **F64), torch.zeros(2, 3, **F64))
    torch.testing.assert_close(state[:, :3], angles)


@pytest.mark.parametrize(
    "cfg, message",
    [
        (MPCCfg(horizon=0), "mpc.horizon: must be a positive integer, got 0"),
        (MPCCfg(iterations=True), "mpc.iterations: must be a positive integer, got True"),
        (MPCCfg(dt=0.0), "mpc.dt: must be a finite number > 0 s, got 0.0"),
        (MPCCfg(dt=float("inf")), "mpc.dt: must be a finite number > 0 s, got inf"),
        (MPCCfg(state_weights=(1.0,) * 11), "mpc.state_weights: must be 12 weights >= 0"),
        (MPCCfg(state_weights=(-1.0,) + (1.0,) * 11), "mpc.state_weights: must be 12 weights >= 0"),
        (MPCCfg(force_weight=0.0), "mpc.force_weight: must be a finite number > 0, got 0.0"),
    ],
)
def test_bad_mpc_settings_name_the_field(cfg: MPCCfg, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        cfg.check()
    assert message in str(error.value)


def test_skew_is_the_cross_product() -> None:
    gen = torch.Generator().manual_seed(5)
    p, v = torch.randn(6, 3, generator=gen, **F64), torch.randn(6, 3, generator=gen, **F64)
    torch.testing.assert_close((skew(p) @ v[..., None]).squeeze(-1), torch.cross(p, v, dim=-1))


def test_anymal_qp_walks_on_the_mpc_and_refuses_an_unknown_body_controller() -> None:
    """anymal-qp with body_controller="mpc": on zero actions (the heuristic's reference) the robots
    walk without falling, the MPC solves at every control step (4 per env step), the MPC's warm
    starts are part of the env's state, and a name that is not a body
    controller is refused naming the param."""
    from helpers import make_cpu
    from phalanx.training.registry import env_cfg

    cfg = env_cfg("anymal-qp")
    cfg.actions.controller.params["body_controller"] = "mpc"
    env = make_cpu(cfg, num_envs=2)
    controller = env.low_level.controller
    assert controller.mpc is not None and controller.mpc_qp.n == 120
    solve, solves = controller.mpc_qp.solve, []
    controller.mpc_qp.solve = lambda *qp: solves.append(1) or solve(*qp)
    zeros = torch.zeros(2, env.action_dim)
    for _ in range(10):
        obs, _, terminated, truncated, _ = env.step(zeros)
        assert torch.isfinite(obs["policy"]).all() and not (terminated | truncated).any()
    assert len(solves) == 10 * env.cfg.actions.controller.decimation == 40
    state = controller.state_dict()
    assert torch.equal(state["mpc_x"], controller.mpc_qp.x) and state["mpc_x"].abs().max() > 0.1
    cfg.actions.controller.params["body_controller"] = "nmpc"
    with pytest.raises(ConfigError, match="must be one of 'qp', 'mpc', got 'nmpc'") as error:
        make_cpu(cfg, num_envs=2)
    assert error.value.field == "env.actions.controller.params.body_controller"
