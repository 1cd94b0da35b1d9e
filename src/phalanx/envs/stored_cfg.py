"""A `TaskCfg` as plain data (config.json, checkpoints) and back, so a trained policy plays back
with the env it was trained with, overrides and unregistered tasks included.

Terms are stored by name ("module:qualname"). Rebuilding takes them only from phalanx's own
modules or from modules already imported in the packages the caller allows (the registry's
`term_packages`: those that registered tasks, by `phalanx.register` or entry points), and from
there only a term: a `Term` subclass or a function
whose first parameter is `env`. Any other name is refused before anything is imported: a
checkpoint cannot make phalanx import or call code of its choosing.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Collection
from types import ModuleType
from typing import Any

from phalanx.core.cfg_data import from_data, to_data
from phalanx.core.errors import ConfigError
from phalanx.envs.cfg import TaskCfg, Term
from phalanx.sim.model_files import restore_model


def env_cfg_to_data(cfg: TaskCfg) -> dict[str, Any]:
    """`cfg` as plain data; its terms as "module:qualname"."""
    return to_data(cfg, "env")


def env_cfg_from_data(data: Any, source: str, packages: Collection[str] = ("phalanx",)) -> TaskCfg:
    """The `TaskCfg` stored as `data`, its terms taken from phalanx's modules or from modules
    already imported in `packages` (the registry's `term_packages`: those that registered tasks);
    checked as any env config is; errors name `source` (e.g. the checkpoint) and the field."""
    try:
        cfg = from_data(TaskCfg, data, "env", functools.partial(_resolve_term, packages=sorted(packages)))
        cfg.check()
    except ConfigError as error:
        raise ConfigError(f"{source}: its env config: {error}") from None
    return cfg


def checkpoint_env_cfg(state: dict[str, Any], source: str, packages: Collection[str] = ("phalanx",)) -> TaskCfg:
    """The env a checkpoint's policy was trained in (as `env_cfg_from_data`), its model as the
    checkpoint carries it (a user's model file travels in the checkpoint's `model_files`)."""
    cfg = env_cfg_from_data(state["config"]["env"], source, packages)
    if "model_files" in state:
        restore_model(cfg.model, state["model_files"], source)
    return cfg


MOVED_MODULES = {
    "phalanx.envs.mdp.navigation": "phalanx.tasks.anymal.mdp.navigation",
    "phalanx.envs.mdp.quadruped_control": "phalanx.tasks.anymal.mdp.quadruped_control",
    "phalanx.envs.mdp.lift": "phalanx.tasks.franka.mdp.lift",
    "phalanx.envs.mdp.drawer": "phalanx.tasks.franka.mdp.drawer",
    "phalanx.envs.mdp.differential_ik": "phalanx.tasks.franka.mdp.differential_ik",
    "phalanx.envs.mdp.manipulation": "phalanx.tasks.shadow_hand.mdp.manipulation",
}
"""phalanx's term modules that moved, by the name older checkpoints and config.json files store
(CHANGELOG.md lists each move): such a file still plays and resumes."""


def _resolve_term(reference: str, annotation: Any, path: str, packages: list[str]) -> Any:
    module_name, _, qualname = reference.partition(":")
    module_name = MOVED_MODULES.get(module_name, module_name)
    if not module_name or not qualname:
        raise ConfigError(f"expected 'module:function', got {reference!r}", path)
    obj: Any = _term_module(module_name, reference, path, packages)
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


def _term_module(name: str, reference: str, path: str, packages: list[str]) -> ModuleType:
    """The module `name` if a stored term may come from it: one of phalanx's (imported if need be:
    phalanx's own code), or one already imported in one of `packages`. Refuses anything else
    without importing it."""
    if name == "phalanx" or name.startswith("phalanx."):
        try:
            return importlib.import_module(name)
        except ImportError as error:
            raise ConfigError(f"{reference}: phalanx has no module {name} ({error})", path) from None
    module = sys.modules.get(name)
    if module is None or name.partition(".")[0] not in packages:
        raise ConfigError(
            f"{reference}: refused: stored terms come from phalanx or from the packages that registered "
            f"tasks ({', '.join(packages)}), and nothing else is imported",
            path,
        )
    return module
