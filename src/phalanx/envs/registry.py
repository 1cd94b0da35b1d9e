"""The task registry and `make`."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch

from phalanx.devices import resolve_device
from phalanx.envs.cfg import TaskCfg
from phalanx.envs.task_env import TaskEnv
from phalanx.envs.tasks.anymal import anymal_flat_cfg, anymal_nav_cfg, anymal_rough_cfg
from phalanx.envs.tasks.cartpole import cartpole_cfg
from phalanx.envs.tasks.locomotion import ant_cfg, humanoid_cfg
from phalanx.errors import ConfigError, check_int

TASKS: dict[str, Callable[[], TaskCfg]] = {
    "cartpole": cartpole_cfg,
    "ant": ant_cfg,
    "humanoid": humanoid_cfg,
    "anymal-flat": anymal_flat_cfg,
    "anymal-rough": anymal_rough_cfg,
    "anymal-nav": anymal_nav_cfg,
}


class UnknownTaskError(ConfigError):
    """A task name that is not registered."""


def task_cfg(task: str) -> TaskCfg:
    """A fresh copy of the registered task's config (safe to edit)."""
    if task not in TASKS:
        raise UnknownTaskError(f"unknown task {task!r}; registered tasks: {', '.join(TASKS)}")
    return copy.deepcopy(TASKS[task]())


def make(
    task: str | TaskCfg,
    num_envs: int | None = None,
    device: str | torch.device | None = None,
    seed: int = 0,
    verbose: bool = True,
    capture: bool | None = None,
    compile: bool | None = None,  # noqa: A002 (the flag is named like torch.compile)
) -> TaskEnv:
    """Builds a `VecEnv` of `num_envs` copies of a task on `device`.

    Args:
        task: a registered task name (see `phalanx list`) or a `TaskCfg`.
        num_envs: number of parallel envs; None takes the task's default.
        device: 'cpu', 'cuda' or 'cuda:K'; None takes 'cuda' when a GPU is visible, else 'cpu'.
        seed: seeds the env's random generator (initial states, events).
        verbose: print the sim summary and the term tables.
        capture: capture the whole env step as one CUDA graph (None: on for CUDA devices).
        compile: torch.compile the torch part of the step (None: same as capture).
    """
    cfg = task if isinstance(task, TaskCfg) else task_cfg(task)
    num_envs = cfg.num_envs if num_envs is None else num_envs
    check_int("num_envs", num_envs)
    return TaskEnv(
        cfg,
        num_envs=num_envs,
        device=resolve_device(device),
        seed=seed,
        verbose=verbose,
        capture=capture,
        compile=compile,
    )
