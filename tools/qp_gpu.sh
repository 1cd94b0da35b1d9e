#!/usr/bin/env bash
# The batched QP solver's two backends on one GPU (torch steps, eager and compiled; one Warp
# kernel), on the same machine: the GPU tests of the solver and of anymal-qp with the kernel
# inside CUDA graphs, the solver alone (tools/qp_speed.py), the controller alone, anymal-qp's
# training throughput with each backend, ADMM against the interior point (tools/qp_methods.py),
# then the GPU tests of the QP tasks. Every result and log is packed into $OUT/qp.tgz after each
# step: a call cut short (by its time limit, or the device time left) still returns what the
# finished steps measured. A device call runs at most 10 minutes: STEPS picks the steps.
# Steps not in the default: block-dims (the kernel's QPs/s per threads per block, BLOCK_DIMS) and
# stones-blocks (anymal-stones-qp's throughput at each of STONES_BLOCK_DIMS, "default" for none
# given, in that order; the first run also compiles what the others share).
#   STEPS="gpu-tests qp-speed controller" bash tools/qp_gpu.sh; STEPS="anymal-qp qp-methods task-tests" bash tools/qp_gpu.sh
#   STEPS="block-dims stones-blocks" STONES_BLOCK_DIMS="default 32 64 default" bash tools/qp_gpu.sh
set -uo pipefail
work=/tmp/qp-gpu
out=${OUT:-bench-out}
mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1
steps=" ${STEPS:-gpu-tests qp-speed controller anymal-qp qp-methods task-tests} "
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee "$work/gpu.txt"
run() {  # NAME SECONDS COMMAND...: its output in NAME.log, its exit status in status.txt
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$work/$name.log" 2>&1
  echo "$name: exit $? after ${SECONDS}s of the script" | tee -a "$work/status.txt"
  tar czf "$out/qp.tgz.tmp" -C "$work" . && mv "$out/qp.tgz.tmp" "$out/qp.tgz"
}
want() { [[ $steps == *" $1 "* ]]; }
if want gpu-tests; then
  run gpu-tests 240 python3 -m pytest -q -m gpu tests/test_gpu.py -k "qp_solver or qp_kernel"
fi
if want qp-speed; then
  run qp-speed 240 python3 tools/qp_speed.py --compile --backends "${BACKENDS:-torch,warp}" --out "$work/qp-speed.json"
fi
if want block-dims; then
  run block-dims 240 python3 tools/qp_speed.py --backends warp --iterations 25 \
    --block-dims "${BLOCK_DIMS:-32,64,128,256}" --out "$work/block-dims.json"
fi
if want stones-blocks; then
  i=0
  for dim in ${STONES_BLOCK_DIMS:-default 32 64 default}; do
    i=$((i + 1))
    args=()
    [ "$dim" = default ] || args=("--train-args=--env.actions.controller.params.qp-block-dim $dim")
    run "stones-$i-$dim" 300 python3 -m phalanx bench throughput anymal-stones-qp --num-envs 4096 --iterations 10 \
      --run-dir "$work/stones-$i-$dim" "${args[@]}"
  done
fi
if want controller; then
  for backend in warp torch; do
    run "controller-$backend" 90 python3 tools/quadruped_controller_speed.py --batches 1024,4096,16384,65536 \
      --qp-backend "$backend" --out "$work/controller-$backend.json"
  done
fi
if want anymal-qp; then
  for backend in warp torch; do
    run "anymal-qp-$backend" 200 python3 -m phalanx bench throughput anymal-qp --num-envs 4096 --iterations 10 \
      --run-dir "$work/anymal-qp-$backend" --train-args="--env.actions.controller.params.qp-backend $backend"
  done
fi
if want qp-methods; then
  for backend in warp torch; do
    run "qp-methods-$backend" 120 python3 tools/qp_methods.py --device cuda --dtype float32 --admm-backend "$backend" \
      --out "$work/qp-methods-$backend.json"
  done
fi
if want task-tests; then
  run task-tests 240 python3 -m pytest -q -m gpu tests/test_gpu.py -k "anymal-qp or stones-qp"
fi
