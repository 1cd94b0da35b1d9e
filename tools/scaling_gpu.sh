#!/usr/bin/env bash
# Multi-GPU plan of one device call: the 2-GPU tests (NCCL in graphs, train exits; unless SKIP_TEST), then `phalanx
# bench scaling` for each TASK:MODE:ENVS of $PLAN over $GPUS. Everything under /tmp/bench
# (bench.json, report.md, scaling.png, each job's job.log and metrics) is packed into
# $OUT/scaling.tgz every 20 s, so a call cut short still returns what it reached. A rank still
# running after STACK_AFTER_S seconds prints its Python stacks into its job.log (SIGUSR1, which
# `phalanx train` answers with faulthandler; the rank keeps running).
#   PLAN="cartpole:weak:4096 ant:strong:16384" GPUS=1,2,4 bash tools/scaling_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out" /tmp/bench
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
nvidia-smi topo -m >"$out/topology.txt" 2>&1
pack() { tar czf "$out/scaling.tgz.tmp" -C /tmp/bench --exclude '*.pt' --exclude 'events.out*' . && mv "$out/scaling.tgz.tmp" "$out/scaling.tgz"; }
(
  while sleep 20; do
    pack
    for pid in $(pgrep -f "phalanx train"); do
      grep -q "distributed.run" "/proc/$pid/cmdline" 2>/dev/null && continue
      [ "$(ps -o etimes= -p "$pid" 2>/dev/null || echo 0)" -gt "${STACK_AFTER_S:-150}" ] || continue
      [ -e "/tmp/bench/.dumped-$pid" ] || { kill -USR1 "$pid"; touch "/tmp/bench/.dumped-$pid"; }
    done
  done
) &
watcher=$!
train_args=""
if [ -z "${SKIP_TEST:-}" ]; then
  python3 -m pytest -q -p no:cacheprovider tests/distributed/test_distributed.py -m gpu 2>&1 | tail -15 | tee "$out/nccl_test.log"
  # If NCCL collectives cannot live in the trainer's graphs, measure the eager trainer instead.
  grep -q "2 passed" "$out/nccl_test.log" || train_args="--capture-update False --capture-rollout False"
fi
for spec in ${PLAN:-cartpole:weak:4096 cartpole:strong:16384}; do
  IFS=: read -r task mode envs <<<"$spec"
  python3 -m phalanx bench scaling "$task" --mode "$mode" --num-envs "$envs" --gpus "${GPUS:-1,2,4}" \
    --iterations "${ITERATIONS:-15}" --telemetry --train-args="$train_args ${TRAIN_ARGS:-}" \
    --job-timeout-s "${JOB_TIMEOUT_S:-600}" --run-dir "/tmp/bench/scaling-$mode-$task-$envs" 2>&1 | tee -a "$out/scaling.log"
  pack
done
kill "$watcher"
