"""MuJoCo Warp simulation exposed to torch. `SimCfg` is plain data; `Simulator` and the model
loaders load Warp and MuJoCo on first use, so configs import fast."""

from __future__ import annotations

import importlib
from typing import Any

from phalanx.sim.cfg import SimCfg

_LAZY = {
    "Simulator": "phalanx.sim.simulator",
    "load_model": "phalanx.sim.model",
    "contact_capacity": "phalanx.sim.model",
    "constraint_capacity": "phalanx.sim.model",
}
__all__ = ["SimCfg", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'phalanx.sim' has no attribute {name!r}")
