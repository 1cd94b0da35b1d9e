"""Wall clock from launching `phalanx train TASK` to the first iteration whose metric reaches a
threshold, cold (Warp, inductor, Triton and CUDA caches in an empty directory) then warm (the same
caches), in fresh processes; the training is stopped there. One JSON line per run.

    python tools/time_to_result.py cartpole mean_episode_length 285 --runs cold,warm [--num-envs N ...]
    python tools/time_to_result.py anymal-flat metrics/lin_vel_xy_error 0.2 --below
    python tools/time_to_result.py cartpole mean_episode_length 285 --runs warm --cache-dir C --seed 2

With --cache-dir, the caches stay in C between invocations: `--runs warm` then reuses a
previous invocation's.

A metric reaches its threshold when it is >= the threshold, or <= it with --below.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from phalanx.bench.startup import cache_env


def run(args: argparse.Namespace, cache: Path, cold: bool) -> dict:
    env = cache_env(cache, cold)
    run_dir = Path(tempfile.mkdtemp(prefix=f"ttr-{args.task}-"))
    metrics = run_dir / "metrics.jsonl"
    command = [sys.executable, "-m", "phalanx", "train", args.task, "--run-dir", str(run_dir), *args.train_args]
    launch = time.time()
    log = (run_dir / "train.log").open("w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    first, seen, result = None, 0, None
    while result is None and proc.poll() is None and time.time() - launch < args.max_s:
        time.sleep(0.05)
        lines = metrics.read_text().splitlines() if metrics.exists() else []
        for line in lines[seen:]:
            if not line.endswith("}"):
                break  # a row still being written
            seen += 1
            row = json.loads(line)
            now = time.time() - launch
            first = now if first is None else first
            value = row.get(args.metric)
            if value is not None and (value <= args.threshold if args.below else value >= args.threshold):
                result = {"iteration": row["iteration"], "from_launch_s": now, "training_s": row["time_s"]}
                break
    proc.terminate()
    proc.wait()
    log.close()
    missed = {"reached": False, "log_tail": (run_dir / "train.log").read_text()[-500:]}
    label = "cold" if cold else "warm"
    head = {"task": args.task, "run": label, "metric": args.metric, "threshold": args.threshold, "below": args.below}
    return {**head, "first_iteration_s": first, **(result or missed), "run_dir": str(run_dir)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task")
    parser.add_argument("metric")
    parser.add_argument("threshold", type=float)
    parser.add_argument("--runs", default="cold,warm")
    parser.add_argument("--below", action="store_true", help="reached when the metric is <= the threshold")
    parser.add_argument("--max-s", type=float, default=300)
    parser.add_argument("--cache-dir", help="keep the caches here (default: a temporary directory)")
    args, args.train_args = parser.parse_known_args()  # the rest goes to phalanx train
    with tempfile.TemporaryDirectory() as temporary:
        cache = Path(args.cache_dir or temporary)
        for label in args.runs.split(","):
            print(json.dumps(run(args, cache, label == "cold")), flush=True)


if __name__ == "__main__":
    main()
