"""`StepRandoms`: an env's uniform random numbers, from its `torch.Generator`, with those of an
env step drawn in one kernel when the step starts."""

from __future__ import annotations

import math

import torch

from phalanx.core.compiling import compile_boundary


class StepRandoms:
    """Outside an env step every call draws from `generator`. Inside one (`begin_step` ...
    `end_step`) calls take consecutive slices of `pool`, which `begin_step` fills with a single
    draw. The compiled step thus reads its random numbers as views: a draw through a
    `torch.Generator` would end torch.compile's graph at each call, leaving the terms around it
    unfused. Eager and compiled steps read the same numbers.

    The pool holds what one step takes, counted by the first step run between `begin_step` and
    `end_step` (a `TaskEnv` runs one dry when it is built, see `counted`): a step must take the
    same amount every time, as every term here does by drawing for all envs
    and applying the draws through a mask."""

    def __init__(self, seed: int, device: torch.device):
        self.device = device
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        self.pool: torch.Tensor | None = None  # None until a step has been counted
        self._taken: int | None = None  # numbers taken in the current step; None outside one

    @property
    def counted(self) -> bool:
        return self.pool is not None

    def uniform(self, shape: tuple[int, ...]) -> torch.Tensor:
        """float32 samples of `shape`, uniform in [0, 1)."""
        if self._taken is None or self.pool is None:  # outside a step, or counting one
            if self._taken is not None:
                self._taken += math.prod(shape)
            return torch.rand(shape, device=self.device, generator=self.generator)
        start, self._taken = self._taken, self._taken + math.prod(shape)
        if self._taken > len(self.pool):
            raise RuntimeError(
                f"the env step took more than the {len(self.pool)} random numbers its first step took: "
                "a term draws a data-dependent amount (draw for all envs and mask instead)"
            )
        return self.pool[start : self._taken].view(shape)

    def randint(self, shape: tuple[int, ...], low: int, high: int) -> torch.Tensor:
        """int64 samples of `shape`, uniform over low, ..., high - 1 (like `torch.randint`)."""
        return (low + self.uniform(shape) * (high - low)).floor().long().clamp(max=high - 1)

    @compile_boundary  # the one draw through the generator, before the compiled step
    def begin_step(self) -> None:
        if self.pool is not None:
            torch.rand(self.pool.shape, device=self.device, generator=self.generator, out=self.pool)
        self._taken = 0

    def end_step(self) -> None:
        if self.pool is None:  # the step just counted
            self.pool = torch.empty(self._taken, device=self.device)
        self._taken = None
