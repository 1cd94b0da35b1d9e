"""The docs' tables of contributor tools' results (`tools/*.py --out`, through `tool_bench`)."""

from __future__ import annotations

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
