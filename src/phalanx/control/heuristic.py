"""A heuristic high level for `QuadrupedController`, batched: a fixed gait, Raibert footholds and
a center-of-mass acceleration that follows a commanded velocity at a fixed height (the baseline
Da and Xie's RL policy is compared with)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from phalanx.control.body import yaw_rotation
from phalanx.control.gait import GaitClock
from phalanx.control.quadruped import QuadrupedCommand


@dataclass(frozen=True)
class HeuristicCfg:
    height: float
    """Height of the center of mass to hold above the ground (m)."""
    frequency: float = 2.0
    """The gait's fixed frequency (cycles/s)."""
    velocity_gain: float = 3.0
    """Horizontal acceleration per m/s of velocity error (1/s)."""
    height_kp: float = 100.0
    """Vertical acceleration per m of height error (1/s^2)."""
    height_kd: float = 20.0
    """Vertical acceleration per m/s of vertical velocity (1/s)."""
    max_acceleration: float = 4.0
    """Largest horizontal acceleration asked for, per axis (m/s^2)."""
    raibert_gain: float = 0.05
    """How far a foothold moves per m/s of velocity error, toward the error (s)."""


def raibert_footholds(
    hips: torch.Tensor,
    velocity: torch.Tensor,
    command_velocity: torch.Tensor,
    time_to_touchdown: torch.Tensor,
    stance_time: torch.Tensor | float,
    gain: float,
    ground: torch.Tensor | float,
) -> torch.Tensor:
    """(B, k, 3) footholds: below where each hip (B, k, 3) will be at touch-down (moving with
    `velocity` (B, 3) for `time_to_touchdown` (B, k) s), half a stance (`stance_time` s) ahead
    along the velocity so the stance straddles the hip, and `gain` x (velocity - command) further
    (Raibert's rule: a foot placed beyond the neutral point slows the body down). On `ground`
    (m, a number or (B, k)), velocities horizontal."""
    velocity = velocity[:, None, :2]
    if isinstance(stance_time, torch.Tensor):
        stance_time = stance_time[:, None, None]
    xy = hips[..., :2] + velocity * (time_to_touchdown[..., None] + stance_time / 2)
    xy = xy + gain * (velocity - command_velocity[:, None, :2])
    z = ground.expand(xy.shape[:-1]) if isinstance(ground, torch.Tensor) else torch.full_like(xy[..., 0], ground)
    return torch.cat((xy, z[..., None]), dim=-1)


def heuristic_command(
    cfg: HeuristicCfg,
    clock: GaitClock,
    com: torch.Tensor,
    com_velocity: torch.Tensor,
    hips: torch.Tensor,
    command_velocity: torch.Tensor,
    heading: torch.Tensor,
    ground: torch.Tensor | float,
) -> QuadrupedCommand:
    """The command for robots whose center of mass is at `com` (B, 3) moving at `com_velocity`
    (B, 3), hips at `hips` (B, k, 3), to move at `command_velocity` (B, 2) (world, m/s) facing
    `heading` (B,) (rad) with the fixed gait of `clock` (the controller's), `cfg.height` above
    `ground` (m: a number, or (B, k) under the footholds). For an MPC (`QuadrupedCfg.mpc`) it
    also gives the reference: the commanded velocity, the heading held (yaw rate 0), that height.
    Its acceleration is a PD for the force QP; with an MPC, which tracks the reference itself, the
    caller leaves it out."""
    if isinstance(ground, torch.Tensor) and ground.dim() != 2:
        raise ValueError(f"heuristic_command: ground must be a number or (B, k), got shape {tuple(ground.shape)}")
    batch = com.shape[0]
    horizontal = (cfg.velocity_gain * (command_velocity - com_velocity[:, :2])).clamp(
        -cfg.max_acceleration, cfg.max_acceleration
    )
    floor = ground.mean(-1) if isinstance(ground, torch.Tensor) else ground  # under the feet, on average
    vertical = cfg.height_kp * (floor + cfg.height - com[:, 2]) - cfg.height_kd * com_velocity[:, 2]
    frequency = torch.full((batch,), cfg.frequency, dtype=com.dtype, device=com.device)
    swing_time = clock.swing_time(cfg.frequency)
    stance_time = clock.duty / cfg.frequency
    time_to_touchdown = (1.0 - clock.swing_progress()) * swing_time * ~clock.stance()
    footholds = raibert_footholds(
        hips, com_velocity, command_velocity, time_to_touchdown, stance_time, cfg.raibert_gain, ground
    )
    return QuadrupedCommand(
        com_acceleration=torch.cat((horizontal, vertical[:, None]), dim=-1),
        frequency=frequency,
        footholds=footholds,
        target_rotation=yaw_rotation(heading),
        velocity=command_velocity,
        yaw_rate=torch.zeros_like(com[:, 0]),
        height=floor + cfg.height + torch.zeros_like(com[:, 0]),
    )
