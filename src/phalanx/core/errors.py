"""Errors about what the user asked for, and the checks that raise them. The command line prints
them as one line and exits 2; any other exception is a bug and keeps its traceback."""

from __future__ import annotations

import math
from typing import Any


class ConfigError(ValueError):
    """A flag, config field or file given by the user is not valid; the message says which,
    what was given and what is allowed.

    With `field` (a config path such as "sim.dt" or "algo.num_mini_batches") the message reads
    "env.sim.dt: ..." and the command line shows the field as its flag, "--env.sim.dt: ...".
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(f"{field}: {message}" if field else message)
        self.field, self.reason = field, message

    def as_flag(self) -> str:
        """The message with the field spelled as its command-line flag (`env.sim.max_qvel` -> `--env.sim.max-qvel`)."""
        return str(self) if self.field is None else f"--{self.field.replace('_', '-')}: {self.reason}"


def check_int(field: str, value: Any, minimum: int = 1) -> None:
    """Raises ConfigError unless `value` is an int >= `minimum` (bools are not ints here)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        allowed = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(f"must be {allowed}, got {value!r}", field)


def check_choice(field: str, value: Any, allowed: tuple[str, ...]) -> None:
    """Raises ConfigError unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ConfigError(f"must be one of {', '.join(map(repr, allowed))}, got {value!r}", field)


SEED_LIMIT = 2**63
"""Seeds are integers in [0, 2^63): the job's ranks add their index, and torch's generators take 64 bits."""


def check_seed(field: str, value: Any) -> None:
    """Raises ConfigError unless `value` is an integer seed in [0, 2^63)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
        raise ConfigError(f"must be an integer in [0, 2^63), got {value!r}", field)


def check_positive(field: str, value: Any, unit: str = "") -> None:
    """Raises ConfigError unless `value` is a finite number > 0 (NaN and inf are refused)."""
    if not _number(value) or not (math.isfinite(value) and value > 0):
        raise ConfigError(f"must be a finite number > 0{unit}, got {value!r}", field)


def check_range(field: str, value: Any, low: float = -math.inf, high: float = math.inf) -> None:
    """Raises ConfigError unless `value` is a finite number with low <= value <= high."""
    if not _number(value) or not (math.isfinite(value) and low <= value <= high):
        if math.isinf(low) and math.isinf(high):
            allowed = "a finite number"
        elif math.isinf(high):
            allowed = f"a finite number >= {low:g}"
        else:
            allowed = f"in [{low:g}, {high:g}]"
        raise ConfigError(f"must be {allowed}, got {value!r}", field)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
