"""The low level of a two-level quadruped controller (Da and Xie), batched: from a high-level
command (a center-of-mass acceleration, a gait frequency, footholds) to joint torques, through
the gait clock, the body controller for the standing feet and swing trajectories for the
others. Pure tensors: the caller reads the robot's state from its simulator."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from phalanx.control.body import BodyCfg, BodyController, attitude_pd
from phalanx.control.gait import TROT, GaitClock
from phalanx.control.legs import joint_torques, leg_jacobians
from phalanx.control.qp import QPSolution
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


@dataclass
class QuadrupedState:
    """What the controller reads of B robots with k legs of j hinge joints, world axes."""

    rotation: torch.Tensor
    """(B, 3, 3) the base's orientation (base to world)."""
    angular_velocity: torch.Tensor
    """(B, 3) the base's angular velocity (rad/s)."""
    com: torch.Tensor
    """(B, 3) the center of mass (m)."""
    feet: torch.Tensor
    """(B, k, 3) the feet's positions (m)."""
    feet_velocity: torch.Tensor
    """(B, k, 3) their velocities (m/s)."""
    anchors: torch.Tensor
    """(B, k, j, 3) each leg's joint positions (m)."""
    axes: torch.Tensor
    """(B, k, j, 3) their unit axes."""


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


@dataclass
class QuadrupedOutput:
    torques: torch.Tensor
    """(B, k * j) joint torques (N m), leg by leg in the legs' joint order."""
    forces: torch.Tensor
    """(B, k, 3) the standing feet's ground reaction forces (N, world)."""
    stance: torch.Tensor
    """(B, k) bool: the feet the gait has standing."""
    qp: QPSolution
    """The force QP's solution (residuals, infeasibility flags)."""


class QuadrupedController:
    """Torques for `num_envs` quadrupeds, one `step` per physics step. Keeps each robot's gait
    clock, lift-off points and QP warm start; `reset` starts the robots where a mask is True
    anew (clock at phase 0, every foot's swing from where it stands)."""

    def __init__(self, cfg: QuadrupedCfg, num_envs: int, num_feet: int, device: torch.device | str = "cpu"):
        self.cfg = cfg
        self.clock = GaitClock(num_envs, cfg.offsets, cfg.duty, device)
        self.body = BodyController(cfg.body, num_envs, num_feet, device)
        self.liftoff = torch.zeros(num_envs, num_feet, 3, device=device)
        self._fresh = torch.ones(num_envs, dtype=torch.bool, device=device)  # lift-off points to take

    def reset(self, mask: torch.Tensor) -> None:
        """Starts the robots where `mask` (num_envs,) is True anew: gait at phase 0, no QP warm
        start, lift-off points taken at their next step."""
        self.clock.reset(mask)
        self.body.reset(mask)
        self._fresh |= mask

    def _state(self) -> dict[str, torch.Tensor]:
        qp = self.body.qp
        return {"phase": self.clock.phase, "liftoff": self.liftoff, "fresh": self._fresh,
                "qp_x": qp.x, "qp_y": qp.y, "qp_rho": qp.rho}  # fmt: skip

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
        stance = self.clock.stance()
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
        forces, solution = self.body.forces(
            state.rotation, command.com_acceleration, turn, state.feet - state.com[:, None], stance
        )
        rate = self.clock.swing_rate(frequency)[:, None]  # (B, 1): every foot of a robot alike
        target, target_velocity = swing_trajectory(
            self.liftoff, command.footholds, self.clock.swing_progress(), cfg.swing_height, rate
        )
        swing = cfg.swing_kp * (target - state.feet) + cfg.swing_kd * (target_velocity - state.feet_velocity)
        push = torch.where(stance[..., None], -forces, swing)
        torques = joint_torques(leg_jacobians(state.anchors, state.axes, state.feet), push)
        return QuadrupedOutput(torques.flatten(1), forces, stance, solution)
