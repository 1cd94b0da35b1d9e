"""Envs whose simulation broke: found per env inside the step, ended without reward or
bootstrap, reset, and counted by reason; reported on the host once per iteration."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.tensor_state import load_checked

if TYPE_CHECKING:
    from phalanx.sim import Simulator


class BrokenWorlds:
    """Per-reason counts of envs reset because their simulation broke: contact buffer overflow,
    constraint buffer overflow, non-finite (diverged physics, or NaN/inf in observations or
    rewards). An env with several reasons counts under each; `envs` counts it once."""

    NONFINITE = 2  # the column of `Simulator.check_worlds`'s reasons

    def __init__(self, device: torch.device):
        self.counts = torch.zeros(3, dtype=torch.long, device=device)
        self.envs = torch.zeros((), dtype=torch.long, device=device)

    @classmethod
    def flag_nonfinite(cls, reasons: torch.Tensor, value: torch.Tensor) -> None:
        """Marks the envs whose entries of `value` (num_envs, ...) hold a NaN or inf."""
        reasons[:, cls.NONFINITE] |= ~torch.isfinite(value).flatten(1).all(dim=1)

    def count(self, reasons: torch.Tensor) -> torch.Tensor:
        """Counts this step's (num_envs, 3) reasons; returns the (num_envs,) broken envs."""
        broken = reasons.any(dim=1)
        self.counts += reasons.sum(dim=0)
        self.envs += broken.sum()
        return broken

    def report(self, sim: Simulator) -> list[str]:
        """One line per reason seen so far, with the option that fixes it (reads the device)."""
        contact, constraint, nonfinite = (int(c) for c in self.counts.tolist())
        lines = []
        if contact:
            lines.append(f"{contact} env resets after contact overflow: {sim.overflow_hint('contact')}")
        if constraint:
            lines.append(f"{constraint} env resets after constraint overflow: {sim.overflow_hint('constraint')}")
        if nonfinite:
            lines.append(
                f"{nonfinite} env resets after diverged physics (NaN/inf, or |qvel| > sim.max_qvel = "
                f"{sim.cfg.max_qvel:g}) or NaN/inf in observations or rewards"
            )
        return lines

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"counts": self.counts.clone(), "envs": self.envs.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        load_checked({"counts": self.counts, "envs": self.envs}, state, "broken_worlds/")
