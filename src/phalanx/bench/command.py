"""`phalanx bench throughput | envs | scaling | startup | compare | report`."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import date, datetime
from pathlib import Path

import torch
from rich.console import Console

from phalanx.bench.options import BenchCfg, CompareCfg, ReportCfg, ScalingCfg, StartupCfg
from phalanx.core.errors import ConfigError, check_int, check_positive
from phalanx.flags import parse_flags, split_args, task_and_flags

SWEEP = "256,512,1024,2048,4096,8192,16384,32768,65536"


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
    from phalanx.training.cfg import TrainCfg, check_train_cfg
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
    num_envs = cfg.num_envs or defaults.env.default_num_envs(device)
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
    from phalanx.training.cfg import MULTI_GPU_TRAINERS, TRAINERS

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
    from phalanx.bench.report import compare, render

    cfg = parse_flags(ReportCfg, None, args, "phalanx bench report")
    dirs = [Path(d) for d in cfg.run_dirs]
    if not dirs:
        raise ConfigError("bench report: give at least one run directory")
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
  docs [PAGE ...]   rebuild the docs pages' tables from the raw results they name (default: the
                    pages under docs/); --check: exit 1 where one differs

`phalanx bench KIND TASK --help` lists the flags of each."""


KINDS = ("throughput", "envs", "scaling", "startup", "compare", "learn", "report", "docs")


def bench(args: list[str], console: Console) -> int:
    """Runs `phalanx bench KIND ...`; its exit status."""
    if args and args[0] in ("-h", "--help"):
        print(BENCH_USAGE)
        return 0
    if not args or args[0] not in KINDS:
        got = repr(args[0]) if args else "nothing"
        raise ConfigError(f"bench: expected one of {', '.join(KINDS)}, got {got}")
    if args[0] == "docs":
        from phalanx.bench.docs_page import run_docs

        return run_docs(args[1:], console)
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
    return 0
