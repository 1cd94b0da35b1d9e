"""The body controller of a legged robot, batched: from a desired acceleration of the center of
mass and of the base's rotation to the ground reaction forces of the standing feet, through
centroidal dynamics and the force-distribution QP (Da and Xie's body controller; the MIT
Cheetah's balance controller in spirit). Legs are massless here: their weight counts in the
mass, their dynamics are left to the joint-level tracking."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from phalanx.control.force_qp import ForceDistributionQP
from phalanx.control.host_qp import HostQP
from phalanx.control.qp import BatchedQP, QPSettings, QPSolution
from phalanx.core.errors import check_choice

QP_SOLVERS = ("device", "host")
"""Where the force QP is solved (`BodyCfg.qp_solver`)."""


@dataclass(frozen=True)
class BodyCfg:
    mass: float
    """The whole robot's mass (kg)."""
    inertia: tuple[float, float, float]
    """Principal moments of inertia about the center of mass in the base's frame (kg m^2)."""
    mu: float = 0.6
    """Friction coefficient of the feet's pyramids (below the contact's, for margin)."""
    f_max: float = 500.0
    """Largest normal force of one foot (N)."""
    gravity: float = 9.81
    """Gravity's magnitude (m/s^2), along -z."""
    wrench_weights: tuple[float, ...] = (1.0, 1.0, 1.0, 10.0, 10.0, 10.0)
    """Weights of the force and torque errors in the QP's objective."""
    regularization: float = 1e-3
    """Weight of |f|^2: spreads the load and keeps the QP strictly convex."""
    qp: QPSettings = field(default_factory=lambda: QPSettings(iterations=25))
    """The solver's settings: 25 warm-started ADMM steps per control step."""
    qp_solver: str = "device"
    """Where the force QP is solved: "device", batched on the tensors' device (`BatchedQP`,
    graph-safe); "host", each robot's QP one after another on the CPU with proxsuite (`HostQP`,
    as a CPU-side controller would, to proxsuite's tolerance: `qp` is then unused; not
    graph-safe, needs proxsuite)."""


def check_qp_solver(value: str, field: str) -> None:
    """Raises ConfigError naming `field` unless `value` is one of `QP_SOLVERS`."""
    check_choice(field, value, QP_SOLVERS)


class BodyController:
    """Ground reaction forces for `num_envs` robots with `num_feet` feet each; the QP solver it
    holds warm-starts each robot's solve from its last (`reset` forgets the robots that reset)."""

    def __init__(
        self, cfg: BodyCfg, num_envs: int, num_feet: int, device: torch.device | str = "cpu", compile: bool = False
    ):
        check_qp_solver(cfg.qp_solver, "body.qp_solver")
        self.cfg = cfg
        n, m = 3 * num_feet, 5 * num_feet
        if cfg.qp_solver == "host":
            self.qp: BatchedQP | HostQP = HostQP(num_envs, n, m, device=device)
        else:
            self.qp = BatchedQP(num_envs, n, m, cfg.qp, compile, device=device)
        self.problem = ForceDistributionQP(
            num_feet, cfg.mu, cfg.f_max, cfg.wrench_weights, cfg.regularization, device=device
        )
        self.last_problem: tuple[torch.Tensor, ...] | None = None
        """(H, g, A, l, u) the force QP of the last `forces` call (the tensors themselves, no copy):
        e.g. to time the solver alone on an env's data."""
        self.inertia = torch.diag(torch.tensor(cfg.inertia, device=device))
        self.gravity = torch.tensor((0.0, 0.0, cfg.gravity), device=device)

    def reset(self, mask: torch.Tensor) -> None:
        """Forgets the warm start of the robots where `mask` (num_envs,) is True."""
        self.qp.reset(mask)

    def wrench(self, rotation: torch.Tensor, linear_acc: torch.Tensor, angular_acc: torch.Tensor) -> torch.Tensor:
        """(B, 6) the force (N) and torque about the center of mass (N m) the feet must apply for
        the center of mass to accelerate by `linear_acc` (B, 3) and the base to turn faster by
        `angular_acc` (B, 3), world axes, with the base at `rotation` (B, 3, 3) (base to world):
        m (a + g) and R I R' alpha (the gyroscopic term is left out)."""
        force = self.cfg.mass * (linear_acc + self.gravity)
        torque = (rotation @ self.inertia @ rotation.mT @ angular_acc[..., None]).squeeze(-1)
        return torch.cat((force, torque), dim=-1)

    def forces(
        self,
        rotation: torch.Tensor,
        linear_acc: torch.Tensor,
        angular_acc: torch.Tensor,
        feet: torch.Tensor,
        stance: torch.Tensor,
    ) -> tuple[torch.Tensor, QPSolution]:
        """(B, feet, 3) the ground reaction forces (world, N; zero for swinging feet) that best
        produce `wrench(rotation, linear_acc, angular_acc)` within the friction pyramids and
        force limits, for feet at `feet` (B, feet, 3) relative to the center of mass and
        standing where `stance` (B, feet); and the QP's solution (residuals, flags)."""
        wrench = self.wrench(rotation, linear_acc, angular_acc)
        self.last_problem = self.problem(feet, wrench, stance)
        solution = self.qp.solve(*self.last_problem)
        return solution.x.view(feet.shape) * stance[..., None], solution


def attitude_pd(
    rotation: torch.Tensor,
    angular_velocity: torch.Tensor,
    target: torch.Tensor,
    target_angular_velocity: torch.Tensor,
    kp: float,
    kd: float,
) -> torch.Tensor:
    """(B, 3) an angular acceleration (world, rad/s^2) that turns the base from `rotation` toward
    `target` (B, 3, 3 each, base to world): kp e + kd (target_angular_velocity - angular_velocity),
    with e = sin(angle) x axis of the rotation from the base to the target (the exact rotation
    vector for small errors; it turns the right way up to a half turn, most strongly at a
    quarter)."""
    error = target @ rotation.mT
    skew = 0.5 * (error - error.mT)
    e = torch.stack((skew[..., 2, 1], skew[..., 0, 2], skew[..., 1, 0]), dim=-1)
    return kp * e + kd * (target_angular_velocity - angular_velocity)


def yaw_rotation(yaw: torch.Tensor) -> torch.Tensor:
    """(B, 3, 3) rotations by `yaw` (B,) about the world's z axis: a level base heading that way."""
    c, s = torch.cos(yaw), torch.sin(yaw)
    zero, one = torch.zeros_like(yaw), torch.ones_like(yaw)
    return torch.stack((c, -s, zero, s, c, zero, zero, zero, one), dim=-1).view(-1, 3, 3)
