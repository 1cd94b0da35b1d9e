"""`phalanx bench learn [TASK ...|all] [flags]`: checks every flag and task before any job
starts, runs the suite (`phalanx.bench.learn`), plays the videos, writes bench.json, report.md
and the plots. Exits 0 when every task passes, 1 when one does not, 128 + the signal that stopped it."""

from __future__ import annotations

import dataclasses
import json
import shlex
import signal
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from phalanx.bench.options import LearnCfg
from phalanx.core.errors import ConfigError, check_int, check_positive
from phalanx.flags import parse_flags, split_args
from phalanx.training.registry import DIRECTIONS, LearningResult

if TYPE_CHECKING:
    from phalanx.bench.learn import Prerequisite

VIDEOS = ("each", "first", "none")


def split_tasks(args: list[str]) -> tuple[list[str], list[str]]:
    """The leading task names (or "all") and the flags after them."""
    count = next((i for i, arg in enumerate(args) if arg.startswith("-")), len(args))
    return args[:count], args[count:]


def task_results(names: list[str], cfg: LearnCfg) -> dict[str, LearningResult]:
    """Each task's result as declared, with the flags' overrides; refuses unknown tasks, tasks
    without a result, and metrics a task does not log."""
    from phalanx.bench.learn import check_result
    from phalanx.training.registry import env_cfg, registered_tasks, task_spec

    if names == ["all"]:
        names = [name for name, spec in registered_tasks().items() if spec.result is not None]
    if not names:
        tasks = ", ".join(registered_tasks())
        raise ConfigError(f"bench learn: name the tasks (or all) before the flags; registered tasks: {tasks}")
    one_task = {k: getattr(cfg, k) for k in ("metric", "threshold", "direction") if getattr(cfg, k) is not None}
    if one_task and len(names) > 1:
        raise ConfigError(f"--{next(iter(one_task))}: overrides one task's result, got {len(names)} tasks")
    overrides = one_task | ({} if cfg.budget_s is None else {"budget_s": cfg.budget_s})
    results = {}
    for name in dict.fromkeys(names):
        declared = task_spec(name).result  # an unknown name raises, listing the registered ones
        if declared is not None:
            result = dataclasses.replace(declared, **overrides)
        elif {"metric", "threshold", "budget_s"} <= set(overrides):
            result = LearningResult(**overrides)
        else:
            raise ConfigError(
                f"task {name!r} declares no result (phalanx.register(..., result=LearningResult(...))): "
                "give --metric, --threshold and --budget-s"
            )
        result.check(f"bench learn {name}")
        check_result(name, result, env_cfg(name), "metric" if cfg.metric else None)
        results[name] = result
    return results


def prerequisite_tasks(results: dict[str, LearningResult]) -> dict[str, list[Prerequisite]]:
    """task -> the tasks whose trained policies it needs: the one its actions command (anymal-nav's
    walker) and the teacher its result names; each must be in the suite."""
    from phalanx.bench.learn import Prerequisite
    from phalanx.training.registry import env_cfg

    found: dict[str, list[Prerequisite]] = {}
    for task, result in results.items():
        low = env_cfg(task).actions.low_level
        needs = [] if low is None else [Prerequisite(low.task, "--env.actions.low-level.checkpoint", "trains over")]
        needs += [] if result.teacher is None else [Prerequisite(result.teacher, "--teacher", "learns from")]
        for need in needs:
            if need.task not in results:
                raise ConfigError(
                    f"bench learn: {task} {need.relation} a trained {need.task} policy: add {need.task} to the "
                    "tasks (its run with the same seed provides it)"
                )
        if needs:
            found[task] = needs
    return found


def check_flags(cfg: LearnCfg) -> None:
    """Checks the flags that need no task."""
    check_int("seeds", cfg.seeds)
    check_int("first_seed", cfg.first_seed, minimum=0)
    check_int("window", cfg.window)
    check_int("cpu_jobs", cfg.cpu_jobs)
    check_positive("video_s", cfg.video_s, " seconds")
    if cfg.budget_s is not None:
        check_positive("budget_s", cfg.budget_s, " seconds")
    if cfg.direction is not None and cfg.direction not in DIRECTIONS:
        raise ConfigError(f"got {cfg.direction!r}; allowed: '>=', '<='", "direction")
    if cfg.videos not in VIDEOS:
        raise ConfigError(f"got {cfg.videos!r}; allowed: {', '.join(VIDEOS)}", "videos")
    if cfg.videos != "none":  # found before the suite, not after hours of training
        from phalanx.sim.video import check_video_writer

        check_video_writer("videos")


def checked_algos(cfg: LearnCfg, tasks: list[str]) -> tuple[str, ...]:
    """`--algos` split and checked: known algorithms, each once, and each one every task trains
    with (an off-policy learner on a pixel task is refused, naming the task)."""
    from phalanx.rl.cfg import ALGORITHMS
    from phalanx.training.registry import train_cfg

    algos = tuple(part.strip() for part in cfg.algos.split(",") if part.strip())
    if not algos or len(set(algos)) != len(algos) or any(a not in ALGORITHMS for a in algos):
        raise ConfigError(
            f"got {cfg.algos!r}; allowed: distinct names of {', '.join(ALGORITHMS)}, comma-separated", "algos"
        )
    for task in tasks:
        images = train_cfg(task).policy.image_group
        if images is not None and algos != ("ppo",):
            raise ConfigError(f"task {task!r} learns from images ({images!r}), which only ppo does", "algos")
    return algos


def checked_train_args(cfg: LearnCfg, tasks: list[str], algos: tuple[str, ...]) -> list[str]:
    """`--train-args` split, and parsed and checked for every task and algorithm (its `--algo.*`
    flags must fit each algorithm's settings)."""
    from phalanx.training.cfg import TrainCfg, check_train_cfg
    from phalanx.training.registry import algo_cfg, train_cfg

    train_args = split_args(cfg.train_args, "train_args")
    for task in tasks:
        for algo in algos:
            defaults = train_cfg(task)
            if algo != "ppo":
                defaults.algo = algo_cfg(task, algo)
            check_train_cfg(parse_flags(TrainCfg, defaults, train_args, f"--train-args of {task} --algo {algo}"))
    return train_args


def slots_for(cfg: LearnCfg, gpu_uuids: list[str]) -> tuple[str, list]:
    """The device type and the slots the jobs run in (`gpu_uuids`: the visible GPUs', by index)."""
    from phalanx.bench.learn import cpu_slots, gpu_slots
    from phalanx.core.devices import resolve_device

    device = resolve_device(cfg.device)
    if device.type == "cpu":
        if cfg.gpus is not None:
            raise ConfigError("--gpus: the jobs run on the CPU here (--device cpu or no GPU visible); use --cpu-jobs")
        return "cpu", cpu_slots(cfg.cpu_jobs)
    count = len(gpu_uuids)
    text = cfg.gpus if cfg.gpus is not None else ",".join(map(str, range(count)))
    try:
        indices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        indices = []
    if not indices or len(set(indices)) != len(indices) or min(indices) < 0 or max(indices) >= count:
        raise ConfigError(f"--gpus: expected distinct CUDA device indices in 0..{count - 1}, got {text!r}")
    return "cuda", gpu_slots(indices, gpu_uuids)


def run_learn(args: list[str], console: Console) -> None:
    from phalanx.bench.learn import Suite, plan, video_steps
    from phalanx.bench.learn_report import verdict_table, verdicts
    from phalanx.bench.machine import machine_info
    from phalanx.bench.report import write_run
    from phalanx.core.files import write_text_atomic
    from phalanx.training.registry import env_cfg

    names, flags = split_tasks(args)
    if names == [] and flags[:1] in (["-h"], ["--help"]):
        print("usage: phalanx bench learn [TASK ...|all] [flags]\n\n`phalanx bench learn all --help` lists the flags.")
        return
    cfg = parse_flags(LearnCfg, LearnCfg(), flags, "phalanx bench learn [TASK ...|all]")
    check_flags(cfg)
    results = task_results(names, cfg)
    tasks = list(results)
    prerequisites = prerequisite_tasks(results)
    algos = checked_algos(cfg, tasks)
    train_args = checked_train_args(cfg, tasks, algos)
    machine = machine_info()
    device, slots = slots_for(cfg, machine["gpu_uuids"])
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir = Path(cfg.run_dir or Path("runs") / "bench" / f"learn-{stamp}")
    if (run_dir / "jobs").exists():
        raise ConfigError(f"{run_dir} holds an earlier bench learn; give a new directory", "run_dir")
    cache_root = Path(cfg.cache_dir) if cfg.cache_dir else run_dir / "cache"
    specs = plan(results, list(range(cfg.first_seed, cfg.first_seed + cfg.seeds)), cfg.cold, algos)
    steps = {task: video_steps(env_cfg(task), cfg.video_s) for task in tasks}
    suite = Suite(specs, slots, run_dir, cache_root, train_args, cfg.window, prerequisites, steps)
    bench: dict[str, Any] = {
        "kind": "learn",
        "task": " ".join(tasks),
        "command": shlex.join(["phalanx", "bench", "learn", *args]),
        "date": date.today().isoformat(),
        "device": device,
        "machine": machine,
        "config": dataclasses.asdict(cfg),
        "results": [],
    }
    run_dir.mkdir(parents=True, exist_ok=True)

    def save(_: Suite | None = None) -> None:
        bench["results"] = suite.results(specs)
        write_text_atomic(run_dir / "bench.json", json.dumps(bench, indent=1) + "\n")

    stopped_by: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if not stopped_by:
            console.print(f"{signal.Signals(signum).name}: stopping the running jobs (each saves a checkpoint)")
            stopped_by.append(signum)
            suite.stop_all()

    console.print(f"bench learn: {len(specs)} jobs of {len(tasks)} tasks on {len(slots)} {device} slots; {run_dir}")
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        save()
        suite.run(on_change=save)
    except BaseException:
        suite.abort()  # no job trains on after the bench is gone
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    bench["results"] = suite.results(specs)
    if cfg.videos != "none" and not stopped_by:
        played = suite.play_videos(cfg.videos, run_dir / "videos")
        for spec, row in zip(specs, bench["results"], strict=True):
            row.update(played.get(spec, {"video": None}))
    write_run(run_dir, bench)
    console.print(verdict_table(bench["results"]))
    console.print(f"wrote {run_dir / 'bench.json'} and {run_dir / 'report.md'}")
    if stopped_by:
        raise SystemExit(128 + stopped_by[0])
    if not all(v["verdict"] == "pass" for v in verdicts(bench["results"]).values()):
        raise SystemExit(1)
