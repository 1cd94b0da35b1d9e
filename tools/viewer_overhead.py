"""The table of `phalanx train --viewer`'s cost in docs/viewer.md, from a results directory of runs
named TASK-MODE-N (metrics.jsonl.gz each; MODE plain, viewer, or watched: with the viewer and an
open page): the median fps_total over iterations from `--skip` on (the first ones compile), and
each mode's runs against the plain ones of their task (tools/viewer_gpu.sh runs them).

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
    watched = any("watched" in modes for modes in fps.values())
    extra = " | with --viewer and a page open | change" if watched else ""
    print(f"| task | runs each | fps_total without | with --viewer | change{extra} |")
    print("|---" * (7 if watched else 5) + "|")
    for task, modes in fps.items():
        plain = statistics.mean(modes["plain"])
        cells = [task, str(len(modes["plain"])), f"{plain / 1e6:.3f} M"]
        for mode in ("viewer", "watched") if watched else ("viewer",):
            if not modes[mode]:
                cells += ["-", "-"]
                continue
            value = statistics.mean(modes[mode])
            cells += [f"{value / 1e6:.3f} M", f"{100 * (value / plain - 1):+.1f} %"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
