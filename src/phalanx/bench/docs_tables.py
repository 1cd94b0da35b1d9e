"""The docs' benchmark tables, one per kind of `phalanx bench`, built from raw bench.json files.

Files of one run (the same command but for its run directory, date, commit and GPUs, e.g. two
repeats) share a label; each row names its run's label, and the notes under the table give each
label's command, date, commit, GPUs and raw results."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from phalanx.bench.learn_report import from_launch, judged, result_text, verdicts
from phalanx.bench.markdown import markdown_table
from phalanx.core.errors import ConfigError

Rows = tuple[list[str], list[list[str]]]


@dataclass
class Run:
    """The bench.json files of one run and the links to their raw results."""

    label: str
    benches: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def table(kind: str, sources: list[tuple[dict[str, Any], str]], tasks: list[str] | None = None) -> str:
    """The markdown table of `kind` from `sources` (bench.json contents, each with the link to its
    raw results), with a note per run under it; with `tasks`, of those tasks' results only."""
    if kind not in TABLES:
        raise ConfigError(f"bench docs: no table of kind {kind!r}; the kinds: {', '.join(TABLES)}")
    kinds, rows = TABLES[kind]
    for bench, link in sources:
        if bench["kind"] not in kinds:
            raise ConfigError(f"bench docs: {link} is a `bench {bench['kind']}` result, not one for a {kind} table")
    if tasks is not None:
        sources = [(_of_tasks(bench, tasks), link) for bench, link in sources]
        sources = [(bench, link) for bench, link in sources if bench["results"]]
        if not sources:
            raise ConfigError(f"bench docs: no result of {', '.join(tasks)} in the {kind} table's sources")
    runs = _runs(sources)
    columns, body = rows(runs)
    return "\n".join([markdown_table(columns, body), "", *[_note(run) for run in runs]])


def _of_tasks(bench: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    """`bench` with the results of `tasks` only."""
    return bench | {"results": [r for r in bench["results"] if r.get("task", bench["task"]) in tasks]}


def _runs(sources: list[tuple[dict[str, Any], str]]) -> list[Run]:
    runs: dict[tuple[Any, ...], Run] = {}
    for bench, link in sources:
        machine = bench["machine"]
        key = (_command(bench), bench["date"], machine["commit"], tuple(_gpus(bench)), machine.get("gpu"))
        key += (machine.get("host"), machine.get("cpu"))  # runs without GPU UUIDs (the CPU) apart too
        run = runs.setdefault(key, Run(_label(len(runs))))
        run.benches.append(bench)
        if link not in run.links:
            run.links.append(link)
    return list(runs.values())


def _label(i: int) -> str:
    """A, B, ..., Z, AA, AB, ..."""
    letters = ""
    i += 1
    while i:
        i, rest = divmod(i - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _command(bench: dict[str, Any]) -> str:
    """The bench's command without its run directory (where the files went, not what ran)."""
    return " ".join(re.sub(r"\s+--run-dir[= ]\S+", "", bench["command"]).split())


def _gpus(bench: dict[str, Any]) -> list[str]:
    """The GPUs the run used: those its results name, else those of its machine."""
    named = sorted({r["gpu_uuid"] for r in bench["results"] if r.get("gpu_uuid")})
    return named or list(bench["machine"].get("gpu_uuids") or [])


def _note(run: Run) -> str:
    """ "- A: `COMMAND`; DATE, commit C, 1 x NVIDIA H200 (GPU-...); [raw results](...)": where it
    ran, a CPU run's CPU (model and cores) instead of GPUs."""
    bench, machine = run.benches[0], run.benches[0]["machine"]
    links = ", ".join(f"[raw results]({link})" for link in run.links)
    if bench["device"].startswith("cuda"):
        uuids = ", ".join(uuid[:12] for uuid in _gpus(bench)) or "UUID not recorded"
        where = f"{machine['gpu_count']} x {machine['gpu']} ({uuids})"
    else:
        where = f"CPU {machine.get('cpu', 'unknown')} ({machine.get('cpu_count', '?')} cores)"
    return f"- {run.label}: `{_command(bench)}`; {bench['date']}, commit {machine['commit']}, {where}; {links}"


def _gpu(bench: dict[str, Any]) -> str:
    """The GPU model, short ("H200", "H100"), or the device (cpu)."""
    gpu = bench["machine"].get("gpu") or bench["device"]
    return gpu.removeprefix("NVIDIA ").split()[0]


def _values(values: list[float | None], scale: float = 1.0, digits: int = 2, unit: str = "") -> str:
    """Repeats of one figure, comma-separated, with their unit once; "-" where a run lacks it."""
    if any(v is None for v in values):
        return "-"
    return ", ".join(f"{v / scale:.{digits}f}" for v in values if v is not None) + unit


def _fps(values: list[float]) -> str:
    """Env steps per second in millions, to 3 significant digits."""
    return ", ".join(f"{v / 1e6:#.3g}".rstrip(".") for v in values) + " M"


def _grouped(run: Run, key: Callable[[dict[str, Any], dict[str, Any]], Any]) -> dict[Any, list[dict[str, Any]]]:
    """The valid results of a run's files, grouped by `key(bench, result)` (repeats together)."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for bench in run.benches:
        for r in bench["results"]:
            if r.get("valid", True):
                groups.setdefault(key(bench, r), []).append(r)
    return groups


Figures = list[tuple[str, Callable[[list[dict[str, Any]]], str]]]


def _per_env_count(runs: list[Run], figures: Figures) -> Rows:
    """A row per task and env count of each run (repeats side by side), with `figures`; a
    setting the bench found invalid (out of memory, ...) says so."""
    rows = []
    for run in runs:
        gpu = _gpu(run.benches[0])
        for (task, envs), rs in _grouped(run, lambda b, r: (r.get("task", b["task"]), r["num_envs"])).items():
            rows.append([task, gpu, f"{envs:,}", *[figure(rs) for _, figure in figures], run.label])
        rows += _invalid_rows(
            run, lambda b, r: [r.get("task", b["task"]), _gpu(b), _count(r.get("num_envs"))], 4 + len(figures)
        )
    return ["task", "GPU", "envs", *[column for column, _ in figures], "run"], rows


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _invalid_rows(run: Run, lead: Callable[[dict[str, Any], dict[str, Any]], list[str]], width: int) -> list[list[str]]:
    """A row per setting the bench found invalid (once, however many repeats): `lead`'s cells, the
    reason's first words ("out of GPU memory", not the allocator's paragraph), and the run's
    label in the last of `width` columns."""
    rows: list[list[str]] = []
    for bench in run.benches:
        for r in bench["results"]:
            if not r.get("valid", True):
                cells = [*lead(bench, r), f"invalid: {str(r.get('reason', '')).split(' (')[0]}"]
                row = cells + [""] * (width - len(cells) - 1) + [run.label]
                if row not in rows:
                    rows.append(row)
    return rows


def _throughput(runs: list[Run]) -> Rows:
    return _per_env_count(
        runs,
        [
            ("fps total", lambda rs: _fps([r["fps_total"] for r in rs])),
            ("fps step", lambda rs: _fps([r["fps_step"] for r in rs])),
            ("fps step+inference", lambda rs: _fps([r["fps_step_inference"] for r in rs])),
            ("ms per iteration", lambda rs: _values([r["iteration_s"] for r in rs], 1e-3, 1)),
            ("step / physics limit", lambda rs: _values([r.get("ratio_step_to_limit") for r in rs], 0.01, 0, " %")),
            ("memory per env", lambda rs: _values([r.get("memory_per_env_bytes") for r in rs], 1024, 0, " KiB")),
        ],
    )


def _memory(runs: list[Run]) -> Rows:
    """A row per task and env count: the GPU memory in use, and what each env more cost since the
    run's previous count (the growth cancels one-time loads: Warp's modules, torch, CUDA)."""
    rows = []
    for run in runs:
        previous: dict[str, tuple[int, float]] = {}
        for (task, envs), rs in _grouped(run, lambda b, r: (r.get("task", b["task"]), r["num_envs"])).items():
            used = [r.get("memory_bytes") for r in rs]
            growth = "-"
            if task in previous and None not in used:
                count, before = previous[task]
                growth = _values([(u - before) / (envs - count) for u in used], 1024, 0, " KiB")
            if None not in used:
                previous[task] = (envs, sum(used) / len(used))
            rows.append([task, _gpu(run.benches[0]), f"{envs:,}", _values(used, 2**30, 2, " GiB"), growth, run.label])
        rows += _invalid_rows(run, lambda b, r: [r.get("task", b["task"]), _gpu(b), _count(r.get("num_envs"))], 6)
    return ["task", "GPU", "envs", "memory in use", "per env more since the previous count", "run"], rows


PHASES = {"physics": "physics", "render": "render", "obs/reward/reset": "obs_reward_reset"}
PHASES |= {"inference": "policy_inference", "update": "ppo_update"}


def _phases(runs: list[Run]) -> Rows:
    """Throughput with the iteration split into its phases (ms)."""

    def phase(key: str) -> Callable[[list[dict[str, Any]]], str]:
        return lambda rs: _values([r["phases_s"].get(key, 0.0) for r in rs], 1e-3, 1)

    figures: Figures = [("fps total", lambda rs: _fps([r["fps_total"] for r in rs]))]
    figures += [("ms per iteration", lambda rs: _values([r["iteration_s"] for r in rs], 1e-3, 1))]
    figures += [(name, phase(key)) for name, key in PHASES.items()]
    figures += [("memory per env", lambda rs: _values([r.get("memory_per_env_bytes") for r in rs], 1024, 0, " KiB"))]
    return _per_env_count(runs, figures)


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
        gpu = _gpu(run.benches[0])
        for (task, caches), rs in _grouped(run, lambda b, r: (r.get("task", b["task"]), r["run"])).items():
            phases = [[sum(r["phases_s"].get(p, 0.0) for p in ps) for r in rs] for ps in STARTUP_PHASES.values()]
            wall = _values([r["process_wall_s"] for r in rs], 1, 1)
            rows.append(
                [task, gpu, caches, f"{rs[0]['num_envs']:,}", wall, *[_values(p, 1, 1) for p in phases], run.label]
            )
        rows += _invalid_rows(run, _startup_lead, len(columns))
    return columns, rows


def _startup_lead(bench: dict[str, Any], r: dict[str, Any]) -> list[str]:
    return [r.get("task", bench["task"]), _gpu(bench), str(r.get("run")), _count(r.get("num_envs"))]


def _compare(runs: list[Run]) -> Rows:
    columns = ["task", "library", "GPUs", "GPU", "fps total", "start-up (s)", "to the threshold from launch (s)"]
    columns += ["threshold", "GPU memory", "run"]
    rows = []
    for run in runs:
        key = lambda b, r: (b["task"], r["trainer"], r.get("gpus", 1))  # noqa: E731
        for (task, trainer, gpus), rs in _grouped(run, key).items():
            reached = [r["to_threshold_from_launch_s"] for r in rs]
            rows.append(
                [task, trainer, str(gpus), _gpu(run.benches[0]), _fps([r["fps_total"] for r in rs])]
                + [_values([r["startup_s"] for r in rs], 1, 1)]
                + [", ".join("no" if s is None else f"{s:.1f}" for s in reached)]
                + [f"{rs[0]['metric']} {rs[0]['threshold']:g}"]
                + [_values([r.get("gpu_memory_mib") for r in rs], 1, 0, " MiB")]
                + [run.label]
            )
        rows += _invalid_rows(run, lambda b, r: [b["task"], r["trainer"], str(r.get("gpus", 1)), _gpu(b)], len(columns))
    return columns, rows


def _scaling(runs: list[Run]) -> Rows:
    columns = ["task", "mode", "GPUs", "GPU", "envs per GPU", "fps total", "speed-up", "efficiency", "run"]
    rows = []
    for run in runs:
        key = lambda b, r: (b["task"], b["config"]["mode"], r["gpus"], r["envs_per_rank"])  # noqa: E731
        for (task, mode, gpus, envs), rs in _grouped(run, key).items():
            rows.append(
                [
                    task,
                    mode,
                    str(gpus),
                    _gpu(run.benches[0]),
                    f"{envs:,}",
                    _fps([r["fps_total"] for r in rs]),
                ]
                + [_values([r["speedup"] for r in rs], unit="x"), _values([r["efficiency"] for r in rs], 0.01, 0, " %")]
                + [run.label]
            )
        rows += _invalid_rows(run, _scaling_lead, len(columns))
    return columns, rows


def _scaling_lead(bench: dict[str, Any], r: dict[str, Any]) -> list[str]:
    mode, envs = bench["config"].get("mode", "-"), _count(r.get("envs_per_rank"))
    return [bench["task"], mode, str(r.get("gpus")), _gpu(bench), envs]


def _learn(runs: list[Run]) -> Rows:
    """Per task its result, verdict and seeds reached, each warm run's seconds from launch to the
    threshold (start-up apart), the runs on cold caches, fps_total, and its runs. A task is judged
    on its warm runs, or on its cold ones where it has none."""
    entries: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for run in runs:
        for bench in run.benches:
            for r in bench["results"]:
                if r["status"] != "not run":
                    entries.setdefault(r["task"], []).append((run.label, r))
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


# a table's kind: the `phalanx bench` kinds whose results it takes, and its columns and rows
def _physics(runs: list[Run]) -> Rows:
    """The env step (random actions, no policy) against MuJoCo Warp stepping the same model alone,
    M env steps/s (`tools/env_fps.py`): the physics limit (zero controls) and with random controls
    (a physics step rate over the decimation), the env by default and in three slower modes."""

    def rate(key: str, per_physics_step: bool = False) -> Callable[[list[dict[str, Any]]], str]:
        return lambda rs: _values([r[key] / (r["decimation"] if per_physics_step else 1) for r in rs], 1e6)

    return _per_env_count(
        runs,
        [
            ("physics limit", rate("raw_physics_steps_per_s", True)),
            ("**env**", lambda rs: f"**{rate('env_steps_per_s')(rs)}**"),
            ("**env / limit**", lambda rs: f"**{_values([r['ratio_to_limit'] for r in rs], 0.01, 0, ' %')}**"),
            ("physics, random ctrl", rate("raw_physics_steps_per_s_random_ctrl", True)),
            (
                "env / random-ctrl physics",
                lambda rs: _values([r["ratio_to_random_ctrl_physics"] for r in rs], 0.01, 0, " %"),
            ),
            ("captured, not compiled", rate("env_steps_per_s_captured_uncompiled")),
            ("compiled, not captured", rate("env_steps_per_s_compiled_uncaptured")),
            ("eager torch", rate("env_steps_per_s_eager")),
            ("start-up s", lambda rs: _values([r["startup_s"] for r in rs], digits=0)),
            ("buffers", lambda rs: f"{rs[0]['nconmax_per_env']} / {rs[0]['njmax_per_env']}"),
        ],
    )


def _stones(runs: list[Run]) -> Rows:
    """Per stepping-stones level (rows), each evaluated policy (a column per policy and run,
    `tools/stones_eval.py`): success, mean distance and share fallen."""
    policies = [(run, policy, rs) for run in runs for policy, rs in _grouped(run, lambda b, r: r["policy"]).items()]
    levels = sorted({r["level"] for _, _, rs in policies for r in rs})
    rows = []
    for level in levels:
        cells = []
        for _, _, rs in policies:
            r = next((r for r in rs if r["level"] == level), None)
            cells.append("-" if r is None else f"{r['success']:.2f}, {r['distance_m']:.2f} m, {r['fell']:.2f}")
        rows.append([str(level), *cells])
    return ["level", *[f"{policy} ({run.label})" for run, policy, _ in policies]], rows


TABLES: dict[str, tuple[tuple[str, ...], Callable[[list[Run]], Rows]]] = {
    "learn": (("learn",), _learn),
    "throughput": (("throughput", "envs"), _throughput),
    "phases": (("throughput", "envs"), _phases),
    "memory": (("envs",), _memory),
    "startup": (("startup",), _startup),
    "compare": (("compare",), _compare),
    "scaling": (("scaling",), _scaling),
    "physics": (("physics",), _physics),
    "stones": (("stones",), _stones),
}
