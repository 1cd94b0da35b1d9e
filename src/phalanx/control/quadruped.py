"""The low level of a two-level quadruped controller (Da and Xie), batched: from a high-level
command (a center-of-mass acceleration, a gait frequency, footholds) to joint torques, through
the gait clock, the body controller for the standing feet and swing trajectories for the
others. The standing feet's forces come from the force QP of the commanded accelerations (Da and
Xie's instant QP), or from a centroidal MPC over a horizon (`QuadrupedCfg.mpc`, the baseline
their RL policy is compared with). Pure tensors: the caller reads the robot's state from its
simulator."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from phalanx.control.body import BodyCfg, BodyController, attitude_pd
from phalanx.control.gait import TROT, GaitClock
from phalanx.control.legs import joint_torques, leg_jacobians
from phalanx.control.mpc import CentroidalMPC, MPCCfg, body_state, reference
from phalanx.control.qp import BatchedQP, QPSettings, QPSolution
from phalanx.control.swing import swing_trajectory


@dataclass(frozen=True)
class QuadrupedCfg:
    body: BodyCfg
    offsets: tuple[float, ...] = TROT
    """Each foot's phase offset in the gait (cycles)."""
    duty: float = 0.5
    """Share of a gait cycle a foot stands."""
    swing_height: float = 0.08
    """How high a swinging foot rises above the line from lift-off to foothold (m)."""
    swing_kp: float = 800.0
    """Stiffness of a swinging foot's tracking (N/m)."""
    swing_kd: float = 30.0
    """Damping of a swinging foot's tracking (N s/m)."""
    attitude_kp: float = 300.0
    """Stiffness of the base's attitude control (rad/s^2 per rad), added to the commanded turn."""
    attitude_kd: float = 30.0
    """Its damping (rad/s^2 per rad/s)."""
    mpc: MPCCfg | None = None
    """With it, the standing feet's forces are the first interval's of a centroidal MPC that
    tracks the command's velocity, yaw rate and height (`phalanx.control.mpc`), solved at every
    step (held over an env's 4 control steps, its forces rock the base in a limit cycle at the
    solve rate) with the gait's stance schedule over its horizon and the swinging feet landing on
    their footholds. The
    command's center-of-mass acceleration then bends the MPC's reference (see `mpc.reference`);
    its target rotation and angular acceleration go unused: the MPC holds the base level and
    turns it at the yaw rate. None: the force QP of the commanded accelerations."""


@dataclass
class QuadrupedState:
    """What the controller reads of B robots with k legs of j hinge joints, world axes."""

    rotation: torch.Tensor
    """(B, 3, 3) the base's orientation (base to world)."""
    angular_velocity: torch.Tensor
    """(B, 3) the base's angular velocity (rad/s)."""
    com: torch.Tensor
    """(B, 3) the center of mass (m)."""
    com_velocity: torch.Tensor
    """(B, 3) its velocity (m/s)."""
    feet: torch.Tensor
    """(B, k, 3) the feet's positions (m)."""
    feet_velocity: torch.Tensor
    """(B, k, 3) their velocities (m/s)."""
    anchors: torch.Tensor
    """(B, k, j, 3) each leg's joint positions (m)."""
    axes: torch.Tensor
    """(B, k, j, 3) their unit axes."""
    contact: torch.Tensor | None = None
    """(B, k) bool: the foot touches the ground. With it, a foot the gait has standing takes force
    only once it touches (until then it keeps reaching down along its swing); None: every foot
    the gait has standing takes force."""


@dataclass
class QuadrupedCommand:
    """What the high level asks of the low level (a policy, or a heuristic controller)."""

    com_acceleration: torch.Tensor
    """(B, 3) the center of mass's acceleration (m/s^2, world)."""
    frequency: torch.Tensor
    """(B,) the gait's speed (cycles/s, >= 0; 0 stops the clock: standing feet stand, swinging
    feet hold where their swing had come)."""
    footholds: torch.Tensor
    """(B, k, 3) where each swinging foot should land (m, world)."""
    target_rotation: torch.Tensor
    """(B, 3, 3) the base orientation the attitude control turns toward (e.g. level, heading)."""
    angular_acceleration: torch.Tensor | None = None
    """(B, 3) an extra turn of the base (rad/s^2, world); None: none."""
    velocity: torch.Tensor | None = None
    """(B, 2) the horizontal velocity to move at (m/s, world): the MPC's reference (needed with one)."""
    yaw_rate: torch.Tensor | None = None
    """(B,) the rate to turn at (rad/s): the MPC's reference (needed with one)."""
    height: torch.Tensor | None = None
    """(B,) the height to hold the center of mass at (m, world z): the MPC's reference (needed with one)."""
    swing_height: torch.Tensor | None = None
    """(B, k) how high each swinging foot rises above the line from its lift-off to its foothold
    (m, >= 0); None: `QuadrupedCfg.swing_height`."""


@dataclass
class QuadrupedOutput:
    torques: torch.Tensor
    """(B, k * j) joint torques (N m), leg by leg in the legs' joint order."""
    forces: torch.Tensor
    """(B, k, 3) the standing feet's ground reaction forces (N, world)."""
    stance: torch.Tensor
    """(B, k) bool: the feet the gait has standing."""
    qp: QPSolution
    """The force QP's or the MPC's solution (residuals, infeasibility flags)."""


class QuadrupedController:
    """Torques for `num_envs` quadrupeds, one `step` per physics step. Keeps each robot's gait
    clock, lift-off points and QP warm start; `reset` starts the robots where a mask is True
    anew (clock at phase 0, every foot's swing from where it stands)."""

    def __init__(self, cfg: QuadrupedCfg, num_envs: int, num_feet: int, device: torch.device | str = "cpu"):
        self.cfg = cfg
        self.clock = GaitClock(num_envs, cfg.offsets, cfg.duty, device)
        self.body = BodyController(cfg.body, num_envs, num_feet, device)
        self.mpc, self.mpc_qp = None, None
        if cfg.mpc is not None:
            b = cfg.body
            self.mpc = CentroidalMPC(cfg.mpc, num_feet, b.mass, b.inertia, b.mu, b.f_max, b.gravity, device=device)
            settings = QPSettings(iterations=cfg.mpc.iterations, backend="torch")
            self.mpc_qp = BatchedQP(num_envs, self.mpc.num_variables, self.mpc.num_constraints, settings, device=device)
        self.liftoff = torch.zeros(num_envs, num_feet, 3, device=device)
        self._fresh = torch.ones(num_envs, dtype=torch.bool, device=device)  # lift-off points to take

    def reset(self, mask: torch.Tensor) -> None:
        """Starts the robots where `mask` (num_envs,) is True anew: gait at phase 0, no QP warm
        start, lift-off points taken at their next step."""
        self.clock.reset(mask)
        self.body.reset(mask)
        if self.mpc_qp is not None:
            self.mpc_qp.reset(mask)
        self._fresh |= mask

    def _state(self) -> dict[str, torch.Tensor]:
        qp, mpc = self.body.qp, self.mpc_qp
        state = {"phase": self.clock.phase, "liftoff": self.liftoff, "fresh": self._fresh,
                 "qp_x": qp.x, "qp_y": qp.y, "qp_rho": qp.rho}  # fmt: skip
        return state if mpc is None else state | {"mpc_x": mpc.x, "mpc_y": mpc.y, "mpc_rho": mpc.rho}

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Copies of every robot's controller state: gait phases, lift-off points, QP warm starts."""
        return {name: value.clone() for name, value in self._state().items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Writes a `state_dict` back, in place (captured graphs stay valid)."""
        for name, value in self._state().items():
            value.copy_(state[name])

    def step(self, state: QuadrupedState, command: QuadrupedCommand, dt: float) -> QuadrupedOutput:
        """Advances the gait clocks by `dt` (s) at the commanded frequencies and returns the torques."""
        cfg = self.cfg
        frequency = command.frequency.clamp(min=0.0)
        lifted = self.clock.advance(frequency, dt)
        take = lifted | self._fresh[:, None]
        self.liftoff.copy_(torch.where(take[..., None], state.feet, self.liftoff))
        self._fresh.zero_()
        stance, progress = self.clock.stance(), self.clock.swing_progress()
        if state.contact is not None:  # a late foot reaches on for its foothold, where its swing ended
            progress = torch.where(stance & ~state.contact, 1.0, progress)
            stance = stance & state.contact
        if self.mpc is not None:
            forces, solution = self.mpc_forces(state, command, frequency, stance)
        else:
            forces, solution = self._qp_forces(state, command, stance)
        rate = self.clock.swing_rate(frequency)[:, None]  # (B, 1): every foot of a robot alike
        lift = cfg.swing_height if command.swing_height is None else command.swing_height.clamp(min=0.0)
        target, target_velocity = swing_trajectory(self.liftoff, command.footholds, progress, lift, rate)
        swing = cfg.swing_kp * (target - state.feet) + cfg.swing_kd * (target_velocity - state.feet_velocity)
        push = torch.where(stance[..., None], -forces, swing)
        torques = joint_torques(leg_jacobians(state.anchors, state.axes, state.feet), push)
        return QuadrupedOutput(torques.flatten(1), forces, stance, solution)

    def _qp_forces(
        self, state: QuadrupedState, command: QuadrupedCommand, stance: torch.Tensor
    ) -> tuple[torch.Tensor, QPSolution]:
        """The force QP's forces for the commanded accelerations, the attitude control's turn added."""
        cfg = self.cfg
        turn = attitude_pd(
            state.rotation,
            state.angular_velocity,
            command.target_rotation,
            torch.zeros_like(state.angular_velocity),
            cfg.attitude_kp,
            cfg.attitude_kd,
        )
        if command.angular_acceleration is not None:
            turn = turn + command.angular_acceleration
        return self.body.forces(state.rotation, command.com_acceleration, turn, state.feet - state.com[:, None], stance)

    def mpc_forces(
        self, state: QuadrupedState, command: QuadrupedCommand, frequency: torch.Tensor, stance: torch.Tensor
    ) -> tuple[torch.Tensor, QPSolution]:
        """The MPC's forces of its first interval: over its horizon each foot stands as the gait
        clock, run on at `frequency`, has it; a foot standing now stays where it is, a swinging
        one lands on its foothold; positions relative to the reference's center of mass."""
        if command.velocity is None or command.yaw_rate is None or command.height is None:
            raise ValueError("QuadrupedController with an MPC: the command needs velocity, yaw_rate and height")
        mpc = self.mpc
        horizon, dt = mpc.cfg.horizon, mpc.cfg.dt
        x0 = body_state(state.rotation, state.angular_velocity, state.com, state.com_velocity)
        ref = reference(x0, command.velocity, command.yaw_rate, command.height, mpc.cfg, command.com_acceleration)
        ahead = frequency[:, None] * dt * torch.arange(horizon, dtype=x0.dtype, device=x0.device)  # (B, N) cycles
        phases = torch.remainder(self.clock.foot_phase()[:, None] + ahead[..., None], 1.0)  # (B, N, k)
        planned = phases < self.clock.duty
        where = torch.where(stance[..., None], state.feet, command.footholds)  # (B, k, 3)
        feet = where[:, None] - ref[:, :, None, 3:6]
        solution = self.mpc_qp.solve(*mpc(x0, feet, planned, ref))
        return mpc.forces(solution.x)[:, 0] * stance[..., None], solution
