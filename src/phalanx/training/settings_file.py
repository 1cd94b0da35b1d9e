"""Settings read from a file: `phalanx train TASK --config RUN/config.json` trains again with every
setting of that run (its PPO, network, env, env count, seed, ...), flags given after it on top;
`--config my.yaml` (or .json) changes the settings it names."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from phalanx.core.cfg_data import from_data, no_references, to_data
from phalanx.core.errors import ConfigError
from phalanx.envs.stored_cfg import env_cfg_from_data
from phalanx.training.cfg import TrainCfg

WHERE_IT_WENT = ("run_dir", "resume", "world_size")
"""What config.json says about the run itself, not its settings: a new run goes elsewhere."""


def train_cfg_from_file(path: str, task: str, packages: Collection[str], defaults: TrainCfg) -> TrainCfg:
    """The `TrainCfg` a settings file holds for `task`: a run's config.json (every setting, as
    `phalanx train` writes it) is taken whole; any other JSON or YAML file names only the settings
    it changes, on top of `defaults` (the task's). Its terms come only from `packages` (see
    `env_cfg_from_data`); the run directory and resume are left unset."""
    data = _read(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a {type(data).__name__}, not settings by name", "config")
    if data.get("task", task) != task:
        raise ConfigError(f"{path} trained {data.get('task')!r}, not {task!r}", "config")
    base = to_data(defaults)
    if not set(base) <= set(data):  # a partial file: the task's settings, with the file's on top
        algo = data.get("algo")
        if isinstance(algo, dict) and not set(algo) <= set(base["algo"]):
            base["algo"] = {}  # another algorithm's settings: the file's replace the default's
        data = _merged(base, data)
    if not isinstance(data.get("env"), dict):
        raise ConfigError(f"{path}: env: expected settings by name, got {data.get('env')!r}", "config")
    settings = {k: v for k, v in data.items() if k not in (*WHERE_IT_WENT, "env")}
    try:
        cfg = from_data(TrainCfg, settings, "config", no_references)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}", "config") from None
    cfg.env = env_cfg_from_data(data["env"], f"--config {path}", packages)
    return cfg


def _read(path: str) -> object:
    """A settings file's data: YAML for a .yaml or .yml file (PyYAML's safe loader), else JSON."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ConfigError(f"cannot read {path} ({error.strerror or error})", "config") from None
    if Path(path).suffix not in (".yaml", ".yml"):
        try:
            return json.loads(text)
        except ValueError as error:
            raise ConfigError(f"{path} is not JSON ({error})", "config") from None
    try:
        import yaml
    except ImportError:
        raise ConfigError(
            f"{path}: a YAML file needs PyYAML, which is not installed: pip install pyyaml", "config"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())
        raise ConfigError(f"{path} is not YAML ({reason})", "config") from None


def _merged(base: object, over: object) -> object:
    """`over` on top of `base`: dicts key by key (recursively), anything else `over`."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    return base | {key: _merged(base.get(key), value) for key, value in over.items()}
