"""Sensors computed on the device from the simulator's state, batched over envs (loaded on first
use: the height scanner and the camera bring Warp and MuJoCo Warp)."""

from __future__ import annotations

from phalanx.core.lazy import lazy_attributes

_LAZY = {
    "ContactTimer": "phalanx.sensors.contact",
    "HeightScanner": "phalanx.sensors.height_scan",
    "TiledCamera": "phalanx.sensors.tiled_camera",
}
__all__ = list(_LAZY)

__getattr__ = lazy_attributes(__name__, _LAZY)
