"""`phalanx bench throughput | envs | scaling | startup | compare | report`."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import torch
import tyro
from rich.console import Console

from phalanx.core.errors import ConfigError, check_int, check_positive
from phalanx.flags import parse_flags, split_args, task_and_flags

SWEEP = "256,512,1024,2048,4096,8192,16384,32768,65536"


@dataclass
class BenchCfg:
    """phalanx bench throughput|envs: train a task with its defaults and time it."""

    task: str
    """Registered task name."""
    num_envs: str = "4096,16384"
    """Comma-separated env counts (bench envs defaults to 256 ... 65536)."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    iterations: int = 20
    """Timed training iterations per env count (medians are reported)."""
    warmup: int = 3
    """Untimed iterations after the first (graph captures happen here on CUDA)."""
    num_steps_per_env: int | None = None
    """Rollout length; default: the task's training default."""
    train_args: str = ""
    """`phalanx train` flags that change the task or its training, as one string after `=`:
    --train-args="--env.observations.image.rgb.params.width 128"."""
    run_dir: str | None = None
    """Where bench.json, report.md and the plots go; default runs/bench/KIND-TASK-TIME."""
    telemetry: bool = False
    """Sample GPU (NVML) and CPU load in the background into gpu_metrics.csv and cpu_metrics.csv."""
    telemetry_interval_s: float = 0.5
    """Seconds between telemetry samples."""
    profile: int = 0
    """After the timed iterations, run this many more under the torch profiler and write a Chrome
    trace per env count (trace-ENVS.json; open in chrome://tracing or Perfetto)."""


@dataclass
class ScalingCfg:
    """phalanx bench scaling: the same training job under torchrun with several process counts."""

    task: str
    """Registered task name."""
    mode: str = "weak"
    """'strong': num_envs in all, split over the GPUs; 'weak': num_envs on every GPU."""
    gpus: str = "1,2,4"
    """Comma-separated process (GPU) counts; each runs one torchrun --standalone job."""
    num_envs: int = 4096
    """Total envs (strong) or envs per GPU (weak)."""
    device: str | None = None
    """'cpu' runs the processes on the CPU with gloo; default: cuda when a GPU is visible, else cpu."""
    iterations: int = 20
    """Timed training iterations per process count (medians are reported)."""
    warmup: int = 3
    """Untimed iterations after the first."""
    train_args: str = ""
    """More flags for every `phalanx train` job, as one string after `=`:
    --train-args="--capture-update False"."""
    job_timeout_s: float = 900.0
    """Stop a job (torchrun and all its ranks) that runs longer than this and report it."""
    run_dir: str | None = None
    """Where bench.json, report.md, scaling.png and each job's run directory go."""
    telemetry: bool = False
    """Sample GPU (NVML) and CPU load in the background into gpu_metrics.csv and cpu_metrics.csv."""


@dataclass
class StartupCfg:
    """phalanx bench startup: launch to the end of the first training iteration, by phase, with
    cold caches and then warm."""

    task: str
    """Registered task name."""
    num_envs: int | None = None
    """Envs; default: what `phalanx train` uses (the task's default on a GPU, its CPU count on the CPU)."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    runs: str = "cold,warm"
    """Comma-separated, in order: 'cold' empties the caches first, 'warm' uses them as left. A kind
    given more than once ('cold,warm,warm,warm') also gets its median, with the range."""
    cache_dir: str | None = None
    """Where the runs' Warp, inductor, Triton and CUDA caches go (its warp/, inductor/, triton/ and
    cuda/, which a cold run empties); default: a temporary directory, removed at the end."""
    run_dir: str | None = None
    """Where bench.json, report.md and each run's log go; default runs/bench/startup-TASK-TIME."""


@dataclass
class CompareCfg:
    """phalanx bench compare: the task trained by each RL library in turn, same envs and PPO settings."""

    task: str
    """Registered task name."""
    trainers: str = "phalanx,rsl_rl,rl_games,skrl,sb3"
    """Comma-separated trainers (`phalanx train --trainer`), each run in a fresh process."""
    num_envs: int = 4096
    """Envs for every trainer."""
    device: str | None = None
    """'cpu', 'cuda' or 'cuda:K'; default: cuda when a GPU is visible, else cpu."""
    iterations: int = 100
    """Training iterations per trainer."""
    gpus: str = "1"
    """Comma-separated GPU counts: each trainer runs on each, N > 1 as `phalanx train --gpus N`
    (N processes of `num_envs` envs each, cuda:0 to cuda:N-1); Stable-Baselines3 on one only."""
    warmup: int = 3
    """Iterations after the first that the fps medians leave out."""
    metric: str | None = None
    """The metrics.jsonl key whose threshold counts as learned; default: the task's (cartpole
    mean_episode_length, ant and humanoid mean_reward)."""
    threshold: float | None = None
    """Reached when the metric is >= this; default: the task's (cartpole 285 of 300 steps, ant 100, humanoid 50)."""
    train_args: str = ""
    """More `phalanx train` flags for every trainer, as one string after `=`."""
    warm_caches: bool = True
    """First run one iteration of `phalanx train` (not timed) on each GPU count, so that Warp's
    kernel cache and torch's compile caches are warm for every trainer alike; off: the first
    trainer pays them."""
    job_timeout_s: float = 1800.0
    """Stop a trainer's process that runs longer than this and report it."""
    stall_timeout_s: float = 120.0
    """Stop a trainer's process whose metrics.jsonl gets no new row for this long once its first
    row is in (before it, start-up's compiles are bounded by `job_timeout_s` alone) and report it."""
    run_dir: str | None = None
    """Where bench.json, report.md, compare.png and each trainer's run go; bench.json and
    report.md are rewritten after each trainer, so a compare cut short keeps what it measured."""


@dataclass
class LearnCfg:
    """phalanx bench learn: train each task from launch with several seeds, each in a fresh
    process, until it reaches the result its registration declares or its budget runs out."""

    seeds: int = 3
    """Warm runs per task, with seeds 0 .. K-1; a task passes when two thirds of them reach its threshold."""
    gpus: str | None = None
    """Comma-separated CUDA device indices, one job on each at a time; default: every visible GPU."""
    device: str | None = None
    """'cuda' or 'cpu'; default: cuda when a GPU is visible, else cpu."""
    cpu_jobs: int = 1
    """On the CPU: jobs at a time."""
    cold: bool = True
    """First one more run per task (seed 0) with its caches emptied: a fresh machine's start; its
    caches then serve the warm runs. --no-cold: every run uses the caches as they are."""
    budget_s: float | None = None
    """Seconds of wall clock from launch that every job may take; default: each task's own budget."""
    metric: str | None = None
    """The metrics.jsonl key to reach instead of the task's (with one task)."""
    threshold: float | None = None
    """The value to reach instead of the task's (with one task)."""
    direction: str | None = None
    """'>=' or '<=' instead of the task's (with one task)."""
    window: int = 5
    """The metric counts as the moving mean over this many rows that carry it."""
    videos: str = "each"
    """Videos of the trained policies, played after every job is done: 'each' run, each task's
    'first' warm seed, or 'none'."""
    video_s: float = 10.0
    """Seconds of simulated time per video (at most one episode)."""
    train_args: str = ""
    """More `phalanx train` flags for every job, as one string after `=`."""
    cache_dir: str | None = None
    """Where each task's Warp, inductor, Triton and CUDA caches go (CACHE/TASK/...); default: the run
    directory's cache/. A cold run empties its task's."""
    run_dir: str | None = None
    """Where bench.json, report.md, the plots, videos/ and each job's run go; bench.json is
    rewritten after each job, so a suite cut short keeps what it measured."""


@dataclass
class ReportCfg:
    """phalanx bench report: rebuild the report of a run, or compare several runs."""

    run_dirs: tyro.conf.Positional[tuple[str, ...]]
    """Run directories holding bench.json."""
    out: str = "runs/bench/comparison"
    """Where the comparison of several runs goes."""
    docs: str | None = None
    """With `phalanx bench learn` runs: write their table into this markdown file instead (between
    its learning-suite markers, or at its top), e.g. docs/benchmarks.md."""


def _counts(text: str, flag: str) -> list[int]:
    """The comma-separated positive integers of `--FLAG` (env or GPU counts)."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) <= 0:
        raise ConfigError(f"--{flag}: expected comma-separated positive integers, got {text!r}")
    return counts


def _save(kind: str, task: str, args: list[str], device: str, cfg, results: list, telemetry, run_dir: Path) -> None:
    """Writes bench.json (figures, machine, versions, commit, command), report.md and the plots."""
    from phalanx.bench.machine import machine_info
    from phalanx.bench.report import write_run

    bench = {
        "kind": kind,
        "task": task,
        "command": " ".join(["phalanx", "bench", kind, *args]),
        "date": date.today().isoformat(),
        "device": device,
        "machine": machine_info(),
        "config": dataclasses.asdict(cfg),
        "results": results,
        "telemetry": telemetry.summary() if telemetry is not None else None,
    }
    write_run(run_dir, bench)


def run_bench(kind: str, args: list[str], console: Console) -> None:
    from phalanx.bench.telemetry import Telemetry
    from phalanx.bench.throughput import measure
    from phalanx.core.devices import resolve_device
    from phalanx.training.config import TrainCfg, check_train_cfg
    from phalanx.training.registry import train_cfg

    task, flags = task_and_flags(f"bench {kind}", args)
    default = BenchCfg(task=task, num_envs=SWEEP if kind == "envs" else BenchCfg.num_envs)
    cfg = parse_flags(BenchCfg, default, flags, f"phalanx bench {kind} {task}")
    training = parse_flags(
        TrainCfg, train_cfg(task), split_args(cfg.train_args, "train_args"), f"--train-args of {task}"
    )
    check_train_cfg(training)
    counts = _counts(cfg.num_envs, "num-envs")
    check_int("iterations", cfg.iterations)
    if cfg.num_steps_per_env is not None:
        check_int("num_steps_per_env", cfg.num_steps_per_env)
    check_int("profile", cfg.profile, minimum=0)
    device = resolve_device(cfg.device)
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir = Path(cfg.run_dir or Path("runs") / "bench" / f"{kind}-{task}-{stamp}")
    telemetry = Telemetry(run_dir, cfg.telemetry_interval_s) if cfg.telemetry else None
    if telemetry is not None and telemetry.note:
        console.print(f"telemetry: {telemetry.note}")
    results = []
    with telemetry if telemetry is not None else contextlib.nullcontext():
        for n in counts:
            trace = run_dir / f"trace-{n}.json"
            r = measure(training, n, device, cfg.iterations, cfg.warmup, cfg.num_steps_per_env, trace, cfg.profile)
            results.append(r)
            if r["valid"]:
                console.print(
                    f"{task} {n} envs: fps step {r['fps_step']:,.0f}, step+inference {r['fps_step_inference']:,.0f}, "
                    f"total {r['fps_total']:,.0f}; step / physics limit {100 * r['ratio_step_to_limit']:.0f} %"
                )
            else:
                console.print(f"{task} {n} envs: invalid: {r['reason']}")
    _save(kind, task, args, str(device), cfg, results, telemetry, run_dir)
    console.print(f"wrote {run_dir / 'bench.json'} and {run_dir / 'report.md'}")


def run_scaling(args: list[str], console: Console) -> None:
    from phalanx.bench import scaling
    from phalanx.bench.telemetry import Telemetry
    from phalanx.core.devices import resolve_device

    task, flags = task_and_flags("bench scaling", args)
    cfg = parse_flags(ScalingCfg, ScalingCfg(task=task), flags, f"phalanx bench scaling {task}")
    if cfg.mode not in ("strong", "weak"):
        raise ConfigError(f"--mode: got {cfg.mode!r}; allowed: 'strong', 'weak'")
    counts = _counts(cfg.gpus, "gpus")
    check_int("num_envs", cfg.num_envs)
    check_int("iterations", cfg.iterations)
    device = resolve_device(cfg.device)
    if device.type == "cuda" and max(counts) > torch.cuda.device_count():
        raise ConfigError(f"--gpus: asks for {max(counts)} GPUs, this machine has {torch.cuda.device_count()}")
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir = Path(cfg.run_dir or Path("runs") / "bench" / f"scaling-{cfg.mode}-{task}-{stamp}")
    telemetry = Telemetry(run_dir, 0.5) if cfg.telemetry else None
    results = []
    with telemetry if telemetry is not None else contextlib.nullcontext():
        for k in counts:
            r = scaling.run_point(cfg, k, device.type, run_dir)
            results.append(r)
            status = f"fps total {r['fps_total']:,.0f}" if r["valid"] else f"invalid: {r['reason']}"
            console.print(f"{task} {cfg.mode} scaling, {k} GPU(s): {status}")
    scaling.add_efficiency(results)
    _save("scaling", task, args, device.type, cfg, results, telemetry, run_dir)
    console.print(scaling.table(results))
    console.print(f"wrote {run_dir / 'bench.json'} and {run_dir / 'report.md'}")


def run_startup(args: list[str], console: Console) -> None:
    import tempfile

    from phalanx.bench import startup
    from phalanx.core.devices import resolve_device
    from phalanx.training.registry import train_cfg

    task, flags = task_and_flags("bench startup", args)
    cfg = parse_flags(StartupCfg, StartupCfg(task=task), flags, f"phalanx bench startup {task}")
    runs = [part.strip() for part in cfg.runs.split(",") if part.strip()]
    if not runs or any(run not in ("cold", "warm") for run in runs):
        raise ConfigError(f"--runs: expected comma-separated 'cold' and 'warm', got {cfg.runs!r}")
    device = resolve_device(cfg.device)
    defaults = train_cfg(task)  # the env count `phalanx train` would use
    num_envs = cfg.num_envs or (defaults.env.num_envs if device.type == "cuda" else defaults.cpu_num_envs)
    check_int("num_envs", num_envs)
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir = Path(cfg.run_dir or Path("runs") / "bench" / f"startup-{task}-{stamp}")
    run_dir.mkdir(parents=True, exist_ok=True)
    results = []
    with contextlib.ExitStack() as stack:
        cache = Path(cfg.cache_dir) if cfg.cache_dir else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for k, run in enumerate(runs):
            repeat = runs[: k + 1].count(run)
            r = startup.run(task, num_envs, str(device), cache, run == "cold", run_dir, repeat)
            results.append(r)
            status = f"{r['to_first_iteration_s']:.1f} s to the first iteration" if r["valid"] else r["reason"]
            console.print(f"{task} {num_envs} envs, {run} caches: {status}")
    _save("startup", task, args, str(device), cfg, results, None, run_dir)
    console.print(startup.table(results))
    console.print(f"wrote {run_dir / 'bench.json'} and {run_dir / 'report.md'}")


def run_compare(args: list[str], console: Console) -> None:
    from phalanx.bench import trainers
    from phalanx.core.devices import resolve_device
    from phalanx.training.config import MULTI_GPU_TRAINERS, TRAINERS

    task, flags = task_and_flags("bench compare", args)
    cfg = parse_flags(CompareCfg, CompareCfg(task=task), flags, f"phalanx bench compare {task}")
    names = [part.strip() for part in cfg.trainers.split(",") if part.strip()]
    unknown = [name for name in names if name not in TRAINERS]
    if not names or unknown:
        raise ConfigError(f"got {cfg.trainers!r}; allowed: comma-separated {', '.join(TRAINERS)}", "trainers")
    if cfg.metric is None or cfg.threshold is None:
        if task not in trainers.THRESHOLDS:
            raise ConfigError(f"{task} has no default learning threshold: give --metric and --threshold", "metric")
        metric, threshold = trainers.THRESHOLDS[task]
        cfg.metric = cfg.metric or metric
        cfg.threshold = threshold if cfg.threshold is None else cfg.threshold
    for name in ("num_envs", "iterations"):
        check_int(name, getattr(cfg, name))
    for name in ("job_timeout_s", "stall_timeout_s"):
        check_positive(name, getattr(cfg, name), " s")
    counts = _counts(cfg.gpus, "gpus")
    check_int("warmup", cfg.warmup, minimum=0)
    device = resolve_device(cfg.device)
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir = Path(cfg.run_dir or Path("runs") / "bench" / f"compare-{task}-{stamp}")
    if cfg.warm_caches:
        for gpus in counts:
            console.print(f"{task}: one iteration of phalanx train on {gpus} GPU(s) to warm the compile caches")
            trainers.warm_caches(cfg, str(device), run_dir, gpus)
    results = []
    _save("compare", task, args, str(device), cfg, results, None, run_dir)  # then after each trainer
    for gpus in counts:
        for name in names:
            if gpus > 1 and name not in MULTI_GPU_TRAINERS:
                console.print(f"{task} --trainer {name}: trains on one device, left out on {gpus} GPUs")
                continue
            r = trainers.run_trainer(cfg, name, str(device), run_dir, gpus)
            results.append(r)
            status = f"fps total {r['fps_total']:,.0f}" if r["valid"] else f"invalid: {r['reason']}"
            console.print(f"{task} --trainer {name} on {gpus} GPU(s): {status}")
            _save("compare", task, args, str(device), cfg, results, None, run_dir)
    console.print(trainers.table(results))
    console.print(f"wrote {run_dir / 'bench.json'} and {run_dir / 'report.md'}")


def run_report(args: list[str], console: Console) -> None:
    from phalanx.bench.report import compare, load, render

    cfg = tyro.cli(ReportCfg, args=args, prog="phalanx bench report")
    dirs = [Path(d) for d in cfg.run_dirs]
    if not dirs:
        raise ConfigError("bench report: give at least one run directory")
    if cfg.docs is not None:
        from phalanx.bench.learn_report import RUN_LABELS, docs_table, write_docs_table

        docs = Path(cfg.docs)
        benches = [load(d) for d in dirs]
        if any(b["kind"] != "learn" for b in benches) or len(dirs) > len(RUN_LABELS):
            raise ConfigError(f"--docs: takes the run directories of up to {len(RUN_LABELS)} `phalanx bench learn`")
        if not docs.is_file():
            raise ConfigError(f"--docs: no file {docs}")
        links = [Path(os.path.relpath(d.resolve(), docs.resolve().parent)).as_posix() + "/" for d in dirs]
        write_docs_table(docs, docs_table(list(zip(benches, links, strict=True))))
        console.print(f"wrote the learning suite's table into {docs}")
        return
    if len(dirs) == 1:
        render(dirs[0])
        console.print(f"rebuilt {dirs[0] / 'report.md'}")
    else:
        console.print(f"wrote {compare(dirs, Path(cfg.out))}")


BENCH_USAGE = """usage: phalanx bench KIND ...

  throughput TASK   training throughput at a few env counts (fps_step, fps_step_inference, fps_total,
                    the time per phase, the start-up split, the ratio to the raw physics limit)
  envs TASK         the same over an env-count sweep (256 ... 65536)
  scaling TASK      the same training job under torchrun with several process counts (weak or strong)
  startup TASK      launch -> end of the first iteration by phase (import, model build, Warp modules
                    compiled or cached, torch.compile and graph captures), cold caches and warm
  compare TASK      the task trained by each RL library (--trainers phalanx,rsl_rl,rl_games,skrl,sb3):
                    fps, start-up, time from launch to the learning threshold, GPU memory;
                    --gpus 1,2: each also on 2 GPUs, with the speed-up
  learn [TASK ...|all]
                    each task trained from launch with several seeds (--seeds 3), one job per GPU
                    (--gpus 0,1,2,3), until it reaches the result it declares or its budget: time
                    to the threshold, start-up, fps, final metric, cold and warm caches, videos
  report DIR ...    rebuild a run's report, or compare several runs

`phalanx bench KIND TASK --help` lists the flags of each."""


def bench(args: list[str], console: Console) -> None:
    kinds = ("throughput", "envs", "scaling", "startup", "compare", "learn", "report")
    if args and args[0] in ("-h", "--help"):
        print(BENCH_USAGE)
        return
    if not args or args[0] not in kinds:
        got = repr(args[0]) if args else "nothing"
        raise ConfigError(f"bench: expected one of {', '.join(kinds)}, got {got}")
    if args[0] == "report":
        run_report(args[1:], console)
    elif args[0] == "scaling":
        run_scaling(args[1:], console)
    elif args[0] == "startup":
        run_startup(args[1:], console)
    elif args[0] == "compare":
        run_compare(args[1:], console)
    elif args[0] == "learn":
        from phalanx.bench.learn_command import run_learn

        run_learn(args[1:], console)
    else:
        run_bench(args[0], args[1:], console)
