#!/usr/bin/env bash
# GPU plan for shadow-cube-vision students distilled from a trained shadow-cube teacher, one at a
# time (each alone on the GPU), in device calls of at most 10 minutes: the first call starts them in
# a session of their own (they run on between calls), each call waits up to WAIT_S seconds and
# packs what there is into $OUT.
#   call 1: START=1 TEACHER=DIR STUDENT_S=600 STUDENTS="e2e:--policy.image-targets None|keypoints:" WAIT_S=500 bash tools/distill_gpu.sh
#   later:  WAIT_S=500 bash tools/distill_gpu.sh           (again until it says the plan is done)
# TEACHER: a shadow-cube run directory (its checkpoints/model_last.pt and config.json; a carried
# one, e.g. .device/teacher). STUDENTS: NAME:FLAGS entries separated by |, each trained by
#   phalanx train shadow-cube-vision --teacher TEACHER --distill.iterations 100000 FLAGS
# and stopped by SIGTERM STUDENT_S seconds after its launch (it saves). $OUT/distill.tgz: each
# student's metrics.jsonl, config.json and log, progress.txt (launch and exit times), gpu.txt.
set -uo pipefail
out=${OUT:?set OUT}
work=/tmp/distill
if [ -n "${START:-}" ]; then
  rm -rf "$work" && mkdir -p "$work"
  cp -r src "$work/src" && cp -r "${TEACHER:?set TEACHER}" "$work/teacher"
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > "$work/gpu.txt"
  export PHALANX_COMMIT=${PHALANX_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
  cat > "$work/run.sh" <<EOS
set -uo pipefail
cd $work
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$work/src PHALANX_COMMIT=$PHALANX_COMMIT
IFS='|' read -ra students <<< "${STUDENTS:-e2e:--policy.image-targets None}"
for entry in "\${students[@]}"; do
  name=\${entry%%:*} flags=\${entry#*:}
  echo "\$name launch \$(date -u +%s) \$(date -u)" >> progress.txt
  # shellcheck disable=SC2086  # FLAGS is a word list
  timeout -s TERM ${STUDENT_S:-600} python3 -m phalanx train shadow-cube-vision --teacher $work/teacher \\
    --distill.iterations 100000 --run-dir $work/\$name --logger none --save-interval 1000000 \$flags > \$name.log 2>&1
  echo "\$name exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
done
echo "plan done" >> progress.txt
EOS
  setsid nohup bash "$work/run.sh" > "$work/run.log" 2>&1 < /dev/null &
  echo $! > "$work/pid"
fi
pid=$(cat "$work/pid")
deadline=$((SECONDS + ${WAIT_S:-500}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
cat "$work/progress.txt"
for log in "$work"/*.log; do echo "== $log"; tail -2 "$log"; done
tar -C "$work" --exclude='*/checkpoints' --exclude=src --exclude=teacher -czf "$out/distill.tgz" .
