#!/usr/bin/env bash
# Time to a result from launch on one GPU, cold caches then warm, for each of $TASKS (default: all
# five) with the thresholds of docs/benchmarks.md. Python's bytecode is compiled once beforehand,
# as `pip install` does. Results: $OUT/time_to_result.jsonl, and the runs' metrics in
# $OUT/ttr-metrics.tar.gz (a device call brings back at most 8 files).
#   TASKS="anymal-flat anymal-rough" bash tools/time_to_result_gpu.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
source "$(dirname "$0")/bytecode.sh"
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee -a "$out/gpu.txt"
declare -A target=(
  [cartpole]="mean_episode_length 285"
  [ant]="mean_reward 100"
  [humanoid]="mean_reward 50"
  [anymal-flat]="metrics/lin_vel_xy_error 0.2 --below --max-s 285 --max-iterations 3000"  # 300 by default
  [anymal-rough]="env/terrain_level 4.5 --max-s 320"
)
for task in ${TASKS:-cartpole ant humanoid anymal-flat anymal-rough}; do
  python3 "$here/time_to_result.py" "$task" ${target[$task]} | tee -a "$out/time_to_result.jsonl"
done
python3 - "$out" <<'PY'
import json, sys, tarfile
from pathlib import Path
out = Path(sys.argv[1])
with tarfile.open(out / "ttr-metrics.tar.gz", "w:gz") as tar:
    for line in (out / "time_to_result.jsonl").read_text().splitlines():
        row = json.loads(line)
        metrics = Path(row["run_dir"]) / "metrics.jsonl"
        if metrics.exists():
            tar.add(metrics, f"{row['task']}-{row['run']}.jsonl")
PY
