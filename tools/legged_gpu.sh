#!/usr/bin/env bash
# GPU plan for the legged tasks, in steps that each fit one device call (everything lands in $OUT
# as it is made, so a call cut short keeps what it reached; a device call brings back at most 8
# files, so runs live in /tmp and $OUT gets their metrics, log tail and the policy alone).
# STEPS picks them, in this order:
#   flat-bench   phalanx bench throughput anymal-flat at $ENVS envs (fps and the raw physics limit)
#   flat-train   train anymal-flat for TRAIN_S s of wall clock (then SIGINT: the trainer finishes
#                its iteration, saves and exits); metrics.jsonl gives the time to a tracking error;
#                the walker is kept in /tmp/anymal-flat.pt (and its policy in $OUT)
#   nav          train anymal-nav for NAV_S s on that walker (or $WALKER), then play it on 1024
#                envs (success rate: goal_reached)
#   rough-bench  phalanx bench throughput anymal-rough at $ENVS envs
#   rough-train  train anymal-rough for ROUGH_S s (env/terrain_level over time); with
#                ROUGH_RESUME=1 it continues the run in /tmp/anymal-rough (a second call)
#   ENVS=4096 TRAIN_S=170 STEPS="flat-bench flat-train" bash tools/legged_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
envs=${ENVS:-4096}
steps=" ${STEPS:-flat-bench flat-train nav rough-bench} "
has() { [[ "$steps" == *" $1 "* ]]; }
since() { python3 -c "print(round($(date +%s.%N) - $1, 1))"; }
# keep(RUN, NAME): the run's metrics, the end of its log and its checkpoint without the env and
# optimizer state (enough for `phalanx play`) into $OUT
keep() {
  cp "$1/metrics.jsonl" "$out/train-$2.jsonl"
  tail -c 20000 "$1.log" >"$out/train-$2.log"
  python3 -c "import sys, torch; s = torch.load(sys.argv[1], map_location='cpu', weights_only=True)
torch.save({k: s[k] for k in ('task', 'config', 'iteration', 'frames', 'policy', 'obs_norm')}, sys.argv[2])" \
    "$1/checkpoints/model_last.pt" "$out/$2.pt"
}
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee "$out/gpu.txt"

if has flat-bench; then
  python3 -m phalanx bench throughput anymal-flat --num-envs "$envs" --iterations 5 \
    --run-dir "$out/throughput-anymal-flat" 2>&1 | tail -3 | tee -a "$out/legged.log"
  rm -f "$out/throughput-anymal-flat/phases.png"
fi
if has flat-train; then
  start=$(date +%s.%N)
  timeout --foreground -s INT "${TRAIN_S:-170}" python3 -m phalanx train anymal-flat --num-envs "$envs" --max-iterations 100000 \
    --save-interval 100000 --run-dir /tmp/anymal-flat >/tmp/anymal-flat.log 2>&1
  rc=$?
  echo "anymal-flat training: $(since "$start") s wall clock from launch, exit $rc" | tee -a "$out/legged.log"
  cp /tmp/anymal-flat/checkpoints/model_last.pt /tmp/anymal-flat.pt
  keep /tmp/anymal-flat anymal-flat
fi
if has nav; then
  timeout --foreground -s INT "${NAV_S:-120}" python3 -m phalanx train anymal-nav --num-envs "$envs" \
    --max-iterations 100000 --save-interval 100000 --env.actions.low-level.checkpoint "${WALKER:-/tmp/anymal-flat.pt}" \
    --run-dir /tmp/anymal-nav >/tmp/anymal-nav.log 2>&1
  rc=$?
  echo "anymal-nav training: exit $rc" | tee -a "$out/legged.log"
  python3 -m phalanx play anymal-nav --checkpoint /tmp/anymal-nav/checkpoints/model_last.pt --num-envs 1024 \
    2>&1 | tail -2 | tee -a "$out/legged.log"  # the success rate over 1024 episodes
  keep /tmp/anymal-nav anymal-nav
fi
if has rough-bench; then
  python3 -m phalanx bench throughput anymal-rough --num-envs "$envs" --iterations 5 \
    --run-dir "$out/throughput-anymal-rough" 2>&1 | tail -3 | tee -a "$out/legged.log"
  rm -f "$out/throughput-anymal-rough/phases.png"
fi
if has rough-train; then
  resume=()
  [ "${ROUGH_RESUME:-0}" = 1 ] && resume=(--resume last)
  start=$(date +%s.%N)
  timeout --foreground -s INT "${ROUGH_S:-500}" python3 -m phalanx train anymal-rough --num-envs "$envs" --max-iterations 100000 \
    --save-interval 100000 --run-dir /tmp/anymal-rough "${resume[@]}" >>/tmp/anymal-rough.log 2>&1
  rc=$?
  echo "anymal-rough training: $(since "$start") s wall clock from launch, exit $rc" | tee -a "$out/legged.log"
  keep /tmp/anymal-rough anymal-rough
fi
