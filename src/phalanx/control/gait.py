"""A batched gait clock: which feet of each robot stand and which swing, and how far each swing
has come, from one phase per robot that advances at a per-robot frequency (the contact-phase
speed a high-level policy may set)."""

from __future__ import annotations

import torch

TROT = (0.0, 0.5, 0.5, 0.0)
"""Phase offsets of a trot for feet in the order LF, RF, LH, RH: diagonal pairs together."""


class GaitClock:
    """`num_envs` clocks of a gait with one phase offset per foot (`offsets`, cycles) and a duty
    factor (`duty`: the share of a cycle a foot stands). Foot i's phase is (phase + offsets[i])
    mod 1; it stands while that is below `duty`, then swings for the rest of the cycle.
    Graph-safe: every method is tensor work on the device, no host reads."""

    def __init__(self, num_envs: int, offsets: tuple[float, ...], duty: float, device: torch.device | str = "cpu"):
        if not 0.0 < duty < 1.0:
            raise ValueError(f"GaitClock: duty must be in (0, 1), got {duty}")
        self.duty = duty
        self.offsets = torch.tensor(offsets, dtype=torch.float32, device=device)
        self.phase = torch.zeros(num_envs, device=device)
        """(num_envs,) the gait's phase in [0, 1)."""

    def advance(self, frequency: torch.Tensor | float, dt: float) -> torch.Tensor:
        """Moves every clock on by `frequency` (num_envs,) or scalar, in cycles per second (>= 0),
        times `dt` (s). Returns (num_envs, feet) bool: the feet that lifted off in this advance
        (stood before, swing now)."""
        before = self.stance()
        self.phase.copy_(torch.remainder(self.phase + frequency * dt, 1.0))
        return before & ~self.stance()

    def reset(self, mask: torch.Tensor, phase: torch.Tensor | float = 0.0) -> None:
        """Sets the clocks where `mask` (num_envs,) is True to `phase`."""
        self.phase.copy_(torch.where(mask, phase, self.phase))

    def foot_phase(self) -> torch.Tensor:
        """(num_envs, feet) each foot's phase in [0, 1)."""
        return torch.remainder(self.phase[:, None] + self.offsets, 1.0)

    def stance(self) -> torch.Tensor:
        """(num_envs, feet) bool: the feet that stand."""
        return self.foot_phase() < self.duty

    def swing_progress(self) -> torch.Tensor:
        """(num_envs, feet) how far each swing has come, 0 at lift-off to 1 at touch-down (0 for
        a standing foot)."""
        return ((self.foot_phase() - self.duty) / (1.0 - self.duty)).clamp(min=0.0)

    def swing_time(self, frequency: torch.Tensor | float) -> torch.Tensor | float:
        """Seconds a swing lasts at `frequency` (cycles per second, > 0)."""
        return (1.0 - self.duty) / frequency

    def swing_rate(self, frequency: torch.Tensor | float) -> torch.Tensor | float:
        """How fast `swing_progress` advances at `frequency` (cycles per second, >= 0): per second."""
        return frequency / (1.0 - self.duty)
