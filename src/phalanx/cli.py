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

import dataclasses
import faulthandler
import json
import signal
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import tyro
from rich.console import Console
from rich.table import Table

from phalanx.errors import ConfigError

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


def _positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise ConfigError(f"--{name}: must be a positive integer, got {value}")


def _launch_torchrun(task: str, flags: list[str], gpus: str) -> int:
    """Runs this same command as a torchrun job of N local processes with --distributed."""
    import subprocess

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
    return subprocess.call(command)


def train(args: list[str], console: Console) -> int:
    import torch

    from phalanx.devices import resolve_device
    from phalanx.dist import DistContext, StallWatchdog, init_distributed
    from phalanx.envs import make, task_cfg
    from phalanx.envs.tables import sim_summary
    from phalanx.files import write_text_atomic
    from phalanx.rl.checkpoint import load_checkpoint
    from phalanx.rl.config import default_train_cfg
    from phalanx.rl.trainer import Trainer

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
    if cfg.gpus is not None:
        return _launch_torchrun(task, flags, cfg.gpus)
    if cfg.stall_timeout_s <= 0:
        raise ConfigError(f"--stall-timeout-s: must be positive, got {cfg.stall_timeout_s}")
    dist = DistContext()
    if cfg.distributed:
        # Collectives: a backstop behind the watchdog, and the only guard of the first iteration.
        dist, cfg.device = init_distributed(cfg.device, timeout_s=max(2 * cfg.stall_timeout_s, 120.0))
        if not dist.is_main:
            console = Console(quiet=True)
    for name in ("num-envs", "max-iterations", "num-steps-per-env", "save-interval"):
        _positive(name, getattr(cfg, name.replace("-", "_")))
    device = resolve_device(cfg.device)
    if cfg.num_envs is None:
        cfg.num_envs = tcfg.num_envs if device.type == "cuda" else cfg.cpu_num_envs
        if device.type == "cpu" and cfg.device is None:
            console.print(f"no CUDA GPU visible: training on the CPU with {cfg.num_envs} envs (--device, --num-envs)")
    cfg.device = str(device)
    batch = cfg.num_envs * cfg.num_steps_per_env
    if batch % cfg.algo.num_mini_batches:
        raise ConfigError(
            f"--algo.num-mini-batches: {cfg.algo.num_mini_batches} does not divide num_envs x num_steps_per_env "
            f"= {cfg.num_envs} x {cfg.num_steps_per_env} = {batch}"
        )
    if cfg.resume == "last" and not cfg.run_dir:
        raise ConfigError("--resume last: needs --run-dir (the run whose last checkpoint to continue)")
    run_dir = Path(cfg.run_dir or Path("runs") / task / datetime.now().strftime("%Y-%m-%d_%H-%M-%S"))
    cfg.run_dir = str(run_dir)
    resume = cfg.resume
    if resume == "last":
        last = run_dir / "checkpoints" / "model_last.pt"
        resume = str(last) if last.is_file() else None
    resume_state = load_checkpoint(resume, task) if resume else None  # fail before building the env
    tcfg.sim = cfg.sim
    if cfg.low_level_checkpoint is not None:  # absolute in config.json and checkpoints: play finds it anywhere
        cfg.low_level_checkpoint = str(Path(cfg.low_level_checkpoint).resolve())
    _set_low_level_checkpoint(tcfg, cfg.low_level_checkpoint)
    env = make(tcfg, num_envs=cfg.num_envs, device=device, seed=cfg.seed + dist.rank, verbose=dist.is_main)
    ranks = f" | {dist.world_size} ranks, {cfg.num_envs} envs each" if dist.active else ""
    console.print(f"[bold]phalanx train[/bold] {sim_summary(env)}{ranks} | run dir {run_dir}", soft_wrap=True)
    trainer = Trainer(cfg, env, run_dir, console, dist)
    if dist.is_main:
        write_text_atomic(run_dir / "config.json", json.dumps(dataclasses.asdict(cfg), indent=2) + "\n")
    if resume_state is not None:
        trainer.load_state_dict(resume_state)
        dist.broadcast_module(trainer.policy)
        console.print(f"resumed from {resume} at iteration {trainer.iteration}")
    try:
        # Armed after the first iteration (its T steps and update): compilation is not a stall.
        warmup = cfg.num_steps_per_env + 1
        with StallWatchdog(dist, lambda: trainer.progress, cfg.stall_timeout_s, warmup=warmup):
            trainer.learn()
    except torch.distributed.DistError as error:
        if not dist.active:
            raise
        print(
            f"phalanx train: rank {dist.rank}: lost the other ranks, stopping ({error})".splitlines()[0],
            file=sys.stderr,
        )
        return 1
    finally:
        if torch.distributed.is_initialized():  # one rank too: NCCL warns about a group left open
            trainer.release_graphs()
            torch.distributed.destroy_process_group()
    if trainer.interrupted:
        return 130  # the shell's code for "stopped by Ctrl-C"; the checkpoint is saved
    console.print(f"done: {trainer.iteration} iterations, checkpoint {trainer.checkpoint_path()}")
    return 0


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
    _positive("num-envs", cfg.num_envs)
    _positive("steps", cfg.steps)
    if not 0 <= cfg.video_env < cfg.num_envs:
        raise ConfigError(f"--video-env: must be an env index in [0, {cfg.num_envs - 1}], got {cfg.video_env}")
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
        print(f"phalanx {command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
