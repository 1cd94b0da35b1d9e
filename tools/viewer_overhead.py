"""What `phalanx train --viewer` costs (docs/viewer.md), from a results directory of runs named
TASK-MODE-N (metrics.jsonl.gz each; MODE plain, viewer, or watched: with the viewer and an open
page): each run's median fps_total over its iterations from `--skip` on (the first ones compile).
tools/viewer_gpu.sh runs them and this, on the machine that ran them.

    python tools/viewer_overhead.py DIR [--skip 10] [--out F.json]

--out writes a bench.json (this machine's GPU and commit: run it where the runs ran), whose
table (`bench-table viewer` in the docs, through `phalanx bench docs`) puts each mode beside the
plain runs of its task.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path

import torch

from phalanx.bench.machine import tool_bench
from phalanx.core.files import write_text_atomic

MODES = ("plain", "viewer", "watched")


def median_fps(path: Path, skip: int) -> float:
    with gzip.open(path, "rt") as rows:
        return statistics.median(row["fps_total"] for row in map(json.loads, rows) if row["iteration"] >= skip)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--skip", type=int, default=10, help="iterations left out at the start")
    parser.add_argument("--out", default=None, help="write the runs' figures here, as a bench.json")
    args = parser.parse_args()
    results = []
    for path in sorted(args.results.glob("*-*-*.metrics.jsonl.gz")):
        task, mode, round_ = path.name.removesuffix(".metrics.jsonl.gz").rsplit("-", 2)
        if mode not in MODES:
            parser.error(f"results: {path.name} names mode {mode!r}; the modes are {', '.join(MODES)}")
        results.append({"task": task, "mode": mode, "round": int(round_), "fps_total": median_fps(path, args.skip)})
        print(json.dumps(results[-1]), flush=True)
    if not results:
        parser.error(f"results: no TASK-MODE-N.metrics.jsonl.gz in {args.results}")
    if args.out:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        tasks = ",".join(dict.fromkeys(r["task"] for r in results))
        config = {"skip": args.skip}
        bench = tool_bench("viewer", tasks, "viewer_overhead.py", sys.argv[1:], device, config=config, results=results)
        write_text_atomic(args.out, json.dumps(bench, indent=1) + "\n")


if __name__ == "__main__":
    main()
