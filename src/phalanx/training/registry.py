"""The task registry: a task's env config, training defaults and play variant, registered
together with one call, and `make`, which builds an env from a task name or a `TaskCfg`.

Tasks come from phalanx itself (`phalanx.tasks`), from packages that declare an entry point in
the group `phalanx.tasks` (a module that calls `register` when imported, or a function that
does when called), from task files (`--module my_task.py`, see `task_files`), and from `register`
calls in the user's own code.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import importlib
import importlib.metadata
import re
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phalanx.core.errors import ConfigError, check_int, check_positive, check_range, check_seed

if TYPE_CHECKING:
    import torch

    from phalanx.envs.cfg import LowLevelPolicyCfg, TaskCfg
    from phalanx.envs.low_level import LowLevelSource
    from phalanx.envs.task_env import TaskEnv
    from phalanx.training.cfg import TrainCfg

ENTRY_POINT_GROUP = "phalanx.tasks"
BUILTIN = (
    "cartpole",
    "locomotion",
    "anymal.velocity",
    "anymal.qp",
    "anymal.stones",
    "shadow_hand.cube",
    "franka.reach",
    "franka.lift",
    "franka.cabinet",
)
"""phalanx's own task modules (`phalanx.tasks.*`), in the order `phalanx list` shows them."""
TASK_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class UnknownTaskError(ConfigError):
    """A task name that is not registered."""


DIRECTIONS = (">=", "<=")


@dataclass(frozen=True)
class LearningResult:
    """What `phalanx train TASK` with the task's defaults must reach, and how fast: `metric` (a
    metrics.jsonl key, e.g. "mean_episode_length", "metrics/success", "env/terrain_level") at
    `threshold` or better (`direction` ">=" or "<=") within `budget_s` seconds of wall clock from
    the process's launch (start-up included) on the learning suite's GPU. `phalanx bench learn`
    checks it. A budget leaves room for slower hosts, seeds and cold caches, yet fails a task that
    stops learning (docs/benchmarks.md says how phalanx's tasks size theirs)."""

    metric: str
    threshold: float
    budget_s: float
    direction: str = ">="
    teacher: str | None = None
    """A task whose trained policy this one learns from (`phalanx train --teacher`): the learning
    suite trains it as the student of that task's run with the same seed, which must be in the
    suite; `budget_s` counts from the student's launch (the report adds the teacher's time)."""

    def check(self, where: str) -> None:
        """Raises ConfigError naming the first invalid field (`where`: who declared it)."""
        if not isinstance(self.metric, str) or not self.metric:
            raise ConfigError(f"{where}: result.metric must name a metrics.jsonl key, got {self.metric!r}")
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"{where}: result.direction: got {self.direction!r}; allowed: '>=', '<='")
        if self.teacher is not None and not (isinstance(self.teacher, str) and TASK_NAME.fullmatch(self.teacher)):
            raise ConfigError(f"{where}: result.teacher must name a task, got {self.teacher!r}")
        try:
            check_range("result.threshold", self.threshold)
            check_positive("result.budget_s", self.budget_s, " seconds")
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None

    def reached(self, value: float) -> bool:
        """Whether `value` of the metric meets the threshold."""
        return value >= self.threshold if self.direction == ">=" else value <= self.threshold

    def describe(self) -> str:
        """e.g. "metrics/success >= 0.9 in 600 s", or "... in 1200 s, taught by shadow-cube"."""
        taught = "" if self.teacher is None else f", taught by {self.teacher}"
        return f"{self.metric} {self.direction} {self.threshold:g} in {self.budget_s:g} s{taught}"


@dataclass(frozen=True)
class TaskSpec:
    """A registered task. Each config is a factory: every call gives a fresh copy to edit."""

    name: str
    env_cfg: Callable[[], TaskCfg]
    train_cfg: Callable[[], TrainCfg]
    play_cfg: Callable[[TaskCfg], TaskCfg | None] | None
    """Turns the env a policy was trained on into the one it plays in (e.g. without observation
    noise or pushes); None: plays in the trained env as it is."""
    module: str
    """The module that registered it."""
    result: LearningResult | None = None
    """What its training must reach (`phalanx bench learn`); None: nothing declared."""
    algos: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Its own settings for other algorithms than its train_cfg's (`phalanx train --algo NAME`),
    by name: a fresh copy each lookup (`algo_cfg`)."""


_TASKS: dict[str, TaskSpec] = {}
_loaded = False


def register(
    name: str,
    *,
    env_cfg: TaskCfg | Callable[[], TaskCfg],
    train_cfg: TrainCfg | Callable[[], TrainCfg] | None,
    play_cfg: Callable[[TaskCfg], TaskCfg | None] | None = None,
    result: LearningResult | None = None,
    algos: dict[str, Any] | None = None,
) -> None:
    """Registers a task: `phalanx list` shows it, `phalanx train NAME` trains it with `train_cfg`
    (required: a task is never given generic training settings), `phalanx play NAME` plays it
    in `play_cfg(trained env config)`, `phalanx bench learn NAME` checks that its training
    reaches `result`; `algos` gives its settings for other algorithms by name (e.g.
    `{"td3": TD3Cfg(v_min=-100, v_max=100)}` for `--algo td3`). Configs may be instances or
    functions returning them. Registering a name
    again from the same module replaces it; from another module is an error."""
    from phalanx.envs.cfg import TaskCfg
    from phalanx.training.cfg import TrainCfg

    module = sys._getframe(1).f_globals.get("__name__", "?")
    where = f"register({name!r})"
    if not isinstance(name, str) or not TASK_NAME.fullmatch(name):
        raise ConfigError(f"{where}: a task name is lowercase letters and digits joined by dashes, e.g. 'my-robot'")
    if train_cfg is None:
        raise ConfigError(
            f"{where}: train_cfg is required: the phalanx.TrainCfg (PPO settings, network sizes, rollout length) "
            "this task learns with"
        )
    for label, value, kind in (("env_cfg", env_cfg, TaskCfg), ("train_cfg", train_cfg, TrainCfg)):
        if not (isinstance(value, kind) or (callable(value) and not isinstance(value, type))):
            raise ConfigError(f"{where}: {label} must be a {kind.__name__} or a function returning one")
    if play_cfg is not None and not callable(play_cfg):
        raise ConfigError(f"{where}: play_cfg must be a function of the trained env config")
    if result is not None:
        if not isinstance(result, LearningResult):
            raise ConfigError(
                f"{where}: result must be a phalanx.training.registry.LearningResult, got {type(result).__name__}"
            )
        result.check(where)
    from phalanx.rl.cfg import ALGORITHMS

    for algo, settings in (algos or {}).items():
        if algo not in ALGORITHMS or not isinstance(settings, ALGORITHMS[algo]):
            kinds = ", ".join(f"{k!r}: {v.__name__}" for k, v in ALGORITHMS.items())
            raise ConfigError(f"{where}: algos maps an algorithm's name to its settings ({kinds}); got {algo!r}")
    known = _TASKS.get(name)
    if known is not None and known.module != module:
        raise ConfigError(f"{where}: the name is taken by a task registered in {known.module}")
    _TASKS[name] = TaskSpec(name, _factory(env_cfg), _factory(train_cfg), play_cfg, module, result, dict(algos or {}))


def _factory(value: Any) -> Callable[[], Any]:
    return value if callable(value) else lambda: copy.deepcopy(value)


def registered_tasks() -> dict[str, TaskSpec]:
    """Every registered task by name: phalanx's own (in `BUILTIN` order, whichever of their
    modules was imported first), then those of installed packages."""
    _load()
    order = {f"phalanx.tasks.{module}": i for i, module in enumerate(BUILTIN)}
    return dict(sorted(_TASKS.items(), key=lambda item: order.get(item[1].module, len(order))))


def term_packages() -> frozenset[str]:
    """The top-level packages whose modules a stored config's terms may come from: phalanx and
    those of the modules that registered tasks."""
    return frozenset({"phalanx"} | {spec.module.partition(".")[0] for spec in registered_tasks().values()})


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN:
        importlib.import_module(f"phalanx.tasks.{module}")
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = entry.load()
            if callable(target) and not isinstance(target, types.ModuleType):
                target()
        except Exception as error:  # noqa: BLE001 (one broken package must not take the others down)
            package = entry.dist.name if entry.dist is not None else "?"
            print(
                f"phalanx: warning: tasks of {package} ({entry.name} = {entry.value}) not loaded: {error}",
                file=sys.stderr,
            )
    from phalanx.training.task_files import load_task_files

    load_task_files()


def task_spec(name: str) -> TaskSpec:
    found = registered_tasks().get(name)
    if found is None:
        names = list(registered_tasks())
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownTaskError(f"unknown task {name!r}; {hint}registered tasks: {', '.join(names)}")
    return found


def env_cfg(name: str) -> TaskCfg:
    """A fresh copy of the registered task's env config (safe to edit)."""
    cfg = task_spec(name).env_cfg()
    cfg.name = name
    return cfg


def train_cfg(name: str) -> TrainCfg:
    """A fresh copy of the task's training defaults, with its env config in `env`."""
    from phalanx.training.cfg import move_cpu_num_envs

    cfg = task_spec(name).train_cfg()
    if cfg.task not in ("", name):
        raise ConfigError(f"register({name!r}): its train_cfg names another task, {cfg.task!r}")
    cfg.task, cfg.env = name, env_cfg(name)
    if move_cpu_num_envs(cfg):
        warnings.warn(
            f"register({name!r}): TrainCfg.cpu_num_envs is deprecated; set TaskCfg.cpu_num_envs",
            DeprecationWarning,
            stacklevel=2,
        )
    return cfg


def algo_cfg(name: str, algo: str) -> Any:
    """A fresh copy of the task's settings for algorithm `algo` (`--algo`): its registered ones,
    else the algorithm's defaults."""
    from phalanx.rl.cfg import ALGORITHMS

    found = task_spec(name).algos.get(algo)
    return ALGORITHMS[algo]() if found is None else copy.deepcopy(found)


def play_env_cfg(name: str, trained: TaskCfg) -> TaskCfg:
    """The env a policy trained in `trained` plays in: the task's play variant of it (a task
    that is not registered plays in `trained` as it is)."""
    spec = registered_tasks().get(name)
    if spec is None or spec.play_cfg is None:
        return trained
    changed = spec.play_cfg(trained)
    return trained if changed is None else changed


def make(
    task: str | TaskCfg,
    num_envs: int | None = None,
    device: str | torch.device | None = None,
    seed: int = 0,
    verbose: bool = False,
    capture: bool | None = None,
    compile: bool | None = None,  # noqa: A002 (the flag is named like torch.compile)
    reset: bool = True,
) -> TaskEnv:
    """Builds a `VecEnv` of `num_envs` copies of `task` (a registered name or a `TaskCfg`) on `device`.

    Args:
        num_envs: None: the task's for the device (its `num_envs` on a GPU, `cpu_num_envs` on the CPU).
        device: 'cpu', 'cuda' or 'cuda:K'; None: 'cuda' when a GPU is visible, else 'cpu'.
        seed: seeds the env's random generator (initial states, events).
        verbose: print the term tables and Warp's compile messages.
        capture: capture the whole env step as one CUDA graph (None: on for CUDA devices).
        compile: torch.compile the torch part of the step (None: the task's `compile_step` where capturing).
        reset: reset before returning; False: the caller resets, its work until then overlapping the step's compile."""
    from phalanx.core.devices import resolve_device
    from phalanx.core.warp_cache import configure_warp
    from phalanx.envs.cfg import TaskCfg
    from phalanx.envs.task_env import TaskEnv

    if not isinstance(task, str | TaskCfg):
        raise ConfigError(f"a registered task's name or a phalanx.TaskCfg, got {type(task).__name__}", "task")
    cfg = env_cfg(task) if isinstance(task, str) else task
    check_seed("seed", seed)
    configure_warp(verbose)
    device = resolve_device(device)
    num_envs = cfg.default_num_envs(device) if num_envs is None else num_envs
    check_int("num_envs", num_envs)
    low_level = None if cfg.actions.low_level is None else low_level_source(cfg.actions.low_level)
    return TaskEnv(
        cfg,
        num_envs,
        device,
        seed=seed,
        verbose=verbose,
        capture=capture,
        compile=compile,
        low_level=low_level,
        reset=reset,
    )


def low_level_source(cfg: LowLevelPolicyCfg) -> LowLevelSource:
    """The frozen policy a hierarchical task commands: the env config it was trained on and its
    actor, from `cfg.checkpoint` (an untrained actor of the task's default size without one)."""
    from phalanx.envs.low_level import LowLevelSource
    from phalanx.envs.stored_cfg import checkpoint_env_cfg
    from phalanx.training.checkpoint import CheckpointError, load_checkpoint
    from phalanx.training.frozen_policy import checkpoint_actor, untrained_actor

    if cfg.checkpoint is None:
        defaults = train_cfg(cfg.task)
        return LowLevelSource(defaults.env, untrained_actor(defaults.policy, defaults.empirical_normalization))
    try:
        state = load_checkpoint(cfg.checkpoint, cfg.task)
    except CheckpointError as error:
        raise ConfigError(f"--low-level-checkpoint: {error}") from None
    trained = checkpoint_env_cfg(state, f"--low-level-checkpoint {cfg.checkpoint}", term_packages())
    return LowLevelSource(trained, checkpoint_actor(state, f"--low-level-checkpoint: {cfg.checkpoint}"))
