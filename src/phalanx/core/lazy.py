"""Package attributes loaded on first use: `import phalanx` and configs stay light (no Warp, no
MuJoCo Warp) until something needs them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `table[name]` (a module path) and returns its `name`,
    or its submodule `name`."""

    def attribute(name: str) -> Any:
        if name in table:
            module = importlib.import_module(table[name])
            found = getattr(module, name, None)
            return found if found is not None else importlib.import_module(f"{table[name]}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return attribute
