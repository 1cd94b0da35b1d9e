"""Deprecated: `phalanx.rl.cfg` (or `phalanx.cfg`) holds `PolicyCfg` and `PPOCfg`; this path
works for one release."""

import warnings

from phalanx.rl.cfg import PolicyCfg, PPOCfg

warnings.warn(
    "phalanx.rl.config is deprecated: import PolicyCfg and PPOCfg from phalanx.cfg", DeprecationWarning, stacklevel=2
)

__all__ = ["PPOCfg", "PolicyCfg"]
