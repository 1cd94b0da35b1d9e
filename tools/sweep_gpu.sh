#!/usr/bin/env bash
# Single-GPU plan of one device call: the GPU tests (unless SKIP_TEST), then `phalanx bench envs`
# (throughput breakdown, memory and physics-limit ratio per env count, with telemetry) for each
# of $TASKS. Results are packed into $OUT/sweep.tgz after every task.
#   TASKS="cartpole ant" bash tools/sweep_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out" /tmp/bench
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
if [ -z "${SKIP_TEST:-}" ]; then
  python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/distributed/test_distributed.py -m gpu 2>&1 | tail -15 \
    | tee "$out/gpu_tests.log"
fi
for task in ${TASKS:-cartpole ant humanoid}; do
  python3 -m phalanx bench envs "$task" --num-envs "${ENVS:-256,512,1024,2048,4096,8192,16384,32768,65536}" \
    --iterations "${ITERATIONS:-10}" --telemetry --run-dir "/tmp/bench/envs-$task" 2>&1 | tee -a "$out/sweep.log"
  tar czf "$out/sweep.tgz" -C /tmp/bench --exclude 'trace-*' .
done
