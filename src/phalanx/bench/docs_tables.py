"""The docs' benchmark tables, one per kind of `phalanx bench` or tool result, built from raw
bench.json files.

Files of one run (the same command but for its run directory, date, commit and GPUs, e.g. two
repeats) share a label; each row names its run's label, and the notes under the table give each
label's command, date, commit, GPUs and raw results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.bench.learn import run_label
from phalanx.bench.learn_report import from_launch, judged, result_text, verdicts
from phalanx.bench.markdown import markdown_table
from phalanx.bench.table_runs import (
    Figures,
    Rows,
    Run,
    count_cell,
    fps_cell,
    gpu_name,
    grouped,
    invalid_rows,
    note,
    per_env_count,
    runs_of,
    values_cell,
)
from phalanx.bench.tool_tables import (
    classic,
    controller_speed,
    pipeline,
    played,
    qp_speed,
    scaling_model,
    stones,
    students,
    viewer,
)
from phalanx.core.errors import ConfigError


def table(kind: str, sources: list[tuple[dict[str, Any], str]], options: dict[str, str] | None = None) -> str:
    """The markdown table of `kind` from `sources` (bench.json contents, each with the link to its
    raw results), with a note per run under it. `options`: `tasks` (comma-separated) keeps those
    tasks' results only; the others go to the kind's rows (`levels` of a milestones table)."""
    if kind not in TABLES:
        raise ConfigError(f"bench docs: no table of kind {kind!r}; the kinds: {', '.join(TABLES)}")
    kinds, rows, allowed = TABLES[kind]
    options = dict(options or {})
    tasks = options.pop("tasks").split(",") if "tasks" in options else None
    for name in options:
        if name not in allowed:
            takes = ", ".join(["tasks", *allowed])
            raise ConfigError(f"bench docs: a {kind} table takes no option {name!r}; its options: {takes}")
    for name in allowed:
        if name not in options:
            raise ConfigError(f"bench docs: a {kind} table needs `{name}=...` in its marker")
    for bench, link in sources:
        if bench["kind"] not in kinds:
            raise ConfigError(f"bench docs: {link} is a `bench {bench['kind']}` result, not one for a {kind} table")
    if tasks is not None:
        sources = [(_of_tasks(bench, tasks), link) for bench, link in sources]
        sources = [(bench, link) for bench, link in sources if bench["results"]]
        if not sources:
            raise ConfigError(f"bench docs: no result of {', '.join(tasks)} in the {kind} table's sources")
    runs = runs_of(sources)
    columns, body = rows(runs, **options)
    return "\n".join([markdown_table(columns, body), "", *[note(run) for run in runs]])


def _of_tasks(bench: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    """`bench` with the results of `tasks` only."""
    return bench | {"results": [r for r in bench["results"] if r.get("task", bench["task"]) in tasks]}


def _throughput(runs: list[Run]) -> Rows:
    return per_env_count(
        runs,
        [
            ("fps total", lambda rs: fps_cell([r["fps_total"] for r in rs])),
            ("fps step", lambda rs: fps_cell([r["fps_step"] for r in rs])),
            ("fps step+inference", lambda rs: fps_cell([r["fps_step_inference"] for r in rs])),
            ("ms per iteration", lambda rs: values_cell([r["iteration_s"] for r in rs], 1e-3, 1)),
            ("step / physics limit", lambda rs: values_cell([r.get("ratio_step_to_limit") for r in rs], 0.01, 0, " %")),
            ("memory per env", lambda rs: values_cell([r.get("memory_per_env_bytes") for r in rs], 1024, 0, " KiB")),
        ],
    )


def _memory(runs: list[Run]) -> Rows:
    """A row per task and env count: the GPU memory in use, and what each env more cost since the
    run's previous count (the growth cancels one-time loads: Warp's modules, torch, CUDA)."""
    rows = []
    for run in runs:
        previous: dict[str, tuple[int, float]] = {}
        for (task, envs), rs in grouped(run, lambda b, r: (r.get("task", b["task"]), r["num_envs"])).items():
            used = [r.get("memory_bytes") for r in rs]
            growth = "-"
            if task in previous and None not in used:
                count, before = previous[task]
                growth = values_cell([(u - before) / (envs - count) for u in used], 1024, 0, " KiB")
            if None not in used:
                previous[task] = (envs, sum(used) / len(used))
            rows.append(
                [task, gpu_name(run.benches[0]), f"{envs:,}", values_cell(used, 2**30, 2, " GiB"), growth, run.label]
            )
        rows += invalid_rows(
            run, lambda b, r: [r.get("task", b["task"]), gpu_name(b), count_cell(r.get("num_envs"))], 6
        )
    return ["task", "GPU", "envs", "memory in use", "per env more since the previous count", "run"], rows


PHASES = {"physics": "physics", "render": "render", "obs/reward/reset": "obs_reward_reset"}
PHASES |= {"inference": "policy_inference", "update": "ppo_update"}


def _phases(runs: list[Run]) -> Rows:
    """Throughput with the iteration split into its phases (ms)."""

    def phase(key: str) -> Callable[[list[dict[str, Any]]], str]:
        return lambda rs: values_cell([r["phases_s"].get(key, 0.0) for r in rs], 1e-3, 1)

    figures: Figures = [("fps total", lambda rs: fps_cell([r["fps_total"] for r in rs]))]
    figures += [("ms per iteration", lambda rs: values_cell([r["iteration_s"] for r in rs], 1e-3, 1))]
    figures += [(name, phase(key)) for name, key in PHASES.items()]
    figures += [
        ("memory per env", lambda rs: values_cell([r.get("memory_per_env_bytes") for r in rs], 1024, 0, " KiB"))
    ]
    return per_env_count(runs, figures)


STARTUP_PHASES = {
    "import": ("import",),
    "model build": ("model_build",),
    "first reset and step": ("first_reset", "first_env_step"),
    "first iteration": ("first_iteration",),
}


def _startup(runs: list[Run]) -> Rows:
    columns = ["task", "GPU", "caches", "envs", "launch to first iteration (s)", *STARTUP_PHASES, "run"]
    rows = []
    for run in runs:
        gpu = gpu_name(run.benches[0])
        for (task, caches), rs in grouped(run, lambda b, r: (r.get("task", b["task"]), r["run"])).items():
            phases = [[sum(r["phases_s"].get(p, 0.0) for p in ps) for r in rs] for ps in STARTUP_PHASES.values()]
            wall = values_cell([r["process_wall_s"] for r in rs], 1, 1)
            rows.append(
                [task, gpu, caches, f"{rs[0]['num_envs']:,}", wall, *[values_cell(p, 1, 1) for p in phases], run.label]
            )
        rows += invalid_rows(run, _startup_lead, len(columns))
    return columns, rows


def _startup_lead(bench: dict[str, Any], r: dict[str, Any]) -> list[str]:
    return [r.get("task", bench["task"]), gpu_name(bench), str(r.get("run")), count_cell(r.get("num_envs"))]


def _compare(runs: list[Run]) -> Rows:
    columns = ["task", "library", "GPUs", "GPU", "fps total", "start-up (s)", "to the threshold from launch (s)"]
    columns += ["threshold", "GPU memory", "run"]
    rows = []
    for run in runs:
        key = lambda b, r: (b["task"], r["trainer"], r.get("gpus", 1))  # noqa: E731
        for (task, trainer, gpus), rs in grouped(run, key).items():
            reached = [r["to_threshold_from_launch_s"] for r in rs]
            rows.append(
                [task, trainer, str(gpus), gpu_name(run.benches[0]), fps_cell([r["fps_total"] for r in rs])]
                + [values_cell([r["startup_s"] for r in rs], 1, 1)]
                + [", ".join("no" if s is None else f"{s:.1f}" for s in reached)]
                + [f"{rs[0]['metric']} {rs[0]['threshold']:g}"]
                + [values_cell([r.get("gpu_memory_mib") for r in rs], 1, 0, " MiB")]
                + [run.label]
            )
        rows += invalid_rows(
            run, lambda b, r: [b["task"], r["trainer"], str(r.get("gpus", 1)), gpu_name(b)], len(columns)
        )
    return columns, rows


def _scaling(runs: list[Run]) -> Rows:
    columns = ["task", "mode", "GPUs", "GPU", "envs per GPU", "fps total", "speed-up", "efficiency", "run"]
    rows = []
    for run in runs:
        key = lambda b, r: (b["task"], b["config"]["mode"], r["gpus"], r["envs_per_rank"])  # noqa: E731
        for (task, mode, gpus, envs), rs in grouped(run, key).items():
            rows.append(
                [
                    task,
                    mode,
                    str(gpus),
                    gpu_name(run.benches[0]),
                    f"{envs:,}",
                    fps_cell([r["fps_total"] for r in rs]),
                ]
                + [
                    values_cell([r["speedup"] for r in rs], unit="x"),
                    values_cell([r["efficiency"] for r in rs], 0.01, 0, " %"),
                ]
                + [run.label]
            )
        rows += invalid_rows(run, _scaling_lead, len(columns))
    return columns, rows


def _scaling_lead(bench: dict[str, Any], r: dict[str, Any]) -> list[str]:
    mode, envs = bench["config"].get("mode", "-"), count_cell(r.get("envs_per_rank"))
    return [bench["task"], mode, str(r.get("gpus")), gpu_name(bench), envs]


def _learn(runs: list[Run]) -> Rows:
    """Per task its result, verdict and seeds reached, each warm run's seconds from launch to the
    threshold (start-up apart), the runs on cold caches, fps_total, and its runs. A task is judged
    on its warm runs, or on its cold ones where it has none."""
    entries: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                if r["status"] != "not run":
                    entries.setdefault(run_label(r), []).append((run.label, r))
    rows = []
    for task, labelled in entries.items():
        results = [r for _, r in labelled]
        seeds = judged(results)
        cold = [r for r in results if r["caches"] == "cold"]
        v = verdicts(results)[task]
        fps = [r["fps_total"] for r in seeds if r.get("fps_total")]
        warm = [r for r in seeds if r["caches"] == "warm"]
        rows.append(
            [task, result_text((seeds or results)[0]), v["verdict"]]
            + [f"{v['reached']}/{v['seeds']}" + ("" if warm else " (cold)"), from_launch(warm), from_launch(cold)]
            + [f"{sum(fps) / len(fps) / 1e6:.2f} M" if fps else "-"]
            + [", ".join(sorted({label for label, _ in labelled}))]
        )
    columns = ["task", "result (as run)", "verdict", "seeds reached", "warm: s from launch (start-up)", "cold caches"]
    return columns + ["fps total", "run"], rows


def _milestones(runs: list[Run], levels: str) -> Rows:
    """Per learning-suite run (task, seed, caches), the seconds from launch at which its curve (the
    metric's moving mean, as the suite judges it, thinned to at most `learn_job.CURVE_POINTS` points) first
    reached each of `levels` (comma-separated, in the metric's units and direction); "-" where it
    never did. At the task's threshold, the time the suite recorded (thinning may drop that point).
    A run stops at its threshold: levels past it are not reached."""
    try:
        marks = [float(level) for level in levels.split(",")]
    except ValueError:
        raise ConfigError(f"bench docs: a milestones table's levels are numbers, got levels={levels!r}") from None
    columns = ["task", "metric", "seed", "caches", *[f"{mark:g}: s from launch" for mark in marks], "start-up (s)"]
    rows = []
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                if r["status"] == "not run" or not r.get("curve"):
                    continue
                times = [
                    r["reached_s"]
                    if r.get("reached") and mark == r["threshold"]
                    else _first_at(r["curve"], mark, r["direction"])
                    for mark in marks
                ]
                rows.append(
                    [r["task"], f"{r['metric']} ({r['direction']})", str(r["seed"]), r["caches"]]
                    + [values_cell([t], digits=0) for t in times]
                    + [values_cell([r.get("startup_s")], digits=0), run.label]
                )
    return columns + ["run"], rows


def _first_at(curve: list[list[float]], mark: float, direction: str) -> float | None:
    """The first time of `curve` ([seconds, value] points) whose value reaches `mark`."""
    for t, value in curve:
        if value is not None and (value >= mark if direction == ">=" else value <= mark):
            return t
    return None


def _physics(runs: list[Run]) -> Rows:
    """The env step (random actions, no policy) against MuJoCo Warp stepping the same model alone,
    M env steps/s (`tools/env_fps.py`): the physics limit (zero controls) and with random controls
    (a physics step rate over the decimation), the env by default and in three slower modes."""

    def rate(key: str, per_physics_step: bool = False) -> Callable[[list[dict[str, Any]]], str]:
        return lambda rs: values_cell([r[key] / (r["decimation"] if per_physics_step else 1) for r in rs], 1e6)

    return per_env_count(
        runs,
        [
            ("physics limit", rate("raw_physics_steps_per_s", True)),
            ("**env**", lambda rs: f"**{rate('env_steps_per_s')(rs)}**"),
            ("**env / limit**", lambda rs: f"**{values_cell([r['ratio_to_limit'] for r in rs], 0.01, 0, ' %')}**"),
            ("physics, random ctrl", rate("raw_physics_steps_per_s_random_ctrl", True)),
            (
                "env / random-ctrl physics",
                lambda rs: values_cell([r["ratio_to_random_ctrl_physics"] for r in rs], 0.01, 0, " %"),
            ),
            ("captured, not compiled", rate("env_steps_per_s_captured_uncompiled")),
            ("compiled, not captured", rate("env_steps_per_s_compiled_uncaptured")),
            ("eager torch", rate("env_steps_per_s_eager")),
            ("start-up s", lambda rs: values_cell([r["startup_s"] for r in rs], digits=0)),
            ("buffers", lambda rs: f"{rs[0]['nconmax_per_env']} / {rs[0]['njmax_per_env']}"),
        ],
    )


TABLES: dict[str, tuple[tuple[str, ...], Callable[..., Rows], tuple[str, ...]]] = {
    "learn": (("learn",), _learn, ()),
    "milestones": (("learn",), _milestones, ("levels",)),
    "throughput": (("throughput", "envs"), _throughput, ()),
    "phases": (("throughput", "envs"), _phases, ()),
    "memory": (("envs",), _memory, ()),
    "startup": (("startup",), _startup, ()),
    "compare": (("compare",), _compare, ()),
    "scaling": (("scaling",), _scaling, ()),
    "physics": (("physics",), _physics, ()),
    "stones": (("stones",), stones, ()),
    "play": (("play",), played, ()),
    "qp": (("qp",), qp_speed, ()),
    "controller": (("controller",), controller_speed, ()),
    "pipeline": (("pipeline",), pipeline, ()),
    "viewer": (("viewer",), viewer, ()),
    "classic": (("classic",), classic, ()),
    "scaling-model": (("scaling-model",), scaling_model, ()),
    "students": (("students",), students, ("steps",)),
}
"""A table's kind: the `phalanx bench` (or tool) result kinds it takes, its columns and rows (from
the runs, and the marker's options), and the options its marker must give (besides `tasks`)."""
