"""The actor of a stored off-policy run's settings (config.json's "algo"), for play and export."""

from __future__ import annotations

from typing import Any

from torch import nn

from phalanx.core.cfg_data import from_data, no_references
from phalanx.rl.off_policy_cfg import SACCfg, TD3Cfg
from phalanx.rl.sac import SAC
from phalanx.rl.td3 import TD3


def off_policy_actor(algo: dict[str, Any], obs_dim: int, action_dim: int) -> nn.Module | None:
    """FastTD3's tanh actor or FastSAC's squashed Gaussian one (its forward: the deterministic
    action), built by its learner from `algo` (a run's stored TD3Cfg or SACCfg data; a field
    that is not the config's is a ConfigError); None for PPO's settings."""
    if "num_atoms" not in algo:
        return None
    cfg, learner = (SACCfg, SAC) if "alpha_init" in algo else (TD3Cfg, TD3)
    return learner.make_actor(from_data(cfg, algo, "config.algo", no_references), obs_dim, action_dim)
