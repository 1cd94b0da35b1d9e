#!/usr/bin/env bash
# Solver budget and torch.compile per task, measured by training: each task trains $ITERS
# iterations at $ENVS envs with its defaults and with each alternative of $SETTINGS, alternating,
# and $OUT gets each run's metrics.jsonl (fps_total and the learning curve side by side).
#   SETTINGS="default:|fast:--env.sim.iterations 4 --env.sim.ls-iterations 6" TASKS="ant humanoid" \
#     ITERS=300 bash tools/solver_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$out/gpu.txt"
IFS='|' read -ra settings <<< "${SETTINGS:-default:}"
for task in ${TASKS:-ant}; do
  for setting in "${settings[@]}"; do
    name=${setting%%:*}
    # shellcheck disable=SC2086  # the setting's flags split into words
    python3 -m phalanx train "$task" --num-envs "${ENVS:-4096}" --max-iterations "${ITERS:-300}" \
      --run-dir "/tmp/solver/$task-$name" ${setting#*:} > "/tmp/solver-$task-$name.log" 2>&1
    echo "$task $name exit $? $(tail -1 "/tmp/solver-$task-$name.log")" | tee -a "$out/gpu.txt"
    cp "/tmp/solver/$task-$name/metrics.jsonl" "$out/solver-$task-$name.jsonl"
  done
done
