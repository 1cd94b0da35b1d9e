"""What the docs' generated tables share: the runs their raw results group into (the same command
but for its run directory, date, commit and GPUs: repeats of one run), each run's note (command,
date, commit, GPUs, raw results), and cells of repeated figures."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Rows = tuple[list[str], list[list[str]]]


@dataclass
class Run:
    """The bench.json files of one run and the links to their raw results."""

    label: str
    benches: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def runs_of(sources: list[tuple[dict[str, Any], str]]) -> list[Run]:
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


def note(run: Run) -> str:
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


def gpu_name(bench: dict[str, Any]) -> str:
    """The GPU model, short ("H200", "H100"), or the device (cpu)."""
    gpu = bench["machine"].get("gpu") or bench["device"]
    return gpu.removeprefix("NVIDIA ").split()[0]


def values_cell(values: list[float | None], scale: float = 1.0, digits: int = 2, unit: str = "") -> str:
    """Repeats of one figure, comma-separated, with their unit once; "-" where a run lacks it."""
    if any(v is None for v in values):
        return "-"
    return ", ".join(f"{v / scale:.{digits}f}" for v in values if v is not None) + unit


def fps_cell(values: list[float]) -> str:
    """Env steps per second in millions, to 3 significant digits."""
    return ", ".join(f"{v / 1e6:#.3g}".rstrip(".") for v in values) + " M"


def grouped(run: Run, key: Callable[[dict[str, Any], dict[str, Any]], Any]) -> dict[Any, list[dict[str, Any]]]:
    """The valid results of a run's files, grouped by `key(bench, result)` (repeats together)."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for bench in run.benches:
        for r in bench["results"]:
            if r.get("valid", True):
                groups.setdefault(key(bench, r), []).append(r)
    return groups


Figures = list[tuple[str, Callable[[list[dict[str, Any]]], str]]]


def per_env_count(runs: list[Run], figures: Figures) -> Rows:
    """A row per task and env count of each run (repeats side by side), with `figures`; a
    setting the bench found invalid (out of memory, ...) says so."""
    rows = []
    for run in runs:
        gpu = gpu_name(run.benches[0])
        for (task, envs), rs in grouped(run, lambda b, r: (r.get("task", b["task"]), r["num_envs"])).items():
            rows.append([task, gpu, f"{envs:,}", *[figure(rs) for _, figure in figures], run.label])
        rows += invalid_rows(
            run, lambda b, r: [r.get("task", b["task"]), gpu_name(b), count_cell(r.get("num_envs"))], 4 + len(figures)
        )
    return ["task", "GPU", "envs", *[column for column, _ in figures], "run"], rows


def count_cell(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def invalid_rows(run: Run, lead: Callable[[dict[str, Any], dict[str, Any]], list[str]], width: int) -> list[list[str]]:
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
