#!/usr/bin/env bash
# GPU plan for shadow-cube-vision students distilled from a shadow-cube teacher, one at a time
# (each alone on the GPU), in device calls of at most 10 minutes: the first call starts the plan in
# a session of its own (it runs on between calls), each call waits up to WAIT_S seconds and packs
# what there is into $OUT.
#   call 1: START=1 TEACHER=DIR STUDENT_S=600 STUDENTS="e1:|e4:--env.observations.image.eye.params.every 4" WAIT_S=500 bash tools/distill_gpu.sh
#   call 1: START=1 TEACHER_S=560 TEACHER_ARGS="--num-envs 2048 --seed 42" STUDENT_S=780 STUDENTS="e1:" VIDEO=1 bash tools/distill_gpu.sh
#   later:  WAIT_S=500 bash tools/distill_gpu.sh           (again until it says the plan is done)
# TEACHER: a trained shadow-cube run directory (its checkpoints/model_last.pt and config.json; a
# carried one, e.g. .device/teacher). Without it, TEACHER_S: the plan first trains the teacher,
#   phalanx train shadow-cube --max-iterations 100000 TEACHER_ARGS
# stopped by SIGTERM TEACHER_S seconds after its launch (it saves).
# STUDENTS: NAME:FLAGS entries separated by |, each trained by
#   phalanx train shadow-cube-vision --teacher TEACHER --distill.iterations 100000 FLAGS
# and stopped by SIGTERM STUDENT_S seconds after its launch (it saves). VIDEO=1: then
#   phalanx play shadow-cube-vision --checkpoint NAME --steps 600 --video NAME.mp4
# (the camera's images beside the scene; needs imageio-ffmpeg staged).
# $OUT/distill.tgz: each run's metrics.jsonl, config.json and log, the videos, progress.txt (launch
# and exit times), gpu.txt, gpumem.txt (memory and use every 20 s); $OUT/checkpoints.tgz: the
# teacher's and each student's model_last.pt and config.json, to carry into a later session.
set -uo pipefail
out=${OUT:?set OUT}
work=/tmp/distill
if [ -n "${START:-}" ]; then
  rm -rf "$work" && mkdir -p "$work"
  cp -r src "$work/src"
  if [ -n "${TEACHER:-}" ]; then cp -r "$TEACHER" "$work/teacher"; else : "${TEACHER_S:?set TEACHER or TEACHER_S}"; fi
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > "$work/gpu.txt"
  export PHALANX_COMMIT=${PHALANX_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
  cat > "$work/run.sh" <<EOS
set -uo pipefail
cd $work
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$work/src PHALANX_COMMIT=$PHALANX_COMMIT
(while true; do echo "\$(date -u +%T) \$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)"; sleep 20; done) > gpumem.txt &
sampler=\$!
if [ ! -d teacher ]; then
  echo "teacher launch \$(date -u +%s) \$(date -u)" >> progress.txt
  # shellcheck disable=SC2086  # TEACHER_ARGS is a word list
  timeout -s TERM ${TEACHER_S:-0} python3 -m phalanx train shadow-cube --max-iterations 100000 --run-dir $work/teacher \\
    --logger none --save-interval 1000000 ${TEACHER_ARGS:-} > teacher.log 2>&1
  echo "teacher exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
fi
IFS='|' read -ra students <<< "${STUDENTS:-e1:}"
for entry in "\${students[@]}"; do
  name=\${entry%%:*} flags=\${entry#*:}
  echo "\$name launch \$(date -u +%s) \$(date -u)" >> progress.txt
  # shellcheck disable=SC2086  # FLAGS is a word list
  timeout -s TERM ${STUDENT_S:-600} python3 -m phalanx train shadow-cube-vision --teacher $work/teacher \\
    --distill.iterations 100000 --run-dir $work/\$name --logger none --save-interval 1000000 \$flags > \$name.log 2>&1
  echo "\$name exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
done
if [ -n "${VIDEO:-}" ]; then
  for entry in "\${students[@]}"; do
    name=\${entry%%:*}
    timeout 300 python3 -m phalanx play shadow-cube-vision --checkpoint $work/\$name --steps 600 --video \$name.mp4 \\
      --out \$name.play.json > \$name.play.log 2>&1
    echo "\$name video exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
  done
fi
kill \$sampler
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
tail -1 "$work/gpumem.txt"
tar -C "$work" --exclude='*/checkpoints' --exclude=src -czf "$out/distill.tgz" .
(cd "$work" && ls -d ./*/checkpoints/model_last.pt 2>/dev/null | sed 's|/checkpoints/model_last.pt||' |
  while read -r run; do echo "$run/checkpoints/model_last.pt" "$run/config.json"; done |
  xargs -r tar -czf "$out/checkpoints.tgz")
true
