#!/usr/bin/env bash
# franka-reach variants, each trained for $SECS (120) s from launch (SIGTERM), then played for one
# episode of 4096 envs with exact observations. One argument per variant, NAME=FLAGS (the flags
# added to `phalanx train franka-reach`); an untimed one-iteration run warms the caches first.
# Everything goes to $OUT/reach.tgz, packed after each variant.
#   bash tools/reach_gpu.sh "default=" "fine=--env.rewards.position-fine.params.std 0.02"
set -uo pipefail
export PYTHONUNBUFFERED=1
o=/tmp/reach-out; rm -rf $o; mkdir -p $o
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee $o/gpu.txt
source tools/bytecode.sh
pack() { tar czf "$OUT/reach.tgz" -C $o . ; }
python3 -m phalanx train franka-reach --max-iterations 1 --run-dir /tmp/reach-warm-up --logger none > $o/warm-up.log 2>&1
for spec in "$@"; do
  name=${spec%%=*}; flags=${spec#*=}
  t0=$EPOCHREALTIME
  # shellcheck disable=SC2086  # the flags split into words
  timeout -s TERM "${SECS:-120}" python3 -m phalanx train franka-reach $flags --run-dir "/tmp/$name" --logger none \
    --save-interval 25 > "$o/$name-train.log" 2>&1
  rc=$?
  python3 -c "print('$name ($flags): train exit $rc after', round($EPOCHREALTIME - $t0, 1), 's from launch')" | tee -a $o/summary.txt
  cp "/tmp/$name/metrics.jsonl" "$o/$name.jsonl"
  python3 -m phalanx play franka-reach --checkpoint "/tmp/$name/checkpoints/model_last.pt" --num-envs 4096 --steps 401 \
    > "$o/$name-play.log" 2>&1
  tail -n 12 "$o/$name-play.log"
  pack
done
