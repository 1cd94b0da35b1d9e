"""phalanx: robot reinforcement learning with simulation, observations, rewards and learning on one device.

`make`, `task_cfg`, `TASKS` and `VecEnv` load on first use, so `import phalanx` stays light and
the command line can configure Warp before Warp starts.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["TASKS", "VecEnv", "__version__", "make", "task_cfg"]


def __getattr__(name: str) -> Any:
    if name in ("TASKS", "VecEnv", "make", "task_cfg"):
        return getattr(importlib.import_module("phalanx.envs"), name)
    raise AttributeError(f"module 'phalanx' has no attribute {name!r}")
