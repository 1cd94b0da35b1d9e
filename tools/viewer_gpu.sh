#!/usr/bin/env bash
# GPU plan for what `phalanx train --viewer` costs (docs/viewer.md): each task trained one run at a
# time, ROUNDS times in turn: plain, with --viewer, and with --viewer and an open page
# (tools/viewer_client.py reading all the server sends, as a browser would). One call:
#   TASKS="cartpole:200 anymal-flat:100" ROUNDS=2 bash tools/viewer_gpu.sh
# (TASK:ITERATIONS). $OUT/viewer-overhead/: TASK-MODE-ROUND.metrics.jsonl.gz and .log (logs cut
# to their first 40 and last 20 lines), client-TASK-ROUND.json (its last line: what the page
# received), gpu.txt, progress.txt, and bench.json: `python tools/viewer_overhead.py DIR --out
# DIR/bench.json` run at the end (copy the folder to docs/results/NAME/ and run `phalanx bench docs
# docs`: `bench-table viewer` in docs/viewer.md).
set -uo pipefail
out=${OUT:?set OUT}/viewer-overhead
mkdir -p "$out" /tmp/viewer-runs
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > "$out/gpu.txt"
port=8080
for round in $(seq 1 "${ROUNDS:-2}"); do
  for spec in ${TASKS:-cartpole:200 anymal-flat:100}; do
    task=${spec%%:*} iterations=${spec##*:}
    for mode in plain viewer watched; do
      name=$task-$mode-$round run=/tmp/viewer-runs/$name extra=() client=
      [ "$mode" != plain ] && extra=(--viewer --viewer-port "$port")
      if [ "$mode" = watched ]; then
        python3 tools/viewer_client.py --port "$port" --seconds 600 > "$out/client-$task-$round.json" &
        client=$!
      fi
      start=$(date +%s.%N)
      python3 -m phalanx train "$task" --max-iterations "$iterations" --run-dir "$run" --logger none "${extra[@]}" > "$run.log" 2>&1
      status=$?
      [ -n "$client" ] && kill "$client" 2>/dev/null  # it prints what it received (a run that never served: nothing)
      echo "$name rc $status launch-to-exit $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" >> "$out/progress.txt"
      wait  # the client ends when the server closes
      gzip -c "$run/metrics.jsonl" > "$out/$name.metrics.jsonl.gz"
      { head -40 "$run.log"; echo "..."; tail -20 "$run.log"; } > "$out/$name.log"
    done
  done
done
cat "$out/progress.txt"
python3 tools/viewer_overhead.py "$out" --out "$out/bench.json"
