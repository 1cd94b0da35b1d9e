#!/usr/bin/env bash
# The centroidal MPC baseline of issue #60 against the instant force QP, on one GPU: the
# controller alone (tools/quadruped_controller_speed.py, the body controller's share), anymal-qp's
# training throughput at 4096 envs, the heuristic high level over each on flat ground
# (tools/zero_actions.py: tracking errors) and per stones level (tools/stones_eval.py), after the
# GPU test of the MPC inside a captured env step. Every
# result and log is packed into $OUT/mpc.tgz after each step: a call cut short still returns what
# the finished steps measured. A device call runs at most 10 minutes: STEPS picks the steps.
#   STEPS="gpu-test controller throughput" bash tools/mpc_gpu.sh; STEPS="flat stones" bash tools/mpc_gpu.sh
set -uo pipefail
work=/tmp/mpc-gpu
out=${OUT:-bench-out}
mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1
steps=" ${STEPS:-gpu-test controller throughput flat stones} "
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee "$work/gpu.txt"
run() {  # NAME SECONDS COMMAND...: its output in NAME.log, its exit status in status.txt
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$work/$name.log" 2>&1
  echo "$name: exit $? after ${SECONDS}s of the script" | tee -a "$work/status.txt"
  tar czf "$out/mpc.tgz.tmp" -C "$work" . && mv "$out/mpc.tgz.tmp" "$out/mpc.tgz"
}
want() { [[ $steps == *" $1 "* ]]; }
if want gpu-test; then
  run gpu-test 240 python3 -m pytest -q -m gpu tests/test_gpu.py -k "mpc"
fi
for body in qp mpc; do
  flag=$([ $body = mpc ] && echo --mpc)
  if want controller; then
    run "controller-$body" 200 python3 tools/quadruped_controller_speed.py --batches 1024,4096,16384 \
      --qp-backend torch $flag --out "$work/controller-$body.json"
  fi
  if want throughput; then
    run "throughput-$body" 240 python3 -m phalanx bench throughput anymal-qp --num-envs 4096 --iterations 10 \
      "--train-args=--env.actions.controller.params.body-controller $body" --run-dir "$work/throughput-$body"
  fi
  if want flat; then
    run "flat-$body" 240 python3 tools/zero_actions.py anymal-qp --body-controller $body
  fi
  if want stones; then
    run "stones-$body" 300 python3 tools/stones_eval.py anymal-stones-qp --body-controller $body \
      --label "heuristic over the $(tr a-z A-Z <<<$body)" --out "$work/stones-$body.json"
  fi
done
rm -rf "$work"/throughput-*/cache
tar czf "$out/mpc.tgz.tmp" -C "$work" . && mv "$out/mpc.tgz.tmp" "$out/mpc.tgz"
cat "$work/status.txt"
