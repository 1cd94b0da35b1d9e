#!/usr/bin/env bash
# The batched QP solver's two backends on one GPU (torch steps, eager and compiled; one Warp
# kernel), on the same machine: the GPU test of the kernel inside a CUDA graph, the solver alone
# (bench/qp_speed.py), the controller alone, anymal-qp's training throughput with each backend,
# ADMM against the interior point (bench/qp_methods.py), then the GPU tests of the QP tasks.
# Every result and log is packed into $OUT/qp.tgz after each step: a call cut short (by its time
# limit, or the device time left) still returns what the finished steps measured.
# A device call runs at most 10 minutes: PART=1 runs the test, the solver and the controller, PART=2
# the rest (on the same warm machine); without PART, both.
#   PART=1 bash bench/qp_gpu.sh; PART=2 bash bench/qp_gpu.sh
set -uo pipefail
work=/tmp/qp-gpu
out=${OUT:-bench-out}
mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee "$work/gpu.txt"
run() {  # NAME SECONDS COMMAND...: its output in NAME.log, its exit status in status.txt
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$work/$name.log" 2>&1
  echo "$name: exit $? after ${SECONDS}s of the script" | tee -a "$work/status.txt"
  tar czf "$out/qp.tgz.tmp" -C "$work" . && mv "$out/qp.tgz.tmp" "$out/qp.tgz"
}
part=${PART:-12}
if [[ $part == *1* ]]; then
  run gpu-test-solver 120 python3 -m pytest -q -m gpu tests/test_gpu.py -k qp_solver
  run qp-speed 240 python3 bench/qp_speed.py --compile --out "$work/qp-speed.json"
  for backend in warp torch; do
    run "controller-$backend" 90 python3 bench/quadruped_controller_speed.py --batches 1024,4096,16384,65536 \
      --qp-backend "$backend" --out "$work/controller-$backend.json"
  done
fi
[[ $part == *2* ]] || exit 0
for backend in warp torch; do
  run "anymal-qp-$backend" 200 python3 -m phalanx bench throughput anymal-qp --num-envs 4096 --iterations 10 \
    --run-dir "$work/anymal-qp-$backend" --train-args="--env.actions.controller.params.qp-backend $backend"
done
for backend in warp torch; do
  run "qp-methods-$backend" 120 python3 bench/qp_methods.py --device cuda --dtype float32 --admm-backend "$backend" \
    --out "$work/qp-methods-$backend.json"
done
run gpu-tests-tasks 240 python3 -m pytest -q -m gpu tests/test_gpu.py -k "anymal-qp or stones-qp"
