#!/usr/bin/env bash
# Multi-GPU plan of one device call: the NCCL-in-graphs test, then `phalanx bench scaling` for
# each TASK:MODE:ENVS of $PLAN over $GPUS. Results (bench.json, report.md, scaling.png, each
# job's metrics) are packed into $OUT/scaling.tgz after every bench, so a call cut short still
# returns what finished.
#   PLAN="cartpole:weak:4096 ant:strong:16384" GPUS=1,2,4 bash bench/scaling_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out" /tmp/bench
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
nvidia-smi topo -m >"$out/topology.txt" 2>&1
train_args=""
if [ -z "${SKIP_TEST:-}" ]; then
  python3 -m pytest -q -p no:cacheprovider tests/test_distributed.py -k nccl 2>&1 | tail -15 | tee "$out/nccl_test.log"
  # If NCCL collectives cannot live in the trainer's graphs, measure the eager trainer instead.
  grep -q "1 passed" "$out/nccl_test.log" || train_args="--capture-update False --capture-rollout False"
fi
for spec in ${PLAN:-cartpole:weak:4096 cartpole:strong:16384}; do
  IFS=: read -r task mode envs <<<"$spec"
  python3 -m phalanx bench scaling "$task" --mode "$mode" --num-envs "$envs" --gpus "${GPUS:-1,2,4}" \
    --iterations "${ITERATIONS:-15}" --telemetry --train-args="$train_args ${TRAIN_ARGS:-}" \
    --run-dir "/tmp/bench/scaling-$mode-$task-$envs" 2>&1 | grep -v "^\s*$" | tee -a "$out/scaling.log"
  tar czf "$out/scaling.tgz" -C /tmp/bench --exclude '*.pt' --exclude 'events.out*' --exclude 'trace-*' .
done
