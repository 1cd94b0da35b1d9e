"""The `phalanx` command line: list, train, play.

    phalanx list
    phalanx train TASK [--num-envs N] [--device D] [--max-iterations K] [--seed S] [--run-dir DIR]
                       [--resume CKPT] [--algo.* ...] [--policy.* ...] [--sim.* ...]
    phalanx play TASK --checkpoint P [--num-envs N] [--steps S] [--video FILE.mp4] [--video-env K]
    phalanx bench throughput|envs TASK [--num-envs 4096,16384] [--device D] [--iterations K]
                                       [--run-dir DIR] [--telemetry]
    phalanx bench report DIR [DIR ...] [--out DIR]

User errors (unknown task, bad flag values, missing or foreign checkpoints) print one line and
exit with status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import os
import signal
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import tyro
from rich.console import Console
from rich.table import Table

from phalanx.errors import ConfigError, check_int
from phalanx.files import probe_writable

if TYPE_CHECKING:  # the command line imports torch, Warp and the envs only when a command needs them
    from phalanx.dist import DistContext, Progress
    from phalanx.envs import TaskCfg
    from phalanx.rl.config import TrainCfg
    from phalanx.rl.run_dir import RunDir
    from phalanx.rl.trainer import Trainer

COMMANDS = ("list", "train", "play", "bench")


@dataclass
class PlayCfg:
    """phalanx play: run a trained policy deterministically, report returns, optionally record one env."""

    task: str
    """Registered task name."""
    checkpoint: str
    """Checkpoint written by `phalanx train` (run_dir/checkpoints/model_last.pt)."""
    num_envs: int = 16
    """Parallel envs to evaluate."""
    steps: int | None = None
    """Env steps to run; default: one full episode."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    seed: int = 0
    """Seeds the env's initial states."""
    video: str | None = None
    """Write an mp4 of one env here (`--video-env`)."""
    video_env: int = 0
    """The env the video follows (on a terrain, env K of N walks on column K * columns // N)."""
    low_level_checkpoint: str | None = None
    """Hierarchical tasks (anymal-nav): the low-level policy's checkpoint; default: the one the
    run was trained with."""


def configure_warp() -> None:
    """Keeps Warp's start-up banner and per-module compile lines out of the console."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING


def list_tasks(console: Console) -> None:
    """Builds each task once on the CPU with one env (no physics step) to read its dimensions."""
    from phalanx.envs import TASKS, make

    table = Table(title="phalanx tasks", title_justify="left")
    for column in ("task", "observations", "actions", "physics dt", "decimation", "episode", "description"):
        table.add_column(column)
    for name in TASKS:
        env = make(name, num_envs=1, device="cpu", verbose=False)
        obs = ", ".join(
            f"{group} {shape[0] if len(shape) == 1 else shape}" for group, shape in env.observation_spec.items()
        )
        table.add_row(
            name,
            obs,
            str(env.action_dim),
            f"{env.sim.dt * 1e3:.2f} ms",
            str(round(env.step_dt / env.sim.dt)),
            f"{env.cfg.episode_length_s:g} s",
            env.cfg.description,
        )
    console.print(table)


def _task_and_flags(command: str, args: list[str]) -> tuple[str, list[str]]:
    """Splits `TASK --flags...` and checks the task is registered."""
    from phalanx.envs import TASKS, task_cfg

    if not args or args[0].startswith("-"):
        if args and args[0] in ("-h", "--help"):
            raise SystemExit(f"usage: phalanx {command} TASK [flags]; TASK is one of: {', '.join(TASKS)}")
        raise ConfigError(f"{command}: missing TASK; registered tasks: {', '.join(TASKS)}")
    task_cfg(args[0])  # raises UnknownTaskError listing the registered names
    return args[0], args[1:]


def _launch_torchrun(task: str, flags: list[str], gpus: str, run_dir: str | None) -> NoReturn:
    """Becomes (exec) a torchrun job of N local processes running this same command with
    --distributed: signals then reach torchrun's agent as if the user had started it, and it
    forwards them to every rank. The run directory is chosen here, once, for all ranks."""
    import torch

    if gpus == "all" and torch.cuda.device_count() == 0:
        raise ConfigError("--gpus all: this machine has no GPU; give a number of CPU processes instead")
    count = torch.cuda.device_count() if gpus == "all" else int(gpus) if gpus.isdigit() else 0
    if count <= 0:
        raise ConfigError(
            f"--gpus: got {gpus!r}; allowed: a positive integer or 'all' (this machine has "
            f"{torch.cuda.device_count()} GPUs)"
        )
    rest, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag == "--gpus":
            skip = True
        elif not flag.startswith("--gpus="):
            rest.append(flag)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={count}",
        "-m",
        "phalanx",
        "train",
        task,
        *rest,
        "--distributed",
    ]
    if run_dir is None:
        command += ["--run-dir", str(_new_run_dir(task))]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, command)


def train(args: list[str], console: Console) -> int:
    """phalanx train: checks every flag, joins the torchrun job if asked, takes the run directory,
    builds the env and the trainer, trains. Returns the exit status: 0, or 128 + the signal
    (130 Ctrl-C, 143 SIGTERM) that stopped training after a checkpoint, or 1 on lost ranks."""
    import torch

    from phalanx.devices import resolve_device
    from phalanx.dist import DistContext, Progress, StallWatchdog, init_distributed
    from phalanx.envs import task_cfg
    from phalanx.rl.config import check_train_cfg, default_train_cfg
    from phalanx.rl.run_dir import RunDir

    if hasattr(signal, "SIGUSR1") and sys.__stderr__ is not None:
        # `kill -USR1 PID` prints every thread's Python stack to stderr; training goes on.
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    task, flags = _task_and_flags("train", args)
    defaults = default_train_cfg(task)
    tcfg = task_cfg(task)
    defaults.sim = tcfg.sim
    cfg = tyro.cli(type(defaults), default=defaults, args=flags, prog=f"phalanx train {task}")
    if cfg.task != task:
        raise ConfigError(f"--task: got {cfg.task!r}, but the command trains {task!r}")
    check_train_cfg(cfg)  # every check that needs no env: a bad flag fails before anything is built
    if cfg.resume == "last" and not cfg.run_dir:
        raise ConfigError("--resume last: needs --run-dir (the run whose last checkpoint to continue)")
    if cfg.gpus is not None:
        _launch_torchrun(task, flags, cfg.gpus, cfg.run_dir)
    dist = DistContext()
    if cfg.distributed:
        # Collectives time out only behind the stall watchdog, which names the stuck rank.
        dist, cfg.device = init_distributed(cfg.device, timeout_s=cfg.startup_timeout_s + 2 * cfg.stall_timeout_s)
        if not dist.is_main:
            console = Console(quiet=True)
    device = resolve_device(cfg.device)
    if cfg.num_envs is None:
        cfg.num_envs = tcfg.num_envs if device.type == "cuda" else cfg.cpu_num_envs
        if device.type == "cpu" and cfg.device is None:
            console.print(f"no CUDA GPU visible: training on the CPU with {cfg.num_envs} envs (--device, --num-envs)")
    cfg.device = str(device)
    batch = cfg.num_envs * cfg.num_steps_per_env
    if batch % cfg.algo.num_mini_batches:
        raise ConfigError(
            f"{cfg.algo.num_mini_batches} does not divide num_envs x num_steps_per_env "
            f"= {cfg.num_envs} x {cfg.num_steps_per_env} = {batch}",
            "algo.num_mini_batches",
        )
    run_dir = Path(cfg.run_dir) if cfg.run_dir else _new_run_dir(task)
    cfg.run_dir = str(run_dir)
    progress = Progress()
    watchdog = StallWatchdog(dist, progress, cfg.stall_timeout_s, cfg.startup_timeout_s)
    trainer = None
    try:
        # Armed from the start, with a longer allowance until the first iteration is done.
        with watchdog, RunDir(run_dir, console) if dist.is_main else contextlib.nullcontext() as run:
            trainer = _prepare(cfg, tcfg, dist, progress, console, run)
            trainer.learn()
    except RuntimeError as error:
        # torch's DistError, or gloo's plain RuntimeError (its message names gloo's source) for a peer that went away.
        if not dist.active or not (isinstance(error, torch.distributed.DistError) or "/gloo/" in str(error)):
            raise
        watchdog.wait_for_exit()  # the watchdog is stopping the job: its report is the one to read
        print(
            f"phalanx train: rank {dist.rank}: lost the other ranks, stopping ({error})".splitlines()[0],
            file=sys.stderr,
        )
        return 1
    finally:
        if torch.distributed.is_initialized():  # one rank too: NCCL warns about a group left open
            if trainer is not None:
                trainer.release_graphs()
            torch.distributed.destroy_process_group()
    if trainer.interrupted:
        return 128 + trainer.stop_signal  # the shell's code for "stopped by that signal"; the checkpoint is saved
    console.print(f"done: {trainer.iteration} iterations, checkpoint {trainer.checkpoint_path()}")
    return 0


def _new_run_dir(task: str) -> Path:
    """runs/TASK/DATE_TIME, with a suffix if a run started in the same second."""
    base = Path("runs") / task / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}_{n}")
    return path


def _prepare(
    cfg: TrainCfg, tcfg: TaskCfg, dist: DistContext, progress: Progress, console: Console, run: RunDir | None
) -> Trainer:
    """From checked flags to a trainer ready for its first iteration: which checkpoint to continue
    (checked against the flags before any env is built), the env, the trainer and its state, and,
    once every check has passed, the run directory's config.json and metrics cut back."""
    import torch

    from phalanx.envs import make
    from phalanx.envs.tables import sim_summary
    from phalanx.rl.checkpoint import RESUME_KEYS, check_resumable, load_checkpoint
    from phalanx.rl.trainer import Trainer

    device, run_dir = torch.device(cfg.device), Path(cfg.run_dir)
    resume = Path(cfg.resume) if cfg.resume not in (None, "last") else None
    if cfg.resume == "last":
        last = run_dir / "checkpoints" / "model_last.pt"
        resume = last if last.is_file() else None
    if run is not None:
        run.check_owner(resume, cfg.resume == "last")
    state = load_checkpoint(resume, cfg.task, RESUME_KEYS) if resume else None
    if state is not None:
        check_resumable(state, dataclasses.asdict(cfg), resume)
    low, high = dist.spread(state["iteration"] if state else -1, device)
    if low != high:
        raise ConfigError(
            f"the ranks would continue from different iterations ({low} to {high}; -1 is a fresh start): every "
            "node must see the same run directory (a filesystem all nodes share)",
            "resume",
        )
    tcfg.sim = cfg.sim
    if cfg.low_level_checkpoint is not None:  # absolute in config.json and checkpoints: play finds it anywhere
        cfg.low_level_checkpoint = str(Path(cfg.low_level_checkpoint).resolve())
    _set_low_level_checkpoint(tcfg, cfg.low_level_checkpoint)
    try:
        progress.enter("building the env", slow=True)
        env = make(tcfg, num_envs=cfg.num_envs, device=device, seed=cfg.seed + dist.rank, verbose=dist.is_main)
        ranks = f" | {dist.world_size} ranks, {cfg.num_envs} envs each" if dist.active else ""
        console.print(f"[bold]phalanx train[/bold] {sim_summary(env)}{ranks} | run dir {run_dir}", soft_wrap=True)
        progress.enter("building the trainer", slow=True)
        trainer = Trainer(cfg, env, run_dir, console, dist, progress)
    except (torch.OutOfMemoryError, MemoryError, RuntimeError) as error:
        if not isinstance(error, torch.OutOfMemoryError | MemoryError) and "can't allocate memory" not in str(error):
            raise
        reason = str(error).splitlines()[0]
        raise ConfigError(f"{cfg.num_envs} envs do not fit on {device} ({reason})", "num_envs") from None
    if state is not None:
        trainer.load_state_dict(state)
        dist.broadcast_module(trainer.policy)
        console.print(f"resumed from {resume} at iteration {trainer.iteration}")
    dist.barrier(device)  # every rank is ready: only now does the run directory change
    if run is not None:
        run.begin(trainer.iteration, dataclasses.asdict(cfg))
    return trainer


def _set_low_level_checkpoint(tcfg, checkpoint: str | None) -> None:
    """Gives a hierarchical task its low-level policy's checkpoint; any other task must get none."""
    low = tcfg.actions.low_level
    if low is None:
        if checkpoint is not None:
            raise ConfigError(f"--low-level-checkpoint: task {tcfg.name!r} has no low-level policy")
        return
    if checkpoint is None:
        raise ConfigError(
            f"--low-level-checkpoint: task {tcfg.name!r} commands a frozen {low.task} policy; give its checkpoint "
            f"(`phalanx train {low.task}` writes runs/{low.task}/<time>/checkpoints/model_last.pt)"
        )
    low.checkpoint = checkpoint


def play(args: list[str], console: Console) -> None:
    from phalanx.devices import resolve_device
    from phalanx.envs import make, task_cfg
    from phalanx.rl.checkpoint import load_checkpoint
    from phalanx.rl.play import load_actor, run_episodes
    from phalanx.sim.video import EnvRecorder

    task, flags = _task_and_flags("play", args)
    cfg = tyro.cli(PlayCfg, default=PlayCfg(task=task, checkpoint=""), args=flags, prog=f"phalanx play {task}")
    if not cfg.checkpoint:
        raise ConfigError("--checkpoint: required (a model_*.pt written by phalanx train)")
    check_int("num_envs", cfg.num_envs)
    if cfg.steps is not None:
        check_int("steps", cfg.steps)
    if not 0 <= cfg.video_env < cfg.num_envs:
        raise ConfigError(f"--video-env: must be an env index in [0, {cfg.num_envs - 1}], got {cfg.video_env}")
    if cfg.video is not None:
        _check_video_path(Path(cfg.video))
    state = load_checkpoint(cfg.checkpoint, task)
    tcfg = task_cfg(task)
    tcfg.sim = type(tcfg.sim)(**state["config"]["sim"])
    _set_low_level_checkpoint(tcfg, cfg.low_level_checkpoint or state["config"].get("low_level_checkpoint"))
    env = make(tcfg, num_envs=cfg.num_envs, device=resolve_device(cfg.device), seed=cfg.seed, verbose=False)
    recorder = EnvRecorder(env.sim, env_id=cfg.video_env) if cfg.video else None
    steps = cfg.steps or env.max_episode_length
    episodes = run_episodes(env, load_actor(state, env), steps, recorder)
    console.print(
        f"{len(episodes.returns)} episodes finished in {steps} steps x {env.num_envs} envs "
        f"(max length {env.max_episode_length}): {episodes.summary()}"
    )
    if recorder is not None:
        path = recorder.write(cfg.video, fps=1.0 / env.step_dt)
        console.print(f"video of env {cfg.video_env}: {path} ({len(recorder.frames)} frames)")


def _check_video_path(video: Path) -> None:
    """Refuses, before any env is built, a video path that could not be written after the rollout."""
    if video.suffix.lower() != ".mp4":
        raise ConfigError(f"must name an .mp4 file, got {str(video)!r}", "video")
    if video.is_dir():
        raise ConfigError(f"{video} is a directory", "video")
    if video.parent.exists() and not video.parent.is_dir():
        raise ConfigError(f"{video.parent} is a file, not a directory", "video")
    try:
        probe_writable(video.parent)
    except OSError as error:
        raise ConfigError(f"cannot write into {video.parent} ({error.strerror})", "video") from None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    console = Console(width=max(160, Console().width))
    if not args or args[0] in ("-h", "--help"):
        console.print(__doc__.strip())
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"phalanx: error: unknown command {command!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    configure_warp()
    try:
        if command == "list":
            list_tasks(console)
        elif command == "train":
            return train(rest, console)
        elif command == "play":
            play(rest, console)
        else:
            from phalanx.bench.command import bench

            bench(rest, console)
    except ConfigError as error:
        print(f"phalanx {command}: error: {error.as_flag()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
