"""Writes this directory's README table from jobs/*.jsonl.gz: per run, the first iteration where
metrics/success's moving mean over 5 rows (per-episode means weighted by episodes, as `phalanx
bench learn`) reaches 0.9, and signs of runaway actions (the lowest mean reward, skipped updates)."""

import gzip
import json
from pathlib import Path

HERE = Path(__file__).parent
FLAGS = {"head": "(none)", "clip": "--env.actions.clip 10", "norm": "--empirical-normalization",
         "std05": "--policy.init-noise-std 0.5"}
AT_ONCE = {"head": 12, "clip": 12, "norm": 4, "std05": 4}  # jobs on the host; 3 per GPU, then 1


def summarize(path: Path) -> dict:
    recent, reached, rows = [], None, []
    for line in gzip.open(path, "rt"):
        row = json.loads(line)
        rows.append(row)
        if "metrics/success" in row and row.get("episodes", 0) > 0:
            recent = [*recent, (row["episodes"], row["metrics/success"])][-5:]
            mean = sum(w * v for w, v in recent) / sum(w for w, _ in recent)
            if reached is None and mean >= 0.9:
                reached = row["iteration"]
    last = rows[-1]
    return {"reached": reached, "iterations": last["iteration"] + 1, "final": mean,
            "lowest_reward": min(r["mean_reward"] for r in rows), "skipped": last.get("skipped_updates", 0)}


lines = ["| variant | flags | seed | jobs on the host | success >= 0.9 at iteration | iterations run | "
         "final success | lowest mean reward | skipped minibatches |", "|---|---|---|---|---|---|---|---|---|"]
for path in sorted(HERE.glob("jobs/*.jsonl.gz"), key=lambda p: (list(FLAGS).index(p.name.split("-")[0]), int(p.name.split("-s")[1].split(".")[0]))):
    variant, seed = path.name.split(".")[0].split("-s")
    s = summarize(path)
    lines.append(f"| {variant} | `{FLAGS[variant]}` | {seed} | {AT_ONCE[variant]} | {s['reached'] or 'not reached'} | "
                 f"{s['iterations']} | {s['final']:.2f} | {s['lowest_reward']:.3g} | {s['skipped']} |")
text = (HERE / "README.md").read_text()
start, end = "<!-- table -->", "<!-- end table -->"
head, _, rest = text.partition(start)
_, _, tail = rest.partition(end)
(HERE / "README.md").write_text(head + start + "\n" + "\n".join(lines) + "\n" + end + tail)
