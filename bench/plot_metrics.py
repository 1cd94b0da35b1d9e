"""Plots metrics of training runs over their training time, one panel per metric.

    python bench/plot_metrics.py OUT.png --runs state=RUN/metrics.jsonl vision=RUN2/metrics.jsonl.gz \
        --keys metrics/consecutive_successes mean_reward

A run's metrics.jsonl (or .gz) is what `phalanx train` writes; time is its `time_s` (the
trainer's clock: the iterations, the first one's compiles included), in minutes.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)


def read(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as file:
        return [json.loads(line) for line in file if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", nargs="+", required=True, help="LABEL=metrics.jsonl[.gz]")
    parser.add_argument("--keys", nargs="+", required=True)
    parser.add_argument("--hline", type=float, action="append", default=[], help="a level to mark on the first panel")
    args = parser.parse_args()
    figure, axes = plt.subplots(1, len(args.keys), figsize=(5 * len(args.keys), 3.6), squeeze=False)
    for run in args.runs:
        label, _, path = run.partition("=")
        rows = read(Path(path))
        minutes = [row["time_s"] / 60 for row in rows]
        for axis, key in zip(axes[0], args.keys, strict=True):
            axis.plot(minutes, [row.get(key, float("nan")) for row in rows], label=label, linewidth=1)
    for axis, key in zip(axes[0], args.keys, strict=True):
        axis.set_xlabel("training time (min)")
        axis.set_title(key)
        axis.grid(alpha=0.3)
    for level in args.hline:
        axes[0][0].axhline(level, color="grey", linestyle="--", linewidth=0.8)
    axes[0][0].legend()
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
