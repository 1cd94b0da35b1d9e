"""The table of `phalanx train --viewer`'s cost in docs/viewer.md, from a results directory of runs
named TASK-plain-N and TASK-viewer-N (metrics.jsonl.gz each): the median fps_total over iterations
from `--skip` on (the first ones compile), and the viewer's runs against the plain ones of their task.

    python tools/viewer_overhead.py docs/results/viewer-overhead-h200-2026-11-29
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from collections import defaultdict
from pathlib import Path


def median_fps(path: Path, skip: int) -> float:
    with gzip.open(path, "rt") as rows:
        return statistics.median(row["fps_total"] for row in map(json.loads, rows) if row["iteration"] >= skip)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--skip", type=int, default=10, help="iterations left out at the start")
    args = parser.parse_args()
    fps: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(args.results.glob("*-*-*.metrics.jsonl.gz")):
        task, mode, _ = path.name.removesuffix(".metrics.jsonl.gz").rsplit("-", 2)
        fps[task][mode].append(median_fps(path, args.skip))
    print("| task | runs each | fps_total without | with --viewer | change |")
    print("|---|---|---|---|---|")
    for task, modes in fps.items():
        plain, viewer = statistics.mean(modes["plain"]), statistics.mean(modes["viewer"])
        runs = len(modes["plain"])
        print(f"| {task} | {runs} | {plain / 1e6:.3f} M | {viewer / 1e6:.3f} M | {100 * (viewer / plain - 1):+.1f} % |")


if __name__ == "__main__":
    main()
