"""MuJoCo Warp simulation exposed to torch. `SimCfg` is plain data; `Simulator` and the model
loaders load Warp and MuJoCo on first use, so configs import fast."""

from __future__ import annotations

from phalanx.core.lazy import lazy_attributes
from phalanx.sim.cfg import SimCfg

_LAZY = {
    "Simulator": "phalanx.sim.simulator",
    "load_model": "phalanx.sim.model",
    "contact_capacity": "phalanx.sim.model",
    "constraint_capacity": "phalanx.sim.model",
}
__all__ = ["SimCfg", *_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
