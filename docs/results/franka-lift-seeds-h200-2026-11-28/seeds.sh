#!/usr/bin/env bash
# Experiment: franka-lift, variants x seeds, several jobs per GPU, each to --max-iterations, stopped
# when metrics/success's moving mean (5 rows) reaches 0.9. START=1 launches; every call waits WAIT_S and packs.
set -uo pipefail
out=${OUT:?}
work=/tmp/exp
if [ -n "${START:-}" ]; then
  rm -rf $work && mkdir -p $work && cp -r src $work/src && cp .exp/watch.py $work/
  nvidia-smi -L > $work/gpus.txt
  export PYTHONUNBUFFERED=1 PYTHONPATH="/tmp/site:$work/src"
  setsid nohup python3 $work/watch.py $work > $work/watch.log 2>&1 < /dev/null &
  echo $! > $work/pid
fi
pid=$(cat $work/pid)
deadline=$((SECONDS + ${WAIT_S:-500}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
cp $work/watch.log $out/ 2>/dev/null; cp $work/status.json $out/ 2>/dev/null
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv > $out/smi.txt 2>&1
tar -C $work --exclude='*/checkpoints' -czf $out/exp.tgz runs gpus.txt 2>/dev/null
tail -30 $work/watch.log
