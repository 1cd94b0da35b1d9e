#!/usr/bin/env bash
# Before/after throughput in one device call: `phalanx bench throughput` of each task with the
# source tree in $BEFORE and with this checkout, alternated ROUNDS times (before, after, before,
# after, ...) so that a drifting GPU affects both alike. Each run's bench.json goes to
# $OUT/TASK-{before,after}-ROUND.json (its log stays in /tmp), one summary line per run to
# $OUT/compare.log. The side's source goes first on PYTHONPATH (a checkout's src already there
# must not shadow the before side).
#   git archive REV src | tar -x -C .device/before     (here; carry .device/before)
#   BEFORE=.device/before TASKS="ant anymal-rough" ENVS=4096 ROUNDS=2 bash tools/compare_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out" /tmp/compare
export PYTHONUNBUFFERED=1
base_path=${PYTHONPATH:-}
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee -a "$out/gpu.txt"
for task in ${TASKS:-ant anymal-rough}; do
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for side in before after; do
      src=$PWD/src
      [ "$side" = before ] && src=$(realpath "$BEFORE")/src
      dir="/tmp/compare/$task-$side-$round"
      PYTHONPATH="$src:$base_path" python3 -m phalanx bench throughput "$task" --num-envs "${ENVS:-4096}" \
        --iterations "${ITERATIONS:-10}" --run-dir "$dir" >"$dir.log" 2>&1
      cp "$dir/bench.json" "$out/$task-$side-$round.json"
      python3 - "$dir/bench.json" "$task" "$side" "$round" <<'PY' | tee -a "$out/compare.log"
import json, sys
path, task, side, rnd = sys.argv[1:]
try:
    row = next(r for r in json.load(open(path))["results"] if r.get("valid"))
except (OSError, StopIteration, KeyError) as error:
    print(f"{task} {side} round {rnd}: no result ({error!r})")
    raise SystemExit
s = row["startup_s"]
print(f"{task} {side} round {rnd}: fps_step {row['fps_step']:.0f} fps_step_inference {row['fps_step_inference']:.0f} "
      f"fps_total {row['fps_total']:.0f} | first iteration {s['first_iteration']:.1f} s, build {s['model_build']:.1f} s")
PY
    done
  done
done
