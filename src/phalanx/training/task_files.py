"""Task files: a Python file that calls `phalanx.register`, loaded by path without packaging it
(`phalanx train TASK --module my_task.py`). The paths go into the environment variable
`PHALANX_TASK_FILES` (separated as in PATH), so that the processes a command starts (torchrun's
ranks, `bench learn`'s jobs) load them too."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from phalanx.core.errors import ConfigError

TASK_FILES_ENV = "PHALANX_TASK_FILES"


def load_task_file(path: str) -> None:
    """Runs the file as the module named by its stem (once per process), where that name is not
    another module's."""
    file = Path(path).resolve()
    if file.suffix != ".py" or not file.is_file():
        raise ConfigError(f"got {path!r}; allowed: a Python file (.py) that calls phalanx.register", "module")
    name = file.stem
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(file):
        return
    other = None if loaded is not None else importlib.util.find_spec(name) if name.isidentifier() else None
    if loaded is not None or not name.isidentifier() or (other is not None and other.origin != str(file)):
        raise ConfigError(f"{path}: the module name {name!r} is taken or not a Python name; rename the file", "module")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def load_task_files() -> None:
    """Loads every file `PHALANX_TASK_FILES` names."""
    for path in os.environ.get(TASK_FILES_ENV, "").split(os.pathsep):
        if path:
            load_task_file(path)


def add_task_files(paths: list[str]) -> None:
    """Loads `paths` and adds them to `PHALANX_TASK_FILES` for the processes this one starts."""
    for path in paths:
        load_task_file(path)
    known = [p for p in os.environ.get(TASK_FILES_ENV, "").split(os.pathsep) if p]
    resolved = [str(Path(p).resolve()) for p in paths]
    os.environ[TASK_FILES_ENV] = os.pathsep.join(known + [p for p in resolved if p not in known])
