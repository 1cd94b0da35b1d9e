"""Plots metrics of training runs over their training time or iterations, one panel per metric.

    python tools/plot_metrics.py OUT.png --runs state=RUN/metrics.jsonl vision=RUN2/metrics.jsonl.gz \
        --keys metrics/consecutive_successes mean_reward [--x iteration] [--smooth 100]

A run's metrics.jsonl (or .gz) is what `phalanx train` writes; time is its `time_s` (the
trainer's clock: the iterations, the first one's compiles included), in minutes. `--x
time-after-first` counts it from the end of the first iteration instead, so runs whose compiles
took different times (cold or warm caches) start together. `--smooth N` plots the mean of each
iteration and the N - 1 before it (iterations without the key, where no episode ended, left out).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

from student_runs import read_metrics, trailing_mean  # what the docs' student tables read and give

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)


def x_values(rows: list[dict], x: str) -> list[float]:
    if x == "iteration":
        return [row["iteration"] for row in rows]
    start = rows[0]["time_s"] if x == "time-after-first" else 0.0
    return [(row["time_s"] - start) / 60 for row in rows]


X_LABELS = {
    "time": "training time (min)",
    "time-after-first": "training time after the first iteration (min)",
    "iteration": "iteration",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", nargs="+", required=True, help="LABEL=metrics.jsonl[.gz]")
    parser.add_argument("--keys", nargs="+", required=True)
    parser.add_argument("--hline", type=float, action="append", default=[], help="a level to mark on the first panel")
    parser.add_argument("--x", choices=list(X_LABELS), default="time", help="the horizontal axis")
    parser.add_argument("--smooth", type=int, default=1, help="plot N-iteration moving averages")
    args = parser.parse_args()
    if args.smooth < 1:
        parser.error(f"--smooth: {args.smooth} given, a number of iterations >= 1 allowed")
    figure, axes = plt.subplots(1, len(args.keys), figsize=(5 * len(args.keys), 3.6), squeeze=False)
    for run in args.runs:
        label, _, path = run.partition("=")
        rows = read_metrics(Path(path))
        xs = x_values(rows, args.x)
        for axis, key in zip(axes[0], args.keys, strict=True):
            ys = [float("nan") if y is None else y for y in trailing_mean([row.get(key) for row in rows], args.smooth)]
            axis.plot(xs, ys, label=label, linewidth=1)
    for axis, key in zip(axes[0], args.keys, strict=True):
        axis.set_xlabel(X_LABELS[args.x])
        axis.set_title(key + (f" ({args.smooth}-iteration mean)" if args.smooth > 1 else ""))
        axis.grid(alpha=0.3)
    for level in args.hline:
        axes[0][0].axhline(level, color="grey", linestyle="--", linewidth=0.8)
    axes[0][0].legend()
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
