#!/usr/bin/env bash
# Start-up on one GPU: `phalanx bench startup TASK` (cold caches, then warm) for each of $TASKS at
# $ENVS envs, with Python's bytecode compiled once beforehand as `pip install` does (set
# PYTHONDONTWRITEBYTECODE on the machine would make every process compile its sources). A device
# call brings back at most 8 files: each task's bench.json goes to $OUT/startup-TASK$TAG.json, the
# tables to $OUT/startup.log; the run directories stay in /tmp.
#   TASKS="cartpole ant humanoid" ENVS=4096 RUNS=cold,warm TAG=-after bash bench/startup_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
source "$(dirname "$0")/bytecode.sh"
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee -a "$out/gpu.txt"
tag=${TAG:-}
for task in ${TASKS:-cartpole ant humanoid}; do
  python3 -m phalanx bench startup "$task" --num-envs "${ENVS:-4096}" --runs "${RUNS:-cold,warm}" \
    --run-dir "/tmp/startup-$task$tag" 2>&1 | tail -8 | tee -a "$out/startup.log"
  cp "/tmp/startup-$task$tag/bench.json" "$out/startup-$task$tag.json"
done
