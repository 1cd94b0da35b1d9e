"""Convex centroidal MPC of a legged robot, batched (Di Carlo et al. 2018, the MIT Cheetah 3's):
the ground reaction forces over a horizon of N intervals that best track a reference of the body's
state, as one QP per robot in `BatchedQP`'s form (`HostQP`'s on the CPU, the same QPs).

The state x (12, `STATE`) follows x+ = A x + B_t f_t + d (forward Euler, linearized about the
current yaw). The QP is condensed (X = Gamma F + X_free: the forces are its only variables) and
minimizes sum_t |x_t - x_ref,t|^2_Q + w |(f_t - f_ref,t) / (m g)|^2 within friction pyramids and
0 <= f_z <= f_max (0 off the ground), f_ref sharing the weight among the standing feet. f = 0 is
always feasible and every robot has the same constraint matrix. The variables are forces in units
of the robot's weight (`forces` gives newtons): H's entries are then of order one whatever its mass.
"""

# The control literature's names (A, B, H, Q, X) read better here than PEP 8's.
# ruff: noqa: N803, N806, E741

from __future__ import annotations

from dataclasses import dataclass

import torch

from phalanx.control.body import yaw_rotation
from phalanx.control.force_qp import ForceDistributionQP, force_bounds, skew
from phalanx.core.errors import ConfigError, check_int, check_positive

STATE = 12
"""Roll, pitch, yaw; position; angular velocity; linear velocity."""
STATE_WEIGHTS = (10.0, 10.0, 10.0, 2.0, 2.0, 50.0, 0.0, 0.0, 0.3, 0.2, 0.2, 0.1)
"""Q's diagonal by default: the MIT Cheetah MPC's weights with roll and pitch raised from 0.25
to 10, as a torque-controlled ANYmal's pitch diverged with theirs (tests/control, the walk in
MuJoCo C)."""


@dataclass(frozen=True)
class MPCCfg:
    horizon: int = 10
    """Control intervals predicted (N)."""
    dt: float = 0.025
    """Length of one interval (s)."""
    state_weights: tuple[float, ...] = STATE_WEIGHTS
    """Q's diagonal, one weight per state (see `STATE`)."""
    iterations: int = 50
    """ADMM steps per solve (`BatchedQP`, warm-started from the last solve)."""
    force_weight: float = 0.1
    """w: the weight of |f - f_ref|^2, forces in units of the robot's weight (f_ref: the weight
    shared by the feet on the ground), which spreads the load and keeps the QP strictly convex."""

    def check(self) -> None:
        """Raises ConfigError naming the first invalid field (`mpc.FIELD`)."""
        check_int("mpc.horizon", self.horizon)
        check_int("mpc.iterations", self.iterations)
        check_positive("mpc.dt", self.dt, " s")
        weights = tuple(self.state_weights)
        if len(weights) != STATE or not all(w >= 0 for w in weights):
            raise ConfigError(
                f"must be {STATE} weights >= 0 (roll, pitch, yaw, x, y, z, angular, linear velocity), got {weights!r}",
                "mpc.state_weights",
            )
        check_positive("mpc.force_weight", self.force_weight)  # > 0: it keeps the QP strictly convex


class CentroidalMPC:
    """Builds the MPC's QP of each of B robots with `num_feet` feet (k), from constants made once,
    so a call is graph-safe device work: mass (kg), principal `inertia` in the base's frame (kg m^2),
    friction pyramids of slope `mu`, normal forces up to `f_max` (N), gravity `gravity` (m/s^2)
    along -z."""

    def __init__(
        self,
        cfg: MPCCfg,
        num_feet: int,
        mass: float,
        inertia: tuple[float, float, float],
        mu: float,
        f_max: float,
        gravity: float = 9.81,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ):
        cfg.check()
        self.cfg, self.k, self.mass, self.f_max, self.weight = cfg, num_feet, mass, f_max, mass * gravity
        kw = {"dtype": dtype, "device": device}
        N, n = cfg.horizon, 3 * num_feet
        self.inverse_inertia = torch.diag(1.0 / torch.tensor(inertia, **kw))
        self.d = torch.zeros(STATE, **kw)
        self.d[11] = -gravity * cfg.dt
        self.Q = torch.tensor(cfg.state_weights, **kw).repeat(N)
        self.R = cfg.force_weight * torch.eye(n * N, **kw)
        # Shared and block diagonal (BatchedQP's fast case); H is dense anyway (every force moves every later
        # state), so dense ADMM fits. The QP is too large for the Warp kernel's per-thread matrices: torch backend.
        self.A = torch.block_diag(*[ForceDistributionQP(num_feet, mu, f_max, dtype=dtype, device=device).A] * N)
        self.f_max_share = f_max / self.weight
        # Gamma's block (row interval r, force interval j) is A^(r - j) B_j where j <= r.
        r, j = torch.meshgrid(torch.arange(N, device=device), torch.arange(N, device=device), indexing="ij")
        self._power, self._causal = (r - j).clamp(min=0), (j <= r).to(dtype)

    @property
    def num_variables(self) -> int:
        return 3 * self.k * self.cfg.horizon

    @property
    def num_constraints(self) -> int:
        return 5 * self.k * self.cfg.horizon

    def dynamics(self, x0: torch.Tensor, feet: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A (B, 12, 12) and B_t (B, N, 12, 3k) of the discrete dynamics about state `x0` (B, 12),
        with `feet` (B, N, k, 3) relative to the center of mass at each interval (world axes, m)."""
        Bsz, N, k, _ = feet.shape
        dt = self.cfg.dt
        yaw = x0[:, 2]
        Rz = yaw_rotation(yaw)
        A = torch.eye(STATE, dtype=x0.dtype, device=x0.device).repeat(Bsz, 1, 1)
        A[:, 0:3, 6:9] = dt * Rz.mT
        A[:, 3:6, 9:12] += dt * torch.eye(3, dtype=x0.dtype, device=x0.device)
        inverse = Rz @ self.inverse_inertia @ Rz.mT  # (B, 3, 3): I_w^-1, no solve (graph-safe)
        B = torch.zeros(Bsz, N, STATE, 3 * k, dtype=x0.dtype, device=x0.device)
        B[:, :, 6:9] = dt * (inverse[:, None, None] @ skew(feet)).permute(0, 1, 3, 2, 4).reshape(Bsz, N, 3, 3 * k)
        B[:, :, 9:12] = (dt / self.mass) * torch.eye(3, dtype=x0.dtype, device=x0.device).repeat(1, k)
        return A, B

    def predict(self, x0: torch.Tensor, feet: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Gamma (B, 12N, 3kN) and X_free (B, 12N): the predicted states X = Gamma F + X_free of
        the forces F (B, 3kN), interval after interval."""
        A, B = self.dynamics(x0, feet)
        Bsz, N = B.shape[:2]
        powers = [torch.eye(STATE, dtype=A.dtype, device=A.device).expand_as(A)]
        free = [x0]
        for _ in range(N):
            powers.append(A @ powers[-1])
            free.append((A @ free[-1][..., None]).squeeze(-1) + self.d)
        M = torch.einsum("bpxy,bjyz->bjpxz", torch.stack(powers[:N], 1), B)  # M[j, p] = A^p B_j
        columns = torch.arange(N, device=A.device).expand(N, N)
        gamma = M[:, columns, self._power] * self._causal[None, :, :, None, None]  # (B, r, j, 12, 3k)
        return gamma.permute(0, 1, 3, 2, 4).reshape(Bsz, N * STATE, -1), torch.cat(free[1:], dim=1)

    def __call__(
        self, x0: torch.Tensor, feet: torch.Tensor, stance: torch.Tensor, reference: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The QP of each robot: `x0` (B, 12) its state now, `feet` (B, N, k, 3) each foot relative
        to the center of mass at each interval (world axes, m), `stance` (B, N, k) bool: the foot
        is on the ground during the interval, `reference` (B, N, 12) the states to track at the end
        of each interval. Returns H (B, 3kN, 3kN), g (B, 3kN), A (5kN, 3kN), shared, l and u
        (B, 5kN): per interval, 4k friction rows then k normal-force rows; the variables are the
        forces in weights (`forces`)."""
        gamma, free = self.predict(x0, feet)
        gamma = self.weight * gamma  # the states' change per weight of force
        QG = self.Q[:, None] * gamma
        H = 2.0 * (gamma.mT @ QG + self.R)
        share = stance / stance.sum(-1, keepdim=True).clamp(min=1)  # (B, N, k): f_ref's z, in weights
        f_ref = torch.stack((torch.zeros_like(share), torch.zeros_like(share), share), -1).to(H.dtype)
        g = 2.0 * (QG.mT @ (free - reference.flatten(1))[..., None]).squeeze(-1)
        g = g - 2.0 * self.cfg.force_weight * f_ref.flatten(1)
        l, u = force_bounds(stance, self.f_max_share, H.dtype)
        return H, g, self.A, l.flatten(1), u.flatten(1)

    def forces(self, x: torch.Tensor) -> torch.Tensor:
        """(B, N, k, 3) the forces (N) of solutions `x` (B, 3kN) of this MPC's QPs."""
        return (self.weight * x).unflatten(-1, (self.cfg.horizon, self.k, 3))


def reference(
    x0: torch.Tensor,
    velocity: torch.Tensor,
    yaw_rate: torch.Tensor,
    height: torch.Tensor,
    cfg: MPCCfg,
    acceleration: torch.Tensor | None = None,
) -> torch.Tensor:
    """(B, N, 12) the states a command asks for over the horizon from `x0` (B, 12): moving at
    `velocity` (B, 2, world, m/s) and turning at `yaw_rate` (B,, rad/s), level, the center of mass
    at `height` (B,, m); the yaw and the position integrated from now. `acceleration` (B, 3, world,
    m/s^2) bends it: the velocity grows by a t, the height by a_z t^2 / 2 (a high-level policy's
    correction)."""
    t = cfg.dt * torch.arange(1, cfg.horizon + 1, dtype=x0.dtype, device=x0.device)  # (N,)
    ref = torch.zeros(x0.shape[0], cfg.horizon, STATE, dtype=x0.dtype, device=x0.device)
    v = velocity[:, None].expand(-1, cfg.horizon, 2)
    z = height[:, None].expand(-1, cfg.horizon)
    if acceleration is not None:
        v = v + acceleration[:, None, :2] * t[:, None]
        z = z + 0.5 * acceleration[:, None, 2] * t**2
    ref[..., 2] = x0[:, 2:3] + yaw_rate[:, None] * t
    ref[..., 3:5] = x0[:, None, 3:5] + torch.cumsum(v, dim=1) * cfg.dt
    ref[..., 5] = z
    ref[..., 8] = yaw_rate[:, None]
    ref[..., 9:11] = v
    if acceleration is not None:
        ref[..., 11] = acceleration[:, None, 2] * t
    return ref


def body_state(rotation: torch.Tensor, angular_velocity: torch.Tensor, com: torch.Tensor, velocity: torch.Tensor):
    """(B, 12) the MPC's state of bodies at `rotation` (B, 3, 3, base to world), turning at
    `angular_velocity` (B, 3, world), their centers of mass at `com` moving at `velocity` (B, 3):
    roll, pitch and yaw (Z-Y-X Euler angles) first."""
    R = rotation
    roll = torch.atan2(R[:, 2, 1], R[:, 2, 2])
    pitch = -torch.asin(R[:, 2, 0].clamp(-1.0, 1.0))
    yaw = torch.atan2(R[:, 1, 0], R[:, 0, 0])
    return torch.cat((torch.stack((roll, pitch, yaw), -1), com, angular_velocity, velocity), dim=-1)
