"""Distilled students' runs as a bench.json (`bench-table students` in the docs, through `phalanx
bench docs`): the students of one teacher that tools/distill_gpu.sh trained, side by side or one
after another. For each: the flags it was trained with, its envs and gradient steps per iteration
(learning epochs x minibatches, from its config), its median fps total and gradient steps per
second (from iteration `--skip` on), and its curve: after each iteration, the gradient steps taken,
the training time (the trainer's clock, start-up apart) and the `--window`-iteration means of
`--metric` and of the imitation loss (`loss/distill`).

    python tools/student_runs.py ROOT "NAME:FLAGS|NAME:FLAGS" [--skip 10] [--window 100] [--out F.json]
        [--gpus gpu.txt --commit HASH --date YYYY-MM-DD]

ROOT holds each NAME's run as distill_gpu.sh leaves it (NAME/config.json, NAME/metrics.jsonl) or as
docs/results keep it (NAME.config.json, NAME.metrics.jsonl.gz); the second argument is
distill_gpu.sh's STUDENTS (a NAME may carry its program after an @, as there). A student without
metrics (it failed) is skipped, and said so. --out writes the bench.json with this machine's GPUs
and commit: run it where the students ran (distill_gpu.sh does); or, reading results back
elsewhere, give the GPUs they ran on (`--gpus`: nvidia-smi's CSV of name, uuid and driver_version,
distill_gpu.sh's gpu.txt), the commit of their code and the date they ran.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any

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


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """A run's metrics.jsonl, or its gzipped copy (.gz), as one dict per iteration."""
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def run_files(root: Path, name: str) -> tuple[Path, Path] | None:
    """NAME's config and metrics in either layout, or None where its metrics are missing or empty."""
    for config, metrics in [
        (root / name / "config.json", root / name / "metrics.jsonl"),
        (root / f"{name}.config.json", root / f"{name}.metrics.jsonl.gz"),
    ]:
        if config.is_file() and metrics.is_file() and metrics.stat().st_size > 0:
            return config, metrics
    return None


def _round(value: float | None) -> float | None:
    """To 6 significant digits: the tables show 2 or 3 decimals, and the curves stay small."""
    return None if value is None else float(f"{value:.6g}")


def student(name: str, files: tuple[Path, Path], flags: str, metric: str, skip: int, window: int) -> dict[str, Any]:
    """One student's figures and curve (see the module's doc)."""
    config = json.loads(files[0].read_text())
    rows = read_metrics(files[1])
    steps = config["algo"]["num_learning_epochs"] * config["algo"]["num_mini_batches"]
    late = rows[skip:] if len(rows) > skip + 1 else rows
    span = late[-1]["time_s"] - late[0]["time_s"]
    means = [trailing_mean([r.get(key) for r in rows], window) for key in (metric, LOSS)]
    return {
        "name": name,
        "task": config["task"],
        "flags": flags,
        "device": config["device"],
        "num_envs": config["num_envs"],
        "steps_per_iteration": steps,
        "fps_total": statistics.median(r["fps_total"] for r in late),
        "gradient_steps_per_s": steps * (len(late) - 1) / span if span > 0 else None,
        "metric": metric,
        "curve": [  # iteration i's row comes after its update: (i + 1) * steps gradient steps
            [(r["iteration"] + 1) * steps, round(r["time_s"], 2), _round(m), _round(loss)]
            for r, m, loss in zip(rows, *means, strict=True)
        ],
    }


def machine_of(gpus: Path, commit: str) -> dict[str, Any]:
    """The machine the students ran on, from nvidia-smi's CSV of its GPUs: only what that says."""
    with gpus.open() as file:
        rows = [{key.strip(): value.strip() for key, value in row.items()} for row in csv.DictReader(file)]
    return {
        "gpu": rows[0]["name"],
        "gpu_count": len(rows),
        "gpu_uuids": [row["uuid"] for row in rows],
        "driver": rows[0].get("driver_version", "unknown"),
        "commit": commit,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the directory of the students' runs")
    parser.add_argument("students", help='distill_gpu.sh\'s STUDENTS: "NAME:FLAGS|NAME:FLAGS"')
    parser.add_argument("--metric", default="metrics/consecutive_successes", help="the task's success metric")
    parser.add_argument("--skip", type=int, default=10, help="iterations left out of the rates (compiles)")
    parser.add_argument("--window", type=int, default=100, help="the curve's means are over this many iterations")
    parser.add_argument("--out", default=None, help="write the students' figures here, as a bench.json")
    parser.add_argument("--gpus", type=Path, default=None, help="nvidia-smi's CSV of the GPUs they ran on")
    parser.add_argument("--commit", default=None, help="with --gpus: the commit of the code they ran")
    parser.add_argument("--date", default=None, help="with --gpus: the date they ran")
    args = parser.parse_args()
    if args.window < 1 or args.skip < 0:
        parser.error(f"--window must be >= 1 and --skip >= 0, got {args.window} and {args.skip}")
    if len({args.gpus is None, args.commit is None, args.date is None}) > 1:
        parser.error("--gpus, --commit and --date: give all three (results read back elsewhere) or none")
    if args.gpus is not None and not args.gpus.is_file():
        parser.error(f"--gpus: no file {args.gpus}")
    results = []
    for name, flags in students(args.students):
        files = run_files(args.root, name)
        if files is None:
            print(f"{name}: skipped, no config and metrics in {args.root} (NAME/ or NAME.*)", flush=True)
            continue
        results.append(student(name, files, flags, args.metric, args.skip, args.window))
        steps, seconds, value, loss = results[-1]["curve"][-1]
        print(f"{name}: {steps} gradient steps, {seconds:.0f} s, {value} / {loss}", flush=True)
    if not results:
        parser.error(f"students: none of {args.students!r} has a config and metrics in {args.root}")
    if args.out:
        # Imported here: plot_metrics imports this module for its means, without torch.
        from phalanx.bench.machine import tool_bench
        from phalanx.core.files import write_text_atomic

        task, device = results[0]["task"], results[0]["device"]
        config = {"skip": args.skip, "window": args.window}
        bench = tool_bench("students", task, "student_runs.py", sys.argv[1:], device, config=config, results=results)
        if args.gpus is not None:
            bench |= {"machine": machine_of(args.gpus, args.commit), "date": args.date}
        write_text_atomic(args.out, json.dumps(bench) + "\n")


if __name__ == "__main__":
    main()
