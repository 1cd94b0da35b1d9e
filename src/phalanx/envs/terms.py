"""Binding term configs to an env: a plain function with its params, or a `Term` built once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from phalanx.envs.cfg import Term

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv


class FunctionTerm(Term):
    """A plain term function with its params bound."""

    def __init__(self, env: TaskEnv, func: Any, params: dict[str, Any]):
        self._func, self._params = func, params

    def __call__(self, env: TaskEnv) -> torch.Tensor:
        return self._func(env, **self._params)


def bind_term(env: TaskEnv, func: Any, params: dict[str, Any]) -> Term:
    """A term function or `Term` class, built for `env` with its params."""
    if isinstance(func, type) and issubclass(func, Term):
        return func(env, **params)
    return FunctionTerm(env, func, params)
