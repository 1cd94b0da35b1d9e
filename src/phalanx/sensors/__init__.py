"""Sensors computed on the device from the simulator's state, batched over envs (loaded on first
use: the height scanner brings Warp and MuJoCo Warp)."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"ContactTimer": "phalanx.sensors.contact", "HeightScanner": "phalanx.sensors.height_scan"}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'phalanx.sensors' has no attribute {name!r}")
