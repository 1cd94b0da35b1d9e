"""A run's settings read back: `phalanx train TASK --config RUN/config.json` trains again with every
setting of that run (its PPO, network, env, env count, seed, ...), flags given after it on top."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from phalanx.core.cfg_data import from_data, no_references
from phalanx.core.errors import ConfigError
from phalanx.envs.stored_cfg import env_cfg_from_data
from phalanx.training.cfg import TrainCfg

WHERE_IT_WENT = ("run_dir", "resume", "world_size")
"""What config.json says about the run itself, not its settings: a new run goes elsewhere."""


def train_cfg_from_file(path: str, task: str, packages: Collection[str]) -> TrainCfg:
    """The `TrainCfg` a config.json (as `phalanx train` writes it) holds, for `task`; its terms
    come only from `packages` (see `env_cfg_from_data`); its run directory and resume are left
    unset."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise ConfigError(f"cannot read {path} ({error.strerror or error})", "config") from None
    except ValueError as error:
        raise ConfigError(f"{path} is not JSON ({error})", "config") from None
    if not isinstance(data, dict) or not isinstance(data.get("env"), dict):
        raise ConfigError(f"{path} is not a run's config.json (no 'env' settings)", "config")
    if data.get("task") != task:
        raise ConfigError(f"{path} trained {data.get('task')!r}, not {task!r}", "config")
    settings = {k: v for k, v in data.items() if k not in (*WHERE_IT_WENT, "env")}
    try:
        cfg = from_data(TrainCfg, settings, "config", no_references)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}", "config") from None
    cfg.env = env_cfg_from_data(data["env"], f"--config {path}", packages)
    return cfg
