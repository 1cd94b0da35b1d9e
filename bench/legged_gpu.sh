#!/usr/bin/env bash
# GPU plan for the legged tasks (one device call, most important first; everything lands in $OUT
# as it is made, so a call cut short keeps what it reached):
#   1. phalanx bench throughput anymal-flat at $ENVS envs (fps and the raw physics limit)
#   2. train anymal-flat for TRAIN_S seconds of wall clock (then SIGINT: the trainer finishes its
#      iteration, saves and exits); metrics.jsonl gives the time to a tracking error
#   3. phalanx bench throughput anymal-rough at $ENVS envs
#   ENVS=4096 TRAIN_S=170 bash bench/legged_gpu.sh
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
rm -rf "$out/train-anymal-flat/checkpoints" "$out"/train-anymal-flat/events.out*
python3 -m phalanx bench throughput anymal-rough --num-envs "$envs" --iterations 5 --run-dir "$out/throughput-anymal-rough" \
  2>&1 | tail -3 | tee -a "$out/legged.log"
