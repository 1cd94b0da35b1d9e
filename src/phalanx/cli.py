"""The `phalanx` command line: list, train, play, view, export, bench; `USAGE` is its `--help`.

User errors (unknown task, bad flag values, missing or foreign checkpoints) print one line and
exit with status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from rich.console import Console
from rich.table import Table

from phalanx.core.console import wide_console
from phalanx.core.errors import ConfigError, check_int
from phalanx.core.files import probe_writable
from phalanx.core.stops import Stopped, forget_stop_in_exec, raise_swallowed_stop, stop_with_parent, stops_raised
from phalanx.flags import parse_flags, task_and_flags

if TYPE_CHECKING:
    from phalanx.envs.task_env import TaskEnv
    from phalanx.training.cfg import TrainCfg
    from phalanx.training.play import Episodes, Played

COMMANDS = ("list", "train", "play", "view", "export", "bench")
USAGE = """The `phalanx` command line: list, train, play, view, export, bench.

    phalanx list
    phalanx train TASK [--num-envs N] [--device D] [--max-iterations K] [--max-time-s S] [--seed S] [--gpus N]
                       [--run-dir DIR] [--resume CKPT|RUN_DIR|last] [--trainer phalanx|rsl_rl|rl_games|skrl|sb3]
                       [--logger tensorboard|wandb|none] [--algo.* ...] [--policy.* ...] [--env.* ...]
                       [--config RUN/config.json|FILE.yaml]   (a run's settings again, or a file's changes)
                       [--viewer [--viewer-port 8080]]   (the training live on a web page)
    phalanx play TASK --checkpoint P|RUN_DIR|last [--num-envs N] [--steps S] [--video FILE.mp4] [--video-env K]
                      [--logger tensorboard|wandb|none]
    phalanx play TASK --policy zero|random [...]      (a look at a task before training)
    phalanx view TASK --checkpoint P|RUN_DIR|last | --policy zero|random [--num-envs N] [--port 8080]
                      (the envs live on a web page)
    phalanx export TASK --checkpoint P|RUN_DIR|last [--format onnx|torchscript] [--out DIR]
    phalanx bench throughput|envs|scaling|startup|compare|learn|report|docs ...
                      (`phalanx bench --help` says what each measures)

`--module my_task.py` (any command) loads a task file that calls `phalanx.register`, unpackaged.
`phalanx train TASK --help` lists the training flags, `--help-env` also the task's env flags:
`--env.*` sets any field of the task's config, e.g. `phalanx train cartpole --env.episode-length-s 2
--env.rewards.alive.weight 2`.

User errors (unknown task, bad flag values, missing or foreign checkpoints) print one line and
exit with status 2; anything else is a bug and keeps its traceback.
"""
"""What `phalanx` and `phalanx --help` print."""


@dataclass
class PlayCfg:
    """phalanx play: run a trained policy deterministically, report returns, optionally record one env.
    It reports the means of the episodes that finished and, apart, of those still running at the
    end (their return, length and metrics so far): with `--steps` shorter than an episode, those
    that finished may be only the early failures."""

    task: str
    """The task the checkpoint was trained on."""
    checkpoint: str
    """A checkpoint written by `phalanx train` (RUN/checkpoints/model_*.pt), a run directory (its
    model_last.pt), or 'last' (the newest model_last.pt under runs/TASK/)."""
    num_envs: int = 16
    """Parallel envs to evaluate."""
    steps: int | None = None
    """Env steps to run; default: one full episode."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    seed: int = 0
    """Seeds the env's initial states."""
    video: str | None = None
    """Write an mp4 of one env here (`--video-env`); a policy that sees images has them shown beside the scene."""
    video_env: int = 0
    """The env the video follows (on a terrain, env K of N walks on column K * columns // N)."""
    low_level_checkpoint: str | None = None
    """Hierarchical tasks (anymal-nav): the low-level policy's checkpoint; default: the one the
    run was trained with."""
    logger: str | None = None
    """Where the video also goes: the dashboard of the checkpoint's run directory (tensorboard,
    wandb) or none; default: the one the run trained with."""
    policy: str | None = None
    """'zero' or 'random' (uniform in [-1, 1]) actions in place of a trained policy: a look at a
    registered task before training, without --checkpoint."""
    out: str | None = None
    """Write the episodes' means here as JSON (those still running under "running"), with the
    command, date, machine and commit (a bench.json: `phalanx bench docs` builds the docs' play
    tables from it)."""


@dataclass
class ExportCfg:
    """phalanx export: the checkpoint's deterministic policy (observation normalization inside) as
    ONNX or TorchScript, with a JSON sidecar: observation terms in order with scale/clip, action
    scale/offset/clip, default joint positions, joint and actuator names, control dt."""

    task: str
    """The task the checkpoint was trained on."""
    checkpoint: str
    """A checkpoint written by `phalanx train` (RUN/checkpoints/model_*.pt), a run directory (its
    model_last.pt), or 'last' (the newest model_last.pt under runs/TASK/)."""
    format: str = "onnx"
    """'onnx' (batch size free; needs `pip install -e '.[export]'`) or 'torchscript' (libtorch)."""
    out: str | None = None
    """Directory for the files; default: exported/ in the checkpoint's run directory."""
    device: str | None = None
    """Where the env that gives the observation layout is built; default: cuda when a GPU is visible, else cpu."""
    low_level_checkpoint: str | None = None
    """Hierarchical tasks (anymal-nav): the low-level policy's checkpoint; default: the one the
    run was trained with. Both levels are exported."""


def list_tasks(args: list[str], console: Console) -> None:
    """The registered tasks from their configs (no env is built, nothing is compiled)."""
    from phalanx.training.registry import registered_tasks

    if args in (["-h"], ["--help"]):
        print("usage: phalanx list\n\nThe registered tasks: each one's env step, episode, GPU env count,")
        print("declared learning result, registering module and description.")
        return
    if args:
        raise ConfigError(f"takes no arguments, got {' '.join(args)!r}")

    table = Table(title="phalanx tasks", title_justify="left")
    for column in ("task", "env step", "episode", "envs (GPU)", "learns (bench learn)", "registered by", "description"):
        table.add_column(column)
    for name, spec in registered_tasks().items():
        env = spec.env_cfg()
        step = "model dt" if env.sim.dt is None else f"{env.sim.dt * 1e3:g} ms"
        substeps = env.sim.decimation * env.actions.low_level_steps()
        table.add_row(
            name,
            f"{substeps} x {step}",
            f"{env.episode_length_s:g} s",
            str(env.num_envs),
            "-" if spec.result is None else spec.result.describe(),
            spec.module,
            env.description,
        )
    console.print(table)


def _launch_torchrun(task: str, flags: list[str], gpus: str, run_dir: str | None, trainer: str) -> NoReturn:
    """Becomes (exec) a torchrun job (`phalanx.dist.launch`) of N local processes running this same
    command with --distributed: signals then reach torchrun's agent as if the user had started
    it, and it forwards them to every rank. The run directory is chosen here, once, for all ranks."""
    import torch

    if gpus == "all" and torch.cuda.device_count() == 0:
        raise ConfigError("--gpus all: this machine has no GPU; give a number of CPU processes instead")
    count = torch.cuda.device_count() if gpus == "all" else int(gpus) if gpus.isdigit() else 0
    if count <= 0:
        raise ConfigError(
            f"--gpus: got {gpus!r}; allowed: a positive integer or 'all' (this machine has "
            f"{torch.cuda.device_count()} GPUs)"
        )
    if trainer != "phalanx" and count > torch.cuda.device_count():
        raise ConfigError(
            f"got {gpus!r}, but --trainer {trainer} runs one process per CUDA GPU (its process group is "
            f"NCCL) and this machine has {torch.cuda.device_count()}",
            "gpus",
        )
    rest, _ = _take_flag(flags, "--gpus")
    from phalanx.training.run_paths import new_run_dir

    command = [
        sys.executable,
        "-m",
        "phalanx.dist.launch",
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
        command += ["--run-dir", str(new_run_dir(task))]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, command)


def train(args: list[str], console: Console) -> int:
    """phalanx train: checks every flag, then trains (see `phalanx.training.run`). Returns the exit
    status: 0, or 128 + the signal (130 Ctrl-C, 143 SIGTERM) that stopped training after a
    checkpoint, or 1 on lost ranks."""
    from phalanx.envs.stored_cfg import env_cfg_to_data
    from phalanx.training.cfg import TrainCfg, check_train_cfg
    from phalanx.training.registry import term_packages, train_cfg
    from phalanx.training.run import run_training
    from phalanx.training.settings_file import train_cfg_from_file

    if hasattr(signal, "SIGUSR1") and sys.__stderr__ is not None:
        # `kill -USR1 PID` prints every thread's Python stack to stderr; training goes on.
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    task, flags = task_and_flags("train", args)
    flags, config = _config_file(flags)
    defaults = train_cfg(task)
    if config is not None:
        defaults = train_cfg_from_file(config, task, term_packages(), defaults)
    given, flags = flags, _algorithm(flags, defaults)
    registered_env = env_cfg_to_data(defaults.env)
    _train_help(task, defaults, flags)
    cfg = parse_flags(TrainCfg, defaults, flags, f"phalanx train {task}")
    for field in ("num_envs", "cpu_num_envs"):  # one flag sets the env count
        if getattr(cfg.env, field) != registered_env[field]:
            given = getattr(cfg.env, field)
            raise ConfigError(f"got {given}; the env count is set by --num-envs", f"env.{field}")
    check_train_cfg(cfg)  # every check that needs no env: a bad flag fails before anything is built
    if cfg.gpus is not None:
        ranks_flags = given if config is None else ["--config", config, *given]  # the ranks read it too
        _launch_torchrun(task, ranks_flags, cfg.gpus, cfg.run_dir, cfg.trainer)
    status = run_training(cfg, console, registered_env)[0]
    if cfg.distributed:
        from phalanx.dist import end_rank

        end_rank(status)
    return status


def play(args: list[str], console: Console) -> None:
    """phalanx play: the checkpoint's policy in the env it was trained in (the task's play
    variant of it when the task is registered), deterministic actions; or, with --policy, zero
    or random actions in the registered task's env."""
    from phalanx.sim.video import EnvRecorder
    from phalanx.training.play import played, run_episodes
    from phalanx.training.registry import make

    task, flags = task_and_flags("play", args, registered=False)
    cfg = parse_flags(PlayCfg, PlayCfg(task=task, checkpoint=""), flags, f"phalanx play {task}")
    if cfg.policy is not None and cfg.logger is not None:
        raise ConfigError(f"--logger: --policy {cfg.policy} plays without a trained run; give one or the other")
    check_int("num_envs", cfg.num_envs)
    if cfg.steps is not None:
        check_int("steps", cfg.steps)
    if not 0 <= cfg.video_env < cfg.num_envs:
        raise ConfigError(f"--video-env: must be an env index in [0, {cfg.num_envs - 1}], got {cfg.video_env}")
    if cfg.video is not None:
        _check_writable_file(Path(cfg.video), "video", ".mp4")
        from phalanx.sim.video import check_video_writer

        check_video_writer("video")
    if cfg.out is not None:
        _check_writable_file(Path(cfg.out), "out", ".json")
    if cfg.logger is not None:
        from phalanx.training.logger import check_logger

        check_logger(cfg.logger)
        if cfg.video is None:
            raise ConfigError("--logger: it says where the video goes; give --video FILE.mp4 too")
    run = played(task, cfg.checkpoint, cfg.policy, cfg.low_level_checkpoint)
    cfg.checkpoint, state = run.checkpoint, run.state
    env = make(run.env_cfg, num_envs=cfg.num_envs, device=cfg.device, seed=cfg.seed)
    recorder = EnvRecorder(env.sim, env_id=cfg.video_env) if cfg.video else None
    steps = cfg.steps or env.max_episode_length
    act, image_group = run.actor(env, cfg.seed)
    episodes = run_episodes(env, act, steps, recorder, image_group)
    console.print(
        f"{len(episodes.returns)} episodes finished in {steps} steps x {env.num_envs} envs "
        f"(max length {env.max_episode_length}): {episodes.summary()}"
    )
    if cfg.out is not None:
        _write_played(cfg, args, run, env, steps, episodes)
        console.print(f"wrote {cfg.out}")
    if recorder is not None:
        path = recorder.write(cfg.video, fps=1.0 / env.step_dt)
        console.print(f"video of env {cfg.video_env}: {path} ({len(recorder.frames)} frames)")
        if state is not None:
            _log_play_video(cfg, state, recorder.frames, path, 1.0 / env.step_dt, console)


def _log_play_video(cfg: PlayCfg, state: dict, frames: list, video: Path, fps: float, console: Console) -> None:
    """The play video, also in the dashboard of the run that wrote the checkpoint (its run
    directory: RUN/checkpoints/model_*.pt beside RUN/config.json), at the frames it trained."""
    from phalanx.training.logger import log_video

    logger = cfg.logger or state["config"].get("logger", "tensorboard")
    run_dir = Path(cfg.checkpoint).resolve().parent.parent
    if logger == "none":
        return
    if not (run_dir / "config.json").is_file():
        console.print(f"the checkpoint is not in a run directory ({run_dir} has no config.json): video not logged")
        return
    config = {"task": cfg.task, "checkpoint": cfg.checkpoint, "video_env": cfg.video_env}
    where = log_video(run_dir, logger, video, frames, fps, int(state.get("frames", 0)), config)
    console.print(f"video logged as play/video: {where}")


def export(args: list[str], console: Console) -> None:
    """phalanx export: see `ExportCfg`. The task's env is built once (one env, not stepped) for
    the observation layout and the actuators' offsets."""
    from phalanx.envs.stored_cfg import checkpoint_env_cfg
    from phalanx.training.checkpoint import load_checkpoint
    from phalanx.training.export import check_format, export_policy
    from phalanx.training.play import set_low_level_checkpoint
    from phalanx.training.registry import make, term_packages
    from phalanx.training.run_paths import checkpoint_file

    task, flags = task_and_flags("export", args, registered=False)
    cfg = parse_flags(ExportCfg, ExportCfg(task=task, checkpoint=""), flags, f"phalanx export {task}")
    cfg.checkpoint = checkpoint_file(cfg.checkpoint, task)
    check_format(cfg.format)  # before the env is built
    state = load_checkpoint(cfg.checkpoint, task)
    env_cfg = checkpoint_env_cfg(state, f"--checkpoint {cfg.checkpoint}", term_packages())
    set_low_level_checkpoint(env_cfg, task, cfg.low_level_checkpoint)
    out = Path(cfg.out) if cfg.out else Path(cfg.checkpoint).resolve().parent.parent / "exported"
    try:
        probe_writable(out)
    except OSError as error:
        raise ConfigError(f"cannot write into {out} ({error.strerror})", "out") from None
    env = make(env_cfg, num_envs=1, device=cfg.device, seed=0)
    for path in export_policy(state, env, cfg.format, out, cfg.checkpoint):
        console.print(f"wrote {path}")


def _write_played(cfg: PlayCfg, args: list[str], run: Played, env: TaskEnv, steps: int, episodes: Episodes) -> None:
    """`--out`: the episodes' means as a bench.json of kind "play", its command without --out."""
    import json

    from phalanx.bench.machine import result_record
    from phalanx.core.files import write_text_atomic

    if run.state is None:
        policy = f"{run.policy} actions"
    else:
        policy = f"trained, iteration {run.state.get('iteration', '?')}"
    result = {"task": cfg.task, "policy": policy, "num_envs": env.num_envs, "steps": steps, "seed": cfg.seed}
    config = {"checkpoint": cfg.checkpoint or None, "policy": cfg.policy}
    record = result_record(
        "play", cfg.task, ["phalanx", "play", *args], str(env.device), config=config,
        results=[result | episodes.means()],
    )  # fmt: skip
    write_text_atomic(cfg.out, json.dumps(record, indent=1) + "\n")


def _check_writable_file(path: Path, flag: str, suffix: str) -> None:
    """Refuses, before any env is built, a `suffix` file path that could not be written after the rollout."""
    if path.suffix.lower() != suffix:
        article = "an" if suffix == ".mp4" else "a"
        raise ConfigError(f"must name {article} {suffix} file, got {str(path)!r}", flag)
    if path.is_dir():
        raise ConfigError(f"{path} is a directory", flag)
    if path.parent.exists() and not path.parent.is_dir():
        raise ConfigError(f"{path.parent} is a file, not a directory", flag)
    try:
        probe_writable(path.parent)
    except OSError as error:
        raise ConfigError(f"cannot write into {path.parent} ({error.strerror})", flag) from None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    console = wide_console()
    if not args or args[0] in ("-h", "--help"):
        console.print(USAGE.strip())
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"phalanx: error: unknown command {command!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    if command != "list":  # before Warp starts: no banner, no per-module compile lines
        from phalanx.core.warp_cache import configure_warp

        configure_warp(verbose=False)
    # SIGTERM outside training's own handling (start-up, play, bench) stops like Ctrl-C: one line.
    # A stop a library swallowed (see phalanx.core.stops) ends the command once it returns.
    try:
        with stops_raised():
            stop_with_parent()
            status = _run(command, _task_files(rest), console)
            if status == 0:  # not a stop training handled itself (a repeat of its signal may come late)
                raise_swallowed_stop()
            return status
    except ConfigError as error:
        print(f"phalanx {command}: error: {error.as_flag()}", file=sys.stderr)
        return 2
    except BaseException as error:  # Ctrl-C, SIGTERM, or either wrapped by Python (inside a class's creation)
        stop = _stop_within(error)
        if stop is None:
            raise
        forget_stop_in_exec()  # the status below is the one the process ends with
        return _stopped(command, stop)


def _run(command: str, rest: list[str], console: Console) -> int:
    """Runs `command` with its flags; its exit status."""
    if command == "list":
        list_tasks(rest, console)
    elif command == "train":
        return train(rest, console)
    elif command == "play":
        play(rest, console)
    elif command == "view":
        from phalanx.view import view

        view(rest, console)
    elif command == "export":
        export(rest, console)
    else:
        from phalanx.bench.command import bench

        return bench(rest, console)
    return 0


def _stopped(command: str, stop: BaseException) -> int:
    """One line for a stop by SIGINT or SIGTERM outside training's own handling; its exit status."""
    sig = stop.signum if isinstance(stop, Stopped) else signal.SIGINT
    when = " outside the training iterations: no checkpoint was written for it" if command == "train" else ""
    print(f"phalanx {command}: stopped by {signal.Signals(sig).name}{when}", file=sys.stderr)
    return 128 + int(sig)


def _stop_within(error: BaseException) -> BaseException | None:
    """`error` itself where it is a KeyboardInterrupt or `Stopped`, else the one that caused it, if
    one did: Python wraps what a signal raises at some moments (Python 3.11: in a class
    attribute's `__set_name__`)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt | Stopped):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _train_help(task: str, defaults: object, flags: list[str]) -> None:
    """`--help`: the training flags, without the env's (its every term has flags: hundreds of
    lines); `--help-env`: all of them. Prints and exits 0; returns where neither is asked for."""
    from phalanx.training.cfg import TrainCfg

    prog = f"phalanx train {task}"
    if "--help-env" in flags:
        parse_flags(TrainCfg, defaults, ["--help"], prog)
    if "-h" in flags or "--help" in flags:
        description = (
            f"{TrainCfg.__doc__.splitlines()[0]} The task's env flags (--env.*: its observation, reward and "
            f"termination terms, sim, actions, events): `{prog} --help-env`."
        )
        parse_flags(TrainCfg, dataclasses.replace(defaults, env=None), ["--help"], prog, description)


def _algorithm(flags: list[str], defaults: TrainCfg) -> list[str]:
    """`flags` without `--algo NAME`, which sets `defaults.algo` to NAME's settings (the task's
    own where they are of NAME's kind, else NAME's defaults); its `--algo.*` flags follow."""
    from phalanx.rl.cfg import ALGORITHMS
    from phalanx.training.registry import algo_cfg

    rest, found = _take_flag(flags, "--algo")
    if not found:
        return rest
    name = found[-1]
    if name not in ALGORITHMS:
        raise ConfigError(f"got {name!r}; allowed: {', '.join(ALGORITHMS)}", "algo")
    if not isinstance(defaults.algo, ALGORITHMS[name]):
        defaults.algo = algo_cfg(defaults.task, name)
    return rest


def _config_file(flags: list[str]) -> tuple[list[str], str | None]:
    """`flags` without `--config FILE` (or `--config=FILE`), and FILE (None where not given)."""
    rest, found = _take_flag(flags, "--config")
    if len(found) > 1:
        raise ConfigError(f"given {len(found)} times; one config file", "config")
    return rest, found[0] if found else None


def _take_flag(args: list[str], flag: str) -> tuple[list[str], list[str]]:
    """`args` without `flag VALUE` and `flag=VALUE`, and the values in order."""
    rest, values = [], []
    items = iter(args)
    for arg in items:
        if arg == flag:
            values.append(next(items, ""))
        elif arg.startswith(flag + "="):
            values.append(arg.partition("=")[2])
        else:
            rest.append(arg)
    return rest, values


def _task_files(args: list[str]) -> list[str]:
    """`args` without `--module FILE` (or `--module=FILE`), each FILE loaded as a task file."""
    from phalanx.training.task_files import add_task_files

    rest, files = _take_flag(args, "--module")
    if files:
        add_task_files(files)
    return rest


if __name__ == "__main__":
    sys.exit(main())
