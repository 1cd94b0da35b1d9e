#!/usr/bin/env bash
# GPU plan for `phalanx bench learn`, in device calls of at most 10 minutes on one machine: the
# first call starts the suite in a session of its own (it runs on between calls, until the machine
# goes back), each call waits up to WAIT_S seconds for it and packs what it has into $OUT.
#   call 1:  START=1 TASKS="cartpole ant ..." ARGS="--seeds 3 --gpus 0,1,2,3" WAIT_S=500 bash tools/learn_gpu.sh
#   later:   WAIT_S=500 bash tools/learn_gpu.sh          (again until it says the suite is done)
# NAME=X keeps suite X apart (/tmp/learn-X, $OUT/learn-X.tgz, $OUT/status-X.txt): several suites
# share one GPU at once (each with --gpus 0), which overlaps their start-ups; their times then
# count a shared GPU.
# Videos (bench learn's default) need imageio and imageio-ffmpeg on the machine: stage them with
# the rest (`stage.sh ... imageio-ffmpeg==0.6.0`: 0.8.1's wheel, 68 MB, is over a carry; and
# imageio==2.38.1 pillow==12.0.0 where the machine lacks them: bench learn names what is missing
# before it starts), or pass --videos none.
# AFTER=X (with START) starts this suite once suite X has ended: two suites on one GPU one after
# the other, from one call.
# SRC=DIR (with PHALANX_COMMIT=HASH) runs another commit's code: `git archive HASH src | tar -x -C DIR`
# here, and carry DIR, to finish a suite over several sessions at one commit.
# $OUT/learn.tgz: the run directory without caches and checkpoints (bench.json, report.md, plots,
# videos, each job's train.log, metrics.jsonl and config.json); $OUT/status.txt: progress.
set -uo pipefail
out=${OUT:?set OUT}
name=${NAME:+-$NAME}
work=/tmp/learn$name
mkdir -p "$work"
if [ -n "${START:-}" ]; then
  nvidia-smi -L > "$work/gpus.txt"
  # The suite's jobs import this copy of the code: a later call may bring another working tree.
  rm -rf "$work/src" && cp -r "${SRC:-.}/src" "$work/src"
  PHALANX_COMMIT=${PHALANX_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
  export PHALANX_COMMIT PYTHONUNBUFFERED=1 PYTHONPATH="$work/src:${PYTHONPATH:-/tmp/site}"
  # TASKS and ARGS are word lists, split as the shell would: ARGS may quote --train-args="A B".
  eval "set -- $TASKS $ARGS"
  before=${AFTER:+$(cat "/tmp/learn-$AFTER/pid")}
  setsid nohup bash -c 'while [ -n "$0" ] && kill -0 "$0" 2>/dev/null; do sleep 5; done; exec python3 -m phalanx bench learn "$@"' \
    "$before" "$@" --run-dir "$work/run" > "$work/bench.log" 2>&1 < /dev/null &
  echo $! > "$work/pid"
fi
pid=$(cat "$work/pid")
deadline=$((SECONDS + ${WAIT_S:-500}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
{
  date -u
  if kill -0 "$pid" 2>/dev/null; then echo "suite running"; else echo "suite done"; fi
  cat "$work/gpus.txt"
  python3 - "$work/run/bench.json" <<'EOF'
import json, sys
try:
    results = json.load(open(sys.argv[1]))["results"]
except (OSError, ValueError):
    sys.exit("no bench.json yet")
for r in results:
    print(r["task"], r["seed"], r["status"], r.get("caches"), r.get("reached_s"), r.get("startup_s"), r.get("final_metric"))
EOF
  tail -5 "$work/bench.log"
} > "$out/status$name.txt" 2>&1
cp "$work/bench.log" "$out/bench$name.log" 2>/dev/null
tar -C "$work" --exclude='run/cache' --exclude='*/checkpoints' --exclude='events.out.tfevents*' -czf "$out/learn$name.tgz" run gpus.txt 2>/dev/null
cat "$out/status$name.txt"
