#!/usr/bin/env bash
# GPU plan for the trainer: GPU tests, then train cartpole and ant with their defaults and play
# cartpole; metrics come back under $OUT (run directories stay on the machine).
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -4 | tee "$out/gpu_tests.log"
for task in ${TASKS-cartpole ant}; do
  iters=$([ "$task" = cartpole ] && echo 150 || echo "${LOCOMOTION_ITERATIONS:-300}")
  /usr/bin/time -f "$task wall %e s" python3 -m phalanx train "$task" --max-iterations "$iters" --run-dir "/tmp/runs/$task" \
    2>&1 | grep -E "phalanx train|epoch: (1|10|20|30|40|50|75|100|150|200|250|300|400|500|600|700|800|900|1000)/|done|wall|error|Error" \
    | tee "$out/train_$task.log"
  cp "/tmp/runs/$task/metrics.jsonl" "$out/metrics_$task.jsonl"
done
[ -n "${SKIP_EXTRA:-}" ] && exit 0
# what the rollout and update graphs buy: the same cartpole run with both off
python3 -m phalanx train cartpole --max-iterations 30 --capture-update False --capture-rollout False \
  --run-dir /tmp/runs/cartpole-eager 2>&1 | grep -E "epoch: (10|20|30)/" | tee "$out/train_cartpole_uncaptured.log"
python3 -m phalanx play cartpole --checkpoint /tmp/runs/cartpole/checkpoints/model_last.pt --num-envs 64 2>&1 \
  | tail -2 | tee "$out/play_cartpole.log"
