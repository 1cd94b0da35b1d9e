#!/usr/bin/env bash
# GPU plan for the quadruped controller's contact-aware stance (issue #60), on two GPUs of one host
# (nvidia-h200-x2), in one device call: the learning suite on the two tasks it changes (anymal-qp
# on GPU 0, anymal-stones-qp on GPU 1, one seed each, stopped at the result or after BUDGET_S),
# then side by side: GPU 0 the heuristic over the MPC (tools/zero_actions.py on flat ground,
# tools/stones_eval.py per stones level, STEPS env steps each: the MPC is slow), GPU 1 what
# `phalanx train --viewer` costs (tools/viewer_gpu.sh, cartpole) and the heuristic over the QP
# (the same two tools, a whole episode). Results and logs go into $OUT/contact.tgz as each step
# ends.
# The MPC's STEPS (default 100) env steps took more than 150 s for 250 at 4096 robots on an H200.
#   BUDGET_S=240 STEPS=100 bash tools/contact_gpu.sh
set -uo pipefail
out=${OUT:?set OUT}
work=/tmp/contact
mkdir -p "$work/results"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv | tee "$work/gpu.txt"
steps=${STEPS:-100}
run() {  # NAME SECONDS GPU COMMAND...: its output in NAME.log, its exit status in status.txt
  local name=$1 limit=$2 gpu=$3
  shift 3
  CUDA_VISIBLE_DEVICES=$gpu timeout -s TERM "$limit" "$@" > "$work/$name.log" 2>&1
  echo "$name: exit $? after ${SECONDS}s of the script" >> "$work/status.txt"
  local packed="$work.$BASHPID.tgz"
  tar czf "$packed" -C "$work" --exclude=learn/jobs . && mv "$packed" "$out/contact.tgz"  # runs stay (GBs)
}
run learn $((${BUDGET_S:-240} + 60)) 0,1 python3 -m phalanx bench learn anymal-qp anymal-stones-qp --seeds 1 \
  --no-cold --videos none --gpus 0,1 --budget-s "${BUDGET_S:-240}" --run-dir "$work/learn"
for job in "$work"/learn/jobs/*/; do  # each run's metrics beside the logs
  gzip -c "$job/run/metrics.jsonl" > "$work/metrics-$(basename "$job").jsonl.gz"
done
(
  run flat-mpc 240 0 python3 tools/zero_actions.py anymal-qp --body-controller mpc --steps "$steps"
  run stones-mpc 240 0 python3 tools/stones_eval.py anymal-stones-qp --body-controller mpc --steps "$steps" \
    --num-envs 2000 --label "heuristic over the MPC, $steps steps" --out "$work/results/stones-mpc.json"
) &
(
  run viewer 200 1 env OUT="$work" TASKS=cartpole:200 ROUNDS=1 bash tools/viewer_gpu.sh
  run flat-qp 100 1 python3 tools/zero_actions.py anymal-qp --body-controller qp
  run stones-qp 100 1 python3 tools/stones_eval.py anymal-stones-qp --body-controller qp \
    --label "heuristic over the QP" --out "$work/results/stones-qp.json"
) &
wait
cat "$work/status.txt"
