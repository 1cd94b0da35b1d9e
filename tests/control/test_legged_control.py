"""The legged controllers of `phalanx.control` (gait clock, swing trajectories, leg Jacobians, body
controller) on their own and closing the loop on a torque-controlled ANYmal in MuJoCo C."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch
from anymal_mujoco import FEET, anymal_with_motors, body_cfg, controller_state, legs, standing, walk

from phalanx.control.body import BodyCfg, BodyController, attitude_pd, yaw_rotation
from phalanx.control.gait import TROT, GaitClock
from phalanx.control.heuristic import HeuristicCfg, heuristic_command, raibert_footholds
from phalanx.control.legs import joint_torques, leg_jacobians
from phalanx.control.mpc import MPCCfg
from phalanx.control.quadruped import QuadrupedCfg, QuadrupedCommand, QuadrupedController, QuadrupedState
from phalanx.control.swing import swing_clearance, swing_trajectory


def test_a_trot_alternates_diagonal_pairs_at_the_set_frequency() -> None:
    clock = GaitClock(3, TROT, duty=0.5)
    frequency = torch.tensor([2.0, 1.0, 0.0])  # cycles per second; the third robot stands still
    dt = 1 / 64  # phases exact in binary
    assert clock.stance().all(dim=0).tolist() == [True, False, False, True]
    lifted_at: list[list[int]] = [[] for _ in range(3)]
    for step in range(1, 65):  # 1 s
        lifted = clock.advance(frequency, dt)
        stance = clock.stance()
        assert torch.equal(stance[:, 0], stance[:, 3]) and torch.equal(stance[:, 1], stance[:, 2])
        assert torch.equal(stance[:, 0], ~stance[:, 1]), "one diagonal pair stands while the other swings"
        for env in range(3):
            if lifted[env, 0]:
                lifted_at[env].append(step)
    assert lifted_at == [[16, 48], [32], []], "LF lifts off after each half cycle it stood"
    torch.testing.assert_close(clock.phase, torch.tensor([0.0, 0.0, 0.0]), atol=1e-5, rtol=0)
    clock.advance(frequency, 0.125)  # a quarter of the robot at 2 Hz's cycle: LF stands, RF half way through its swing
    torch.testing.assert_close(clock.swing_progress()[0], torch.tensor([0.0, 0.5, 0.5, 0.0]))
    assert clock.swing_time(2.0) == pytest.approx(0.25) and clock.swing_rate(2.0) == pytest.approx(4.0)
    clock.reset(torch.tensor([True, False, False]), 0.75)
    assert clock.phase[0].item() == pytest.approx(0.75) and clock.phase[1].item() == pytest.approx(0.125)
    with pytest.raises(ValueError, match="duty must be in"):
        GaitClock(1, TROT, duty=1.0)


def test_a_swing_starts_and_lands_at_rest_and_its_velocity_is_its_positions_rate() -> None:
    start = torch.tensor([[0.0, 0.0, 0.0], [0.3, 0.1, 0.05]])
    target = torch.tensor([[0.2, -0.1, 0.1], [0.3, 0.1, 0.05]])  # the second foot steps in place
    duration, height = 0.4, torch.tensor([0.08, 0.1])
    s = torch.linspace(0.0, 1.0, 401)[:, None].expand(-1, 2)
    position, velocity = swing_trajectory(start, target, s, height, 1 / duration)
    torch.testing.assert_close(position[0], start)
    torch.testing.assert_close(position[-1], target)
    assert velocity[0].abs().max() < 1e-6 and velocity[-1].abs().max() < 1e-6
    # Half way: half way along the line, `height` above it.
    torch.testing.assert_close(position[200], (start + target) / 2 + height[:, None] * torch.tensor([0.0, 0.0, 1.0]))
    rate = (position[2:] - position[:-2]) / (2 * duration / 400)
    torch.testing.assert_close(velocity[1:-1], rate, atol=2e-3, rtol=0)
    # A per-foot rate (a tensor shaped like the progress); 0: the swing stopped, the foot holds still.
    _, stopped = swing_trajectory(start, target, s, height, torch.tensor([0.0, 1 / duration]).expand(401, 2))
    assert stopped[:, 0].abs().max() == 0 and torch.equal(stopped[:, 1], velocity[:, 1])


def test_a_swing_lifts_over_the_ground_in_its_way_then_its_clearance() -> None:
    radius, clearance = 0.035, 0.05

    def ground(xy: torch.Tensor) -> torch.Tensor:  # a foot's centre on a 10 cm box at 0.1 <= x < 0.2
        x = xy[..., 0]
        return radius + torch.where((x >= 0.1) & (x < 0.2), 0.1, 0.0)

    start = torch.tensor([[0.0, 0.0, radius], [0.4, 0.0, radius], [0.12, 0.0, radius + 0.1]])
    target = torch.tensor([[0.3, 0.0, radius], [0.7, 0.0, radius], [0.3, 0.0, radius]])
    lift = swing_clearance(start, target, ground, clearance)
    # Over the box (half way, the profile's top): its 10 cm, then the clearance. Past it, on level
    # ground: the clearance alone. Stepping down off it: the foot is above the line at every point.
    torch.testing.assert_close(lift[:2], torch.tensor([0.15, clearance]))
    s = torch.linspace(0.0, 1.0, 101)[:, None].expand(-1, 3)
    path, _ = swing_trajectory(start, target, s, lift, 1.0)
    assert (path[..., 2] >= ground(path[..., :2]) - 1e-6).all()
    assert path[50, 0, 2] >= radius + 0.1 + clearance - 1e-6


def test_leg_jacobians_match_mujocos() -> None:
    model = anymal_with_motors()
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    for _ in range(3):
        data.qpos[:3] = rng.uniform(-1, 1, 3)
        data.qpos[3:7] = rng.normal(size=4)
        data.qpos[3:7] /= np.linalg.norm(data.qpos[3:7])
        data.qpos[7:] = rng.uniform(-1, 1, 12)
        mujoco.mj_forward(model, data)
        anchors, axes, feet = legs(model, data)
        ours = leg_jacobians(anchors, axes, feet)[0]  # (4, 3, 3)
        for leg, foot in enumerate(FEET):
            jacp = np.zeros((3, model.nv))
            mujoco.mj_jacSite(model, data, jacp, None, model.site(f"{foot}_foot").id)
            dofs = [model.jnt_dofadr[model.joint(f"{foot}_{j}").id] for j in ("HAA", "HFE", "KFE")]
            torch.testing.assert_close(ours[leg], torch.tensor(jacp[:, dofs], dtype=torch.float32), atol=1e-5, rtol=0)
    force = torch.randn(1, 4, 3)
    jacobians = leg_jacobians(anchors, axes, feet)
    torch.testing.assert_close(joint_torques(jacobians, force), torch.einsum("bkij,bki->bkj", jacobians, force))


def test_the_body_controller_holds_a_standing_robots_weight_within_the_friction_pyramids() -> None:
    model = anymal_with_motors()
    data = standing(model)
    cfg = body_cfg(model)
    controller = BodyController(cfg, 2, 4)
    _, _, feet = legs(model, data)
    com = torch.tensor(data.subtree_com[1], dtype=torch.float32)
    rel = (feet - com).expand(2, -1, -1)
    stance = torch.tensor([[True] * 4, [True, False, False, True]])  # four feet; one trot pair
    rotation = torch.eye(3).expand(2, 3, 3)
    for _ in range(8):  # warm starts: 8 solves of 25 steps
        forces, solution = controller.forces(rotation, torch.zeros(2, 3), torch.zeros(2, 3), rel, stance)
    weight = cfg.mass * cfg.gravity
    torch.testing.assert_close(forces.sum(1), torch.tensor([[0.0, 0.0, weight]] * 2), atol=0.02 * weight, rtol=0)
    torque = torch.linalg.cross(rel, forces, dim=-1).sum(1)
    assert torque.abs().max() < 0.02 * weight * 0.3, "the forces balance about the center of mass"
    # The force rows bound fz below by 0 (above by 0 for a swinging foot) and |fx|, |fy| by mu fz: the
    # solution violates them by at most the primal residual the solver reports, plus float32's
    # rounding at the weight's scale, and the solves converged to a thousandth of the weight.
    residual, rounding = solution.primal_residual, 8 * torch.finfo(torch.float32).eps * weight
    assert (residual < 1e-3 * weight).all()
    swing = solution.x.view(2, 4, 3)[1, 1:3].abs().max()
    assert swing <= (1 + cfg.mu) * residual[1] + rounding, "the QP itself gives swinging feet no force"
    fz, bound = forces[..., 2], residual[:, None] + rounding
    assert (fz >= -bound).all() and (forces[..., :2].abs() <= cfg.mu * fz[..., None] + bound[..., None]).all()
    assert not solution.primal_infeasible.any()


def _trot(seconds: float, frequency: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Closes the loop in MuJoCo C with `QuadrupedController` under a fixed high-level command:
    hold the center of mass at its standing height (PD), the base level and heading as it started,
    trot at `frequency` (0: stand on all four feet), step to below the thighs. Returns the base's
    heights and tilts (rad) over time, the feet's largest slip when standing (m) and the highest a
    foot rose off the floor (m)."""
    model = anymal_with_motors()
    data = standing(model)
    dt = model.opt.timestep
    offsets = TROT if frequency else (0.0, 0.0, 0.0, 0.0)  # all in phase and stopped: four feet stand
    controller = QuadrupedController(QuadrupedCfg(body_cfg(model), offsets=offsets), 1, 4)
    height = float(data.subtree_com[1][2])
    thighs = [model.body(f"{foot}_THIGH").id for foot in FEET]  # the feet stand below the thighs
    ground = float(legs(model, data)[2][0, 0, 2])
    first = legs(model, data)[2]
    heights, tilts, slip, lift = [], [], 0.0, 0.0
    for _ in range(round(seconds / dt)):
        state = controller_state(model, data)
        footholds = torch.tensor(data.xpos[thighs], dtype=torch.float32)[None].clone()
        footholds[..., 2] = ground
        command = QuadrupedCommand(
            com_acceleration=100.0 * (height - state.com) * torch.tensor([0.0, 0.0, 1.0]) - 20.0 * state.com_velocity,
            frequency=torch.tensor([frequency]),
            footholds=footholds,
            target_rotation=yaw_rotation(torch.zeros(1)),
        )
        output = controller.step(state, command, dt)
        data.ctrl[:] = output.torques[0].numpy()
        mujoco.mj_step(model, data)
        heights.append(data.subtree_com[1][2])
        tilts.append(math.acos(min(1.0, data.xmat[1][8])))
        lift = max(lift, float(state.feet[..., 2].max()) - ground)
        slip = max(slip, float((state.feet - first)[..., :2].norm(dim=-1).max()))
    return np.array(heights), np.array(tilts), slip, lift


def test_the_controllers_hold_a_torque_controlled_anymal_standing() -> None:
    heights, tilts, slip, lift = _trot(2.0, 0.0)
    assert abs(heights[-1] - heights[0]) < 0.01 and tilts.max() < 0.02 and slip < 0.005 and lift < 0.005


def test_the_controllers_trot_a_torque_controlled_anymal_in_place() -> None:
    heights, tilts, _, lift = _trot(3.0, 2.0)
    assert np.abs(heights - heights[0]).max() < 0.05 and tilts.max() < 0.05
    assert lift > 0.05, "the swinging feet rise toward the swing's 8 cm"


def test_a_reset_restarts_the_gait_and_takes_new_lift_off_points() -> None:
    model = anymal_with_motors()
    data = standing(model)
    controller = QuadrupedController(QuadrupedCfg(body_cfg(model)), 2, 4)
    state = controller_state(model, data)
    state = QuadrupedState(*(torch.cat((v, v)) for v in vars(state).values()))
    command = QuadrupedCommand(
        com_acceleration=torch.zeros(2, 3),
        frequency=torch.tensor([2.0, 2.0]),
        footholds=state.feet.clone(),
        target_rotation=yaw_rotation(torch.zeros(2)),
    )
    controller.step(state, command, 0.1)
    torch.testing.assert_close(controller.liftoff, state.feet, msg="the first step takes every foot where it is")
    moved = QuadrupedState(**(vars(state) | {"feet": state.feet + 0.05}))
    controller.reset(torch.tensor([True, False]))
    out = controller.step(moved, command, 0.1)
    torch.testing.assert_close(controller.clock.phase, torch.tensor([0.2, 0.4]))
    torch.testing.assert_close(controller.liftoff[0], moved.feet[0])
    torch.testing.assert_close(controller.liftoff[1], state.feet[1], msg="the other robot keeps its lift-off points")
    assert out.torques.shape == (2, 12) and out.stance.shape == (2, 4) and torch.isfinite(out.torques).all()


def test_a_foot_the_gait_has_standing_takes_force_only_once_it_touches() -> None:
    """A foot that should stand but is still in the air (a late touch-down, `QuadrupedState.contact`
    False) gets no force from the QP or the MPC; it reaches on for its foothold, as at the end of
    its swing, while the other standing feet carry the body."""
    model = anymal_with_motors()
    data = standing(model)
    state = controller_state(model, data)
    assert state.contact.all(), "standing, every foot touches the floor"
    late = QuadrupedState(**(vars(state) | {"contact": torch.tensor([[False, True, True, True]])}))
    footholds = state.feet + torch.tensor([0.05, 0.0, 0.0])
    for mpc in (None, MPCCfg()):
        controller = QuadrupedController(QuadrupedCfg(body_cfg(model), mpc=mpc), 1, 4)
        command = heuristic_command(
            HeuristicCfg(height=0.5), controller.clock, state.com, state.com_velocity, state.feet, torch.zeros(1, 2),
            torch.zeros(1), 0.0,
        )  # fmt: skip
        command.footholds, command.com_acceleration, command.height = footholds, torch.zeros(1, 3), state.com[:, 2]
        out = controller.step(late, command, 0.001)
        assert controller.clock.stance()[0, 0], "the gait has the first foot standing"
        assert not out.stance[0, 0] and out.stance[0, 3] and (out.forces[0, 0] == 0).all()
        assert out.forces[0, 3, 2] > 50.0, "its diagonal partner carries the body"
        cfg = controller.cfg
        reach = cfg.swing_kp * (footholds[0, 0] - state.feet[0, 0]) - cfg.swing_kd * state.feet_velocity[0, 0]
        expected = joint_torques(leg_jacobians(state.anchors, state.axes, state.feet), reach.expand(1, 4, 3))[0, 0]
        torch.testing.assert_close(out.torques[0, :3], expected, atol=1e-4, rtol=1e-4)


def test_the_heuristic_high_level_walks_a_torque_controlled_anymal_as_commanded() -> None:
    positions, tilts, _ = walk(4.0, (0.5, 0.0))
    last_second = positions[-200:]
    speed = (last_second[-1] - last_second[0])[:2] / 1.0
    # It walks about 20 % slower than asked (0.41 m/s): a baseline, with no integral action.
    assert 0.35 < speed[0] < 0.6 and abs(speed[1]) < 0.05, speed
    assert tilts.max() < 0.15 and np.abs(positions[:, 2] - positions[0, 2]).max() < 0.05


def test_the_centroidal_mpc_walks_a_torque_controlled_anymal_as_commanded() -> None:
    """The same walk with the MPC's forces (solved at every 5 ms step, 0.25 s ahead): the speed
    it is asked for, within 20 % (the force QP's PD walks 20 % slow), level and at its height, and
    steady: the base rolls and pitches at under 1.5 rad/s (holding the forces over 4 steps rocks
    it at twice that)."""
    positions, tilts, rates = walk(4.0, (0.5, 0.0), MPCCfg())
    rocking = rates.max()
    assert rocking < 1.5, rocking
    last_second = positions[-200:]
    speed = (last_second[-1] - last_second[0])[:2] / 1.0
    assert 0.4 < speed[0] < 0.6 and abs(speed[1]) < 0.05, speed
    assert tilts.max() < 0.15 and np.abs(positions[:, 2] - positions[0, 2]).max() < 0.05


def test_raibert_footholds_straddle_the_hip_and_lead_against_a_velocity_error() -> None:
    hips = torch.tensor([[[0.3, 0.2, 0.5], [-0.3, -0.2, 0.5]]])
    velocity = torch.tensor([[1.0, 0.0, 0.2]])
    on_command = raibert_footholds(
        hips, velocity, torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 0.1]]), 0.25, 0.05, 0.02
    )
    torch.testing.assert_close(on_command[0, 0], torch.tensor([0.3 + 0.125, 0.2, 0.02]))
    torch.testing.assert_close(on_command[0, 1], torch.tensor([-0.3 + 0.1 + 0.125, -0.2, 0.02]))
    too_fast = raibert_footholds(hips, velocity, torch.tensor([[0.5, 0.0]]), torch.zeros(1, 2), 0.25, 0.05, 0.02)
    torch.testing.assert_close(
        too_fast[0, 0, 0], torch.tensor(0.3 + 0.125 + 0.05 * 0.5), msg="a step further ahead brakes"
    )


def test_yaw_rotation_attitude_pd_and_the_wrench_turn_the_right_way() -> None:
    quarter = yaw_rotation(torch.tensor([math.pi / 2]))
    torch.testing.assert_close(quarter[0] @ torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0]))
    to_yaw = attitude_pd(
        torch.eye(3)[None], torch.zeros(1, 3), yaw_rotation(torch.tensor([0.1])), torch.zeros(1, 3), 1.0, 0.0
    )
    torch.testing.assert_close(to_yaw[0], torch.tensor([0.0, 0.0, math.sin(0.1)]))
    rolled = torch.tensor(
        [[[1.0, 0.0, 0.0], [0.0, math.cos(0.2), -math.sin(0.2)], [0.0, math.sin(0.2), math.cos(0.2)]]]
    )
    back = attitude_pd(rolled, torch.tensor([[0.5, 0.0, 0.0]]), torch.eye(3)[None], torch.zeros(1, 3), 1.0, 2.0)
    torch.testing.assert_close(back[0], torch.tensor([-math.sin(0.2) - 1.0, 0.0, 0.0]))
    # Turned a quarter about z, the base's x axis (inertia 1) lies along the world's y.
    body = BodyController(BodyCfg(mass=10.0, inertia=(1.0, 2.0, 3.0)), 1, 4)
    wrench = body.wrench(quarter, torch.zeros(1, 3), torch.tensor([[1.0, 1.0, 1.0]]))
    torch.testing.assert_close(wrench[0], torch.tensor([0.0, 0.0, 98.1, 2.0, 1.0, 3.0]))


def test_robots_of_a_batch_are_controlled_independently() -> None:
    """Four robots at four gait frequencies in one batch (as many as feet: a broadcast over the
    wrong axis would show) get the torques each gets alone, the stopped one's swing holding."""
    model = anymal_with_motors()
    data = standing(model)
    cfg = QuadrupedCfg(body_cfg(model))
    one = controller_state(model, data)
    frequencies = [0.0, 1.0, 2.0, 3.0]
    feet = one.feet + torch.linspace(0.0, 0.03, 4)[:, None, None]  # different lift-off points per robot
    state = QuadrupedState(**(vars(one) | {"feet": feet}))
    state = QuadrupedState(**{k: v.expand(4, *v.shape[1:]) if k != "feet" else v for k, v in vars(state).items()})

    def command(b: int, frequency: torch.Tensor) -> QuadrupedCommand:
        return QuadrupedCommand(
            com_acceleration=torch.zeros(b, 3),
            frequency=frequency,
            footholds=one.feet.expand(b, 4, 3) + torch.tensor([0.1, 0.0, 0.0]),
            target_rotation=yaw_rotation(torch.zeros(b)),
        )

    batch = QuadrupedController(cfg, 4, 4)
    batch.clock.reset(torch.ones(4, dtype=torch.bool), 0.6)  # mid-swing for the first diagonal pair
    together = [batch.step(state, command(4, torch.tensor(frequencies)), 0.01) for _ in range(3)]
    for robot, frequency in enumerate(frequencies):
        alone = QuadrupedController(cfg, 1, 4)
        alone.clock.reset(torch.ones(1, dtype=torch.bool), 0.6)
        mine = QuadrupedState(**{k: v[robot : robot + 1] for k, v in vars(state).items()})
        for out in together:
            expected = alone.step(mine, command(1, torch.tensor([frequency])), 0.01)
            torch.testing.assert_close(out.torques[robot], expected.torques[0], atol=2e-3, rtol=1e-4)
