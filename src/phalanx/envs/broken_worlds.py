"""Envs whose simulation broke: found per env inside the step, ended without reward or
bootstrap, reset, and counted by reason; reported on the host once per iteration."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from phalanx.envs.tensor_state import load_checked
from phalanx.sim.columns import nonfinite_rows

if TYPE_CHECKING:
    from phalanx.sim import Simulator


class BrokenWorlds:
    """Per-reason counts of envs reset because their simulation broke: contact buffer overflow,
    constraint buffer overflow, non-finite (diverged physics, or NaN/inf in observations or
    rewards). An env with several reasons counts under each; `envs` counts it once.

    The step adds to per-env counters and only a report sums them over the envs: a sum over the
    envs inside the compiled step is a reduction with a handful of outputs, and torch.compile
    fused the step's per-env work into it, one thread block walking all envs."""

    NONFINITE = 2  # the column of `Simulator.check_worlds`'s reasons

    def __init__(self, num_envs: int, device: torch.device):
        self.per_env = torch.zeros(num_envs, 3, dtype=torch.long, device=device)  # resets by reason
        self.per_env_broken = torch.zeros(num_envs, dtype=torch.long, device=device)  # resets for any reason

    @property
    def counts(self) -> torch.Tensor:
        """(3,) env resets so far by reason, summed over the envs (on the device)."""
        return self.per_env.sum(dim=0)

    @property
    def envs(self) -> torch.Tensor:
        """Device scalar: env resets so far for any reason."""
        return self.per_env_broken.sum()

    @classmethod
    def flag_nonfinite(cls, reasons: torch.Tensor, value: torch.Tensor) -> None:
        """Marks the envs whose entries of `value` (num_envs, ...) hold a NaN or inf."""
        reasons[:, cls.NONFINITE] |= nonfinite_rows(value)

    def count(self, reasons: torch.Tensor) -> torch.Tensor:
        """Counts this step's (num_envs, 3) reasons; returns the (num_envs,) broken envs."""
        broken = reasons.any(dim=1)
        self.per_env += reasons
        self.per_env_broken += broken
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
        """The totals (as the report shows them), not the per-env split."""
        return {"counts": self.counts, "envs": self.envs}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        totals = {name: torch.zeros_like(value) for name, value in self.state_dict().items()}
        load_checked(totals, state, "broken_worlds/")
        self.per_env.zero_()
        self.per_env_broken.zero_()
        self.per_env[0] = totals["counts"]  # the totals live on in env 0's counters
        self.per_env_broken[0] = totals["envs"]
