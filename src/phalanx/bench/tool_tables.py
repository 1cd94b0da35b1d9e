"""The docs' tables of contributor tools' results (`tools/*.py --out`, through `tool_bench`)."""

from __future__ import annotations

from typing import Any

from phalanx.bench.table_runs import Rows, Run, grouped


def stones(runs: list[Run]) -> Rows:
    """Per stepping-stones level (rows), each evaluated policy (a column per policy and run,
    `tools/stones_eval.py`): success, mean distance and share fallen."""
    policies = [(run, policy, rs) for run in runs for policy, rs in grouped(run, lambda b, r: r["policy"]).items()]
    levels = sorted({r["level"] for _, _, rs in policies for r in rs})
    rows = []
    for level in levels:
        cells = []
        for _, _, rs in policies:
            r = next((r for r in rs if r["level"] == level), None)
            cells.append("-" if r is None else f"{r['success']:.2f}, {r['distance_m']:.2f} m, {r['fell']:.2f}")
        rows.append([str(level), *cells])
    return ["level", *[f"{policy} ({run.label})" for run, policy, _ in policies]], rows


def played(runs: list[Run]) -> Rows:
    """`phalanx play --out`: a row per task and policy of each run (a seed is a run of its own),
    its episodes, their mean length and return, and the mean of each of the task's metrics (a
    column per metric any row has)."""
    entries = [(run, r) for run in runs for bench in run.benches for r in bench["results"]]
    metrics = list(dict.fromkeys(name for _, r in entries for name in r["metrics"]))
    rows = []
    for run, r in entries:
        rows.append(
            [r["task"], r["policy"], f"{r['num_envs']:,} x {r['steps']:,}", f"{r['episodes']:,}"]
            + [_number(r["mean_episode_length"], 1), _number(r["mean_return"], 2)]
            + [_number(r["metrics"].get(name), 3) for name in metrics]
            + [run.label]
        )
    columns = ["task", "policy", "envs x steps", "episodes", "mean episode length", "mean return"]
    return columns + metrics + ["run"], rows


def _number(value: Any, digits: int) -> str:
    """`value` to `digits` decimals; "-" where there is none (no episode ended, or not a metric of its task)."""
    return "-" if value is None else f"{value:.{digits}f}"
