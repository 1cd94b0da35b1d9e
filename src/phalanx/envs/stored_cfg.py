"""A `TaskCfg` as plain data (config.json, checkpoints) and back, so a trained policy plays back
with the env it was trained with, overrides and unregistered tasks included.

Terms are stored by name ("module:qualname"). Rebuilding imports that module, as loading the
task in Python would, and takes from it only a term: a `Term` subclass or a function whose first
parameter is `env`. A checkpoint cannot make phalanx call anything else.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from phalanx.config_data import from_data, to_data
from phalanx.envs.cfg import TaskCfg, Term
from phalanx.errors import ConfigError


def env_cfg_to_data(cfg: TaskCfg) -> dict[str, Any]:
    """`cfg` as plain data; its terms as "module:qualname"."""
    return to_data(cfg, "env")


def env_cfg_from_data(data: Any, source: str) -> TaskCfg:
    """The `TaskCfg` stored as `data`; errors name `source` (e.g. the checkpoint) and the field."""
    try:
        return from_data(TaskCfg, data, "env", _resolve_term)
    except ConfigError as error:
        raise ConfigError(f"{source}: its env config: {error}") from None


def _resolve_term(reference: str, annotation: Any, path: str) -> Any:
    module_name, _, qualname = reference.partition(":")
    if not module_name or not qualname:
        raise ConfigError(f"expected 'module:function', got {reference!r}", path)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"{reference}: cannot import {module_name} ({error})", path) from None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigError(f"{reference}: {module_name} has no {qualname}", path)
    if isinstance(obj, type):
        if issubclass(obj, Term):
            return obj
    elif inspect.isfunction(obj):
        params = list(inspect.signature(obj).parameters)
        if params and params[0] == "env":
            return obj
    raise ConfigError(f"{reference} is not a term (a Term class, or a function taking env first): refused", path)
