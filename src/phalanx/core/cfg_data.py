"""Configs as plain data and back: what config.json shows and what a checkpoint stores.

`to_data` turns a dataclass config into dicts, lists, tuples, strings, numbers and None; a
function or class in it becomes its "module:qualname". `from_data` rebuilds the dataclass from
that data, guided by the field annotations; a "module:qualname" is handed to a `resolve` callback
that decides what may be named (the env layer allows only term functions and classes).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from phalanx.core.errors import ConfigError

PLAIN = (str, int, float, bool, type(None))


def to_data(value: Any, path: str = "config") -> Any:
    """`value` as plain data; `path` names it in errors (a lambda or a local function cannot be named)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name), f"{path}.{f.name}") for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_data(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [to_data(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, PLAIN):
        return value
    if callable(value) and hasattr(value, "__qualname__"):
        if "<" in value.__qualname__:  # <lambda>, <locals>: nothing could find it again
            raise ConfigError(
                f"{value.__qualname__} cannot be stored in a config; define it at the top level of a module", path
            )
        return f"{value.__module__}:{value.__qualname__}"
    raise ConfigError(f"a {type(value).__name__} cannot be stored in a config (plain values and functions only)", path)


def from_data(cls: type, data: Any, path: str, resolve: Callable[[str, Any, str], Any]) -> Any:
    """The dataclass `cls` rebuilt from `to_data`'s output. `resolve(reference, annotation, path)`
    turns a "module:qualname" string found where the annotation expects a callable into the object."""
    return _convert(cls, data, path, resolve)


def no_references(reference: str, annotation: Any, path: str) -> Any:
    """`from_data`'s `resolve` for configs that name no functions: any reference is refused."""
    raise ConfigError(f"a function reference {reference!r} where none belongs", path)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(hint: Any, data: Any, path: str, resolve: Callable) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return data
    if dataclasses.is_dataclass(hint):
        return _dataclass(hint, data, path, resolve)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if isinstance(data, str) and any(_is_callable_hint(a) for a in options):
            return resolve(data, hint, path)
        if isinstance(data, dict):
            options = [a for a in options if dataclasses.is_dataclass(a) or typing.get_origin(a) is dict] or options
            # Of several dataclasses, the first that has every field the data names.
            fitting = [a for a in options if not dataclasses.is_dataclass(a) or set(data) <= _field_names(a)]
            options = fitting or options
        return _convert(options[0], data, path, resolve)
    if _is_callable_hint(hint):
        return resolve(_expect(data, str, path), hint, path)
    if origin is dict:
        return {k: _convert(args[1], v, f"{path}.{k}", resolve) for k, v in _expect(data, dict, path).items()}
    if origin in (list, tuple):
        items = _expect(data, list | tuple, path)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(items) != len(args):
                raise ConfigError(f"expected {len(args)} values, got {len(items)}", path)
            return tuple(
                _convert(a, v, f"{path}[{i}]", resolve) for i, (a, v) in enumerate(zip(args, items, strict=True))
            )
        item = args[0] if args else Any
        converted = [_convert(item, v, f"{path}[{i}]", resolve) for i, v in enumerate(items)]
        return converted if origin is list else tuple(converted)
    if origin is typing.Literal:
        if data not in args:
            raise ConfigError(f"got {data!r}; allowed: {', '.join(map(repr, args))}", path)
        return data
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if hint in PLAIN:
        return _expect(data, hint, path)
    return data


def _dataclass(cls: type, data: Any, path: str, resolve: Callable) -> Any:
    data = _expect(data, dict, path)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise ConfigError(f"unknown fields {unknown}; {cls.__name__} has {list(fields)}", path)
    hints = _hints(cls)
    values = {name: _convert(hints[name], data[name], f"{path}.{name}", resolve) for name in fields if name in data}
    missing = [
        name
        for name, f in fields.items()
        if name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"lacks the required fields {missing} of {cls.__name__}", path)
    return cls(**values)


def _field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _is_callable_hint(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin in (type, Callable) or hint is Callable


def _expect(data: Any, kind: Any, path: str) -> Any:
    if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
        name = getattr(kind, "__name__", str(kind))
        raise ConfigError(f"expected {name}, got {type(data).__name__} {data!r}", path)
    return data
