#!/usr/bin/env bash
# GPU plan for the legged tasks (one device call, most important first; everything lands in $OUT
# as it is made, so a call cut short keeps what it reached):
#   1. phalanx bench throughput anymal-flat at $ENVS envs (fps and the raw physics limit)
#   2. train anymal-flat for TRAIN_S seconds of wall clock (then SIGINT: the trainer finishes its
#      iteration, saves and exits); metrics.jsonl gives the time to a tracking error
#   3. with NAV_S > 0: train anymal-nav for NAV_S seconds on the walker of step 2, then play it
#      on 1024 envs (success rate: goal_reached)
#   4. phalanx bench throughput anymal-rough at $ENVS envs
#   ENVS=4096 TRAIN_S=170 NAV_S=120 bash bench/legged_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
envs=${ENVS:-4096}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -m phalanx bench throughput anymal-flat --num-envs "$envs" --iterations 5 --run-dir "$out/throughput-anymal-flat" \
  2>&1 | tail -3 | tee -a "$out/legged.log"
start=$(date +%s.%N)
timeout -s INT "${TRAIN_S:-170}" python3 -m phalanx train anymal-flat --num-envs "$envs" --max-iterations 100000 \
  --save-interval 100000 --run-dir "$out/train-anymal-flat" >"$out/train-anymal-flat.log" 2>&1
echo "anymal-flat training: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s wall clock from launch" | tee -a "$out/legged.log"
mv "$out/train-anymal-flat/checkpoints/model_last.pt" /tmp/anymal-flat.pt
rm -rf "$out/train-anymal-flat/checkpoints" "$out"/train-anymal-flat/events.out*
# 3. anymal-nav on top of that walker for NAV_S seconds (metrics/goal_reached = success rate)
if [ "${NAV_S:-0}" -gt 0 ]; then
  timeout -s INT "$NAV_S" python3 -m phalanx train anymal-nav --num-envs "$envs" --max-iterations 100000 \
    --save-interval 100000 --low-level-checkpoint /tmp/anymal-flat.pt --run-dir "$out/train-anymal-nav" \
    >"$out/train-anymal-nav.log" 2>&1
  python3 -m phalanx play anymal-nav --checkpoint "$out/train-anymal-nav/checkpoints/model_last.pt" --num-envs 1024 \
    2>&1 | tail -1 | tee -a "$out/legged.log"  # the success rate over 1024 episodes
  rm -rf "$out/train-anymal-nav/checkpoints" "$out"/train-anymal-nav/events.out*
fi
python3 -m phalanx bench throughput anymal-rough --num-envs "$envs" --iterations 5 --run-dir "$out/throughput-anymal-rough" \
  2>&1 | tail -3 | tee -a "$out/legged.log"
