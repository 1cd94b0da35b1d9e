"""Distilled students' runs as a bench.json (`bench-table students` in the docs, through `phalanx
bench docs`): the students of one teacher that tools/distill_gpu.sh trained, side by side or one
after another. For each: the flags it was trained with, its envs and gradient steps per iteration
(learning epochs x minibatches, from its config.json), its median fps total and gradient steps per
second (from iteration `--skip` on), and its curve: at each iteration its training time and the
`--window`-iteration means of `--metric` and of the imitation loss (`loss/distill`).

    python tools/student_runs.py ROOT "NAME:FLAGS|NAME:FLAGS" [--skip 10] [--window 100] [--out F.json]

ROOT holds a run directory per NAME (config.json, metrics.jsonl); the second argument is
distill_gpu.sh's STUDENTS (a NAME may carry its program after an @, as there). --out writes the
bench.json, with this machine's GPU and commit: run it where the students ran (distill_gpu.sh does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from phalanx.bench.machine import tool_bench
from phalanx.core.files import write_text_atomic

LOSS = "loss/distill"


def students(spec: str) -> list[tuple[str, str]]:
    """distill_gpu.sh's STUDENTS, "NAME[@PROGRAM]:FLAGS|...", as (name, flags)."""
    entries = []
    for entry in spec.split("|"):
        head, _, flags = entry.partition(":")
        entries.append((head.partition("@")[0], flags.strip()))
    return entries


def trailing_mean(values: list[float | None], window: int) -> list[float | None]:
    """The mean of each value and the `window` - 1 before it, missing and NaN ones left out (None
    where all are)."""
    means: list[float | None] = []
    for i in range(len(values)):
        kept = [v for v in values[max(0, i - window + 1) : i + 1] if v is not None and v == v]
        means.append(sum(kept) / len(kept) if kept else None)
    return means


def _round(value: float | None) -> float | None:
    """To 6 significant digits: the tables show 2 or 3 decimals, and the curves stay small."""
    return None if value is None else float(f"{value:.6g}")


def student(run: Path, flags: str, metric: str, skip: int, window: int) -> dict:
    """One student's figures and curve (see the module's doc)."""
    config = json.loads((run / "config.json").read_text())
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps = config["algo"]["num_learning_epochs"] * config["algo"]["num_mini_batches"]
    late = rows[skip:] if len(rows) > skip + 1 else rows
    span = late[-1]["time_s"] - late[0]["time_s"]
    means = [trailing_mean([r.get(key) for r in rows], window) for key in (metric, LOSS)]
    return {
        "name": run.name,
        "flags": flags,
        "num_envs": config["num_envs"],
        "steps_per_iteration": steps,
        "fps_total": statistics.median(r["fps_total"] for r in late),
        "gradient_steps_per_s": steps * (len(late) - 1) / span if span > 0 else None,
        "metric": metric,
        "curve": [
            [r["iteration"], round(r["time_s"], 2), _round(m), _round(loss)]
            for r, m, loss in zip(rows, *means, strict=True)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the directory of the students' run directories")
    parser.add_argument("students", help='distill_gpu.sh\'s STUDENTS: "NAME:FLAGS|NAME:FLAGS"')
    parser.add_argument("--metric", default="metrics/consecutive_successes", help="the task's success metric")
    parser.add_argument("--skip", type=int, default=10, help="iterations left out of the rates (compiles)")
    parser.add_argument("--window", type=int, default=100, help="the curve's means are over this many iterations")
    parser.add_argument("--out", default=None, help="write the students' figures here, as a bench.json")
    args = parser.parse_args()
    if args.window < 1 or args.skip < 0:
        parser.error(f"--window must be >= 1 and --skip >= 0, got {args.window} and {args.skip}")
    results = []
    for name, flags in students(args.students):
        run = args.root / name
        if not (run / "metrics.jsonl").is_file() or not (run / "config.json").is_file():
            parser.error(f"students: {name} has no config.json and metrics.jsonl in {run}")
        results.append(student(run, flags, args.metric, args.skip, args.window))
        last = results[-1]["curve"][-1]
        print(f"{name}: {len(results[-1]['curve'])} iterations, {last[1]:.0f} s, {last[2]} / {last[3]}", flush=True)
    if args.out:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        task = json.loads((args.root / results[0]["name"] / "config.json").read_text())["task"]
        config = {"skip": args.skip, "window": args.window}
        bench = tool_bench("students", task, "student_runs.py", sys.argv[1:], device, config=config, results=results)
        write_text_atomic(args.out, json.dumps(bench) + "\n")


if __name__ == "__main__":
    main()
