"""The actor of a stored off-policy run's settings (config.json's "algo"), for play and export."""

from __future__ import annotations

from typing import Any

from torch import nn

from phalanx.rl.sac import SquashedGaussianActor
from phalanx.rl.td3 import TanhActor


def off_policy_actor(algo: dict[str, Any], obs_dim: int, action_dim: int) -> nn.Module | None:
    """FastTD3's tanh actor or FastSAC's squashed Gaussian one (its forward: the deterministic
    action) as `algo` (a run's stored TD3Cfg or SACCfg data) builds it; None for PPO's settings."""
    if "num_atoms" not in algo:
        return None
    dims, scale, bound = tuple(algo["actor_hidden_dims"]), algo["init_scale"], algo["action_bound"]
    if "alpha_init" in algo:
        log_std_range = (algo["log_std_min"], algo["log_std_max"])
        return SquashedGaussianActor(obs_dim, action_dim, dims, scale, bound, log_std_range)
    return TanhActor(obs_dim, action_dim, dims, scale, bound)
