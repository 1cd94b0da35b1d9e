#!/usr/bin/env bash
# Start-up on one GPU: `phalanx bench startup TASK` (cold caches, then warm) for each of $TASKS at
# $ENVS envs. A device call brings back at most 8 files: each task's bench.json goes to
# $OUT/startup-TASK.json, its tables to $OUT/startup.log; the run directories stay in /tmp.
#   TASKS="cartpole ant humanoid" ENVS=4096 bash bench/startup_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee -a "$out/gpu.txt"
for task in ${TASKS:-cartpole ant humanoid}; do
  python3 -m phalanx bench startup "$task" --num-envs "${ENVS:-4096}" --run-dir "/tmp/startup-$task" 2>&1 \
    | tail -8 | tee -a "$out/startup.log"
  cp "/tmp/startup-$task/bench.json" "$out/startup-$task.json"
done
