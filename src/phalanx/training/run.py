"""Training a task from a checked `TrainCfg`, for `phalanx train` and for Python (`phalanx.train`):
join the torchrun job if asked, take the run directory, pick the checkpoint to continue, build
the env and the trainer, write config.json, train."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from rich.console import Console

from phalanx.core.cfg_data import to_data
from phalanx.core.console import wide_console
from phalanx.core.errors import ConfigError
from phalanx.core.stops import raise_swallowed_stop
from phalanx.core.versions import versions
from phalanx.rl.cfg import PPOCfg
from phalanx.training.cfg import TrainCfg, check_train_cfg, move_cpu_num_envs
from phalanx.training.run_paths import checkpoint_file, new_run_dir

if TYPE_CHECKING:
    from phalanx.dist import DistContext, Progress
    from phalanx.envs.cfg import TaskCfg
    from phalanx.training.run_dir import RunDir
    from phalanx.training.trainer import Trainer


def train(
    task: str | TaskCfg, cfg: TrainCfg | None = None, console: Console | None = None, **fields: Any
) -> Trainer | None:
    """Trains a registered task (by name) or a `TaskCfg` and returns the trainer once done (None
    when another library trained: `trainer="sb3"`, ...).

    `cfg` holds the training settings (default: the task's registered ones; required for a
    `TaskCfg`, which must have a `name`); keyword arguments replace its fields, e.g.
    `phalanx.train("cartpole", max_iterations=50, device="cpu", run_dir="runs/mine")`. The run
    directory gets config.json, metrics.jsonl, checkpoints and TensorBoard events, as with
    `phalanx train`.
    """
    from phalanx.envs.cfg import TaskCfg
    from phalanx.training.registry import env_cfg, train_cfg

    if not isinstance(task, str | TaskCfg):
        raise ConfigError(f"a registered task's name or a phalanx.TaskCfg, got {type(task).__name__}", "task")
    known = {f.name for f in dataclasses.fields(TrainCfg)} - {"task", "env"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ConfigError(f"phalanx.train: no setting {unknown[0]!r}; TrainCfg has {', '.join(sorted(known))}")
    if isinstance(task, str):
        base = train_cfg(task) if cfg is None else dataclasses.replace(cfg, task=task)
        if base.env is None:
            base.env = env_cfg(task)
    else:
        if cfg is None:
            raise ConfigError("phalanx.train(TaskCfg): give the TrainCfg to learn it with (cfg=...)", "cfg")
        if not task.name:
            raise ConfigError("the task needs a name (it names the run directory and the checkpoints)", "env.name")
        base = dataclasses.replace(cfg, task=task.name, env=task)
    cfg = dataclasses.replace(base, **fields)
    check_train_cfg(cfg)
    status, trainer = run_training(cfg, console or wide_console())
    if status not in (0, 130, 143) or (trainer is None and cfg.trainer == "phalanx"):
        raise RuntimeError(f"training stopped with status {status}")
    return trainer


def run_training(cfg: TrainCfg, console: Console, registered_env: dict | None = None) -> tuple[int, Trainer | None]:
    """Trains as `cfg` says (checked by `check_train_cfg`). `registered_env`: the task's registered env config as data,
    to tell a resumed run whether flags changed the env. Returns the exit status (0, 128 + the
    stop signal after its checkpoint, 1 on lost ranks) and the trainer."""
    from phalanx.core.devices import resolve_device
    from phalanx.dist import DistContext, Progress, StallWatchdog, init_distributed, library_rank
    from phalanx.training.run_dir import RunDir

    check_low_level(cfg.env)
    dist = DistContext()
    if cfg.distributed:
        store_timeout_s = cfg.startup_timeout_s + 2 * cfg.stall_timeout_s
        if cfg.trainer != "phalanx":
            dist, cfg.device = library_rank(cfg.trainer, timeout_s=store_timeout_s)
        else:  # collectives time out only behind the stall watchdog, which names the stuck rank
            dist, cfg.device = init_distributed(cfg.device, timeout_s=store_timeout_s)
        if not dist.is_main:
            console = Console(quiet=True)
    device = resolve_device(cfg.device)
    if move_cpu_num_envs(cfg):  # the deprecated flag or field sets the env's CPU default
        console.print("[yellow]warning:[/yellow] --cpu-num-envs is deprecated: use --num-envs")
    if cfg.num_envs is None:
        cfg.num_envs = cfg.env.default_num_envs(device)
        if device.type == "cpu" and cfg.device is None:
            console.print(f"no CUDA GPU visible: training on the CPU with {cfg.num_envs} envs (--device, --num-envs)")
    cfg.device = str(device)
    batch = cfg.num_envs * cfg.num_steps_per_env
    if isinstance(cfg.algo, PPOCfg) and batch % cfg.algo.num_mini_batches:
        raise ConfigError(
            f"{cfg.algo.num_mini_batches} does not divide num_envs x num_steps_per_env "
            f"= {cfg.num_envs} x {cfg.num_steps_per_env} = {batch}",
            "algo.num_mini_batches",
        )
    if cfg.trainer == "phalanx":  # every rank runs the same phalanx with the same settings but its device
        dist.check_alike({"versions": versions(), "settings": to_data(cfg) | {"device": None}}, _started_as)
    run_dir = Path(cfg.run_dir) if cfg.run_dir else new_run_dir(cfg.task)
    cfg.run_dir = str(run_dir)
    if cfg.trainer != "phalanx":
        from phalanx.training.libraries import train_with_library

        return train_with_library(cfg, console, dist), None
    if cfg.viewer and dist.is_main:
        from phalanx.viewer.address import check_port

        check_port(cfg.viewer_host, cfg.viewer_port, "viewer_port")
    progress = Progress()
    watchdog = StallWatchdog(dist, progress, cfg.stall_timeout_s, cfg.startup_timeout_s)
    trainer = None
    try:
        # Armed from the start, with a longer allowance until the first iteration is done.
        with watchdog, RunDir(run_dir, console) if dist.is_main else contextlib.nullcontext() as run:
            trainer = _prepare(cfg, dist, progress, console, run, registered_env)
            if cfg.viewer and dist.is_main:
                trainer.watch = _watch(cfg, trainer, console)
            trainer.learn()
    except RuntimeError as error:
        # torch's DistError, or gloo's plain RuntimeError (its message names gloo's source) for a peer that went away.
        if not dist.active or not (isinstance(error, torch.distributed.DistError) or "/gloo/" in str(error)):
            raise
        watchdog.wait_for_exit()  # the watchdog is stopping the job: its report is the one to read
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(
            f"phalanx train: rank {dist.rank}: lost the other ranks, stopping ({reason})"
            + (f"; {_unsaved_stop(trainer, run_dir)}" if dist.is_main else ""),
            file=sys.stderr,
            flush=True,
        )
        # torchrun names the first failure the root cause, timed in whole seconds (ties go to the
        # lower rank): the rank that went away must stay first.
        time.sleep(watchdog.grace_s)
        return 1, trainer
    finally:
        if trainer is not None and trainer.watch is not None:
            trainer.watch.close()
        if torch.distributed.is_initialized():  # one rank too: NCCL warns about a group left open
            if trainer is not None:
                trainer.release_graphs()
            torch.distributed.destroy_process_group()
    if trainer.interrupted:
        return 128 + trainer.stop_signal, trainer  # the shell's code for "stopped by that signal"
    console.print(f"done: {trainer.iteration} iterations, checkpoint {trainer.checkpoint_path()}")
    return 0, trainer


def _watch(cfg: TrainCfg, trainer: Trainer, console: Console):
    """`--viewer`: the page that shows the training (see `phalanx.viewer.training_view`)."""
    from phalanx.training.logger import page_status
    from phalanx.viewer.address import announce
    from phalanx.viewer.training_view import TrainingView

    title = f"phalanx train {cfg.task}"
    status = functools.partial(page_status, max_iterations=cfg.max_iterations, max_time_s=cfg.max_time_s)
    view = TrainingView(trainer.env, title, cfg.viewer_host, cfg.viewer_port, cfg.num_steps_per_env, status)
    announce(console, cfg.viewer_host, view.port, "phalanx train --viewer")
    return view


def _started_as(path: str) -> str:
    """A `check_alike` path in words: "settings.env.episode_length_s" -> "--env.episode-length-s",
    "versions.torch" -> "torch"."""
    kind, _, rest = path.partition(".")
    return f"--{rest.replace('_', '-')}" if kind == "settings" else rest


def _unsaved_stop(trainer: Trainer | None, run_dir: Path) -> str:
    """What rank 0 says of its checkpoints when the job broke: a save needs every rank, so none is
    written for this stop (whatever a stop signal announced before)."""
    if trainer is not None and trainer.saved_iteration >= 0:
        newest = f"the newest is from iteration {trainer.saved_iteration}; --resume last continues from it"
    elif (run_dir / "checkpoints" / "model_last.pt").is_file():
        newest = "the newest is the one this run resumed from; --resume last continues from it"
    else:
        newest = "the run has none yet"
    return f"no checkpoint was written for this stop ({newest})"


def check_low_level(env: TaskCfg) -> None:
    """A hierarchical task trains on a trained low-level policy: its checkpoint must be given
    (stored as an absolute path, so that play finds it from anywhere)."""
    low = env.actions.low_level
    if low is None:
        return
    if low.checkpoint is None:
        raise ConfigError(
            f"task {env.name!r} commands a frozen {low.task} policy; give its checkpoint "
            f"(`phalanx train {low.task}` writes runs/{low.task}/<time>/checkpoints/model_last.pt)",
            "env.actions.low_level.checkpoint",
        )
    low.checkpoint = str(Path(low.checkpoint).resolve())


def _prepare(
    cfg: TrainCfg,
    dist: DistContext,
    progress: Progress,
    console: Console,
    run: RunDir | None,
    registered_env: dict | None,
) -> Trainer:
    """From checked flags to a trainer ready for its first iteration: which checkpoint to continue
    (checked against the flags before any env is built; its env config is the one to continue
    in), the env, the trainer and its state, and, once every check has passed, the run
    directory's config.json and metrics cut back."""
    from phalanx.envs.stored_cfg import checkpoint_env_cfg, env_cfg_to_data
    from phalanx.envs.term_tables import print_term_tables, sim_summary
    from phalanx.training.checkpoint import (
        CheckpointError,
        check_resumable,
        load_checkpoint,
        newest_readable,
        resume_keys,
    )
    from phalanx.training.registry import make, term_packages
    from phalanx.training.teacher import load_teacher, with_teacher_observations
    from phalanx.training.trainer import Trainer

    device, run_dir = torch.device(cfg.device), Path(cfg.run_dir)
    resume = Path(checkpoint_file(cfg.resume, cfg.task, "resume")) if cfg.resume not in (None, "last") else None
    keys = resume_keys(to_data(cfg.algo))
    if cfg.resume == "last":
        resume, state = newest_readable(run_dir / "checkpoints", cfg.task, keys, console)
    if run is not None:
        run.check_owner(resume, cfg.resume == "last")
    if cfg.resume != "last":
        state = load_checkpoint(resume, cfg.task, keys) if resume else None
    teacher = None
    if cfg.teacher is not None:  # its observations join the env's (a resumed student's env has them)
        teacher = load_teacher(cfg.teacher, cfg.env, term_packages())
        cfg.teacher = teacher.path
        cfg.env = with_teacher_observations(cfg.env, teacher)
    if state is not None:
        check_resumable(state, to_data(cfg), resume)
        asked = env_cfg_to_data(cfg.env)
        if asked != state["config"]["env"] and asked != registered_env:
            raise ConfigError(
                f"a resumed run continues in its checkpoint's env ({resume}); these --env flags change it",
                "env",
            )
        cfg.env = checkpoint_env_cfg(state, f"--resume {resume}", term_packages())
    low, high = dist.spread(state["iteration"] if state else -1, device)
    if low != high:
        raise ConfigError(
            f"the ranks would continue from different iterations ({low} to {high}; -1 is a fresh start): every "
            "node must see the same run directory (a filesystem all nodes share)",
            "resume",
        )
    try:
        progress.enter("building the env", slow=True)
        # The env's first reset traces its compiled step: the trainer, built first, starts compiling
        # its update in a second process beside it.
        env = make(cfg.env, num_envs=cfg.num_envs, device=device, seed=cfg.seed + dist.rank, reset=False)
        if dist.is_main:
            print_term_tables(env)
        ranks = f" | {dist.world_size} ranks, {cfg.num_envs} envs each" if dist.active else ""
        console.print(f"[bold]phalanx train[/bold] {sim_summary(env)}{ranks} | run dir {run_dir}", soft_wrap=True)
        progress.enter("building the trainer", slow=True)
        if isinstance(cfg.algo, PPOCfg):
            trainer = Trainer(cfg, env, run_dir, console, dist, progress, teacher)
        else:
            from phalanx.training.off_policy import OffPolicyTrainer

            trainer = OffPolicyTrainer(cfg, env, run_dir, console, dist, progress)
        progress.enter("resetting the env (compiling its step)", slow=True)
        env.reset()
    except (torch.OutOfMemoryError, MemoryError, RuntimeError) as error:
        if not isinstance(error, torch.OutOfMemoryError | MemoryError) and "can't allocate memory" not in str(error):
            raise
        reason = str(error).splitlines()[0]
        raise ConfigError(f"{cfg.num_envs} envs do not fit on {device} ({reason})", "num_envs") from None
    if state is not None:
        try:
            trainer.load_state_dict(state)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, RuntimeError) as error:
            if isinstance(error, ConfigError):
                raise
            reason = (str(error).splitlines() or [""])[0]
            raise CheckpointError(
                f"checkpoint: {resume}: its learner or env state does not fit this run ({type(error).__name__}: "
                f"{reason})"
            ) from None
        dist.broadcast_module(trainer.policy)
        if not isinstance(cfg.algo, PPOCfg):
            trainer.load_buffer(resume)
        console.print(f"resumed from {resume} at iteration {trainer.iteration}")
    raise_swallowed_stop()  # before the barrier: the other ranks then wait in it, not in a collective
    dist.barrier(device)  # every rank is ready: only now does the run directory change
    if run is not None:
        run.begin(trainer.iteration, to_data(cfg), dist.world_size, trainer.model_files)
    return trainer
