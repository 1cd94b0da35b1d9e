#!/usr/bin/env bash
# Start-up on one GPU: `phalanx bench startup TASK` (cold caches, then warm) for each of $TASKS at
# $ENVS envs, with Python's bytecode compiled once beforehand as `pip install` does (set
# PYTHONDONTWRITEBYTECODE on the machine would make every process compile its sources). With
# BEFORE (a source tree holding src/, e.g. `git archive REV src | tar -x -C .device/before`), each
# task runs with that tree first, then with this checkout, on the same machine. Each run's
# bench.json and the summary tables are packed into $OUT/startup.tgz after every run, so a call
# cut short still returns the runs that finished.
#   TASKS="cartpole ant humanoid" ENVS=4096 RUNS=cold,warm BEFORE=.device/before bash tools/startup_gpu.sh
set -uo pipefail
work=/tmp/startup-gpu
out=${OUT:-bench-out}
mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1
base_path=${PYTHONPATH:-}
sides="after"
if [ -n "${BEFORE:-}" ]; then
  sides="before after"
  PYTHONPATH="$(realpath "$BEFORE")/src:$base_path" python3 -m compileall -q -j 0 "$BEFORE/src" > /dev/null 2>&1
fi
source "$(dirname "$0")/bytecode.sh"
# The first process on a fresh machine also reads torch's, Triton's and Warp's libraries from
# disk. One throwaway process that compiles with both (its caches in a directory of its own) reads
# them first, so the side that runs first does not pay it alone.
warmup=$(mktemp -d)
if WARP_CACHE_PATH=$warmup TORCHINDUCTOR_CACHE_DIR=$warmup TRITON_CACHE_DIR=$warmup \
  PYTHONPATH="$PWD/src:$base_path" python3 "$(dirname "$0")/warm_page_cache.py" > "$work/warmup.log" 2>&1; then
  echo "page cache warmed (${SECONDS}s into the script)" | tee -a "$work/startup.log"
else
  echo "page cache warm-up failed, see warmup.log (${SECONDS}s into the script)" | tee -a "$work/startup.log"
fi
rm -rf "$warmup"
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee -a "$work/gpu.txt"
for task in ${TASKS:-cartpole ant humanoid}; do
  for side in $sides; do
    src=$PWD/src
    [ "$side" = before ] && src=$(realpath "$BEFORE")/src
    echo "== $task ($side, ${SECONDS}s into the script)" | tee -a "$work/startup.log"
    PYTHONPATH="$src:$base_path" python3 -m phalanx bench startup "$task" --num-envs "${ENVS:-4096}" \
      --runs "${RUNS:-cold,warm}" --run-dir "/tmp/startup-$task-$side" 2>&1 | tail -30 | tee -a "$work/startup.log"
    cp "/tmp/startup-$task-$side/bench.json" "$work/startup-$task-$side.json"
    tar czf "$out/startup.tgz.tmp" -C "$work" . && mv "$out/startup.tgz.tmp" "$out/startup.tgz"
  done
done
