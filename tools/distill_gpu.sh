#!/usr/bin/env bash
# GPU plan for students distilled from a shadow-cube teacher, in device calls of at most 10
# minutes: the first call starts the plan in a session of its own (it runs on between calls), each
# call waits up to WAIT_S seconds and packs what there is into $OUT.
#   call 1: START=1 TEACHER=.device/teacher STUDENT_S=600 STUDENTS="e1:|e4:--env.observations.image.eye.params.every 4" bash tools/distill_gpu.sh
#   call 1: START=1 TEACHER_S=560 TEACHER_ARGS="--num-envs 2048 --seed 42" STUDENT_S=780 STUDENTS="e1:" VIDEO=e1 bash tools/distill_gpu.sh
#   call 1: START=1 TEACHER_PROGRAM=tools/shadow_corners_probe.py TEACHER_S=560 STUDENT_S=800 STUDENTS="e1:" bash tools/distill_gpu.sh
#   later:  WAIT_S=500 bash tools/distill_gpu.sh           (again until it says the plan is done and no
#           checkpoint parts are left to send)
# TEACHER: a trained shadow-cube run directory (its checkpoints/model_last.pt and config.json; a
# carried one). Without it, TEACHER_S: the plan first trains the teacher,
#   python3 TEACHER_PROGRAM --max-iterations 100000 TEACHER_ARGS
# stopped by SIGTERM TEACHER_S seconds after its launch (it saves). TEACHER_PROGRAM is
# `-m phalanx train shadow-cube`, or tools/shadow_corners_probe.py: a teacher acting on the cube's corners.
# STUDENTS: NAME:FLAGS entries separated by |, each trained by
#   python3 PROGRAM --teacher TEACHER --distill.iterations 100000 --run-dir NAME FLAGS
# and stopped by SIGTERM STUDENT_S seconds after its launch (it saves). PROGRAM is
# `-m phalanx train shadow-cube-vision`, or the entry's own after an @ in NAME:
#   self@-m phalanx train shadow-cube:       the teacher's own task (the imitation's ceiling)
#   corners@tools/shadow_corners_probe.py:   the pixel actor's inputs with the cube's true corners
# One after another, each alone on the GPU; AT_ONCE=1: all at once, side by side.
# EVAL=1: then tools/noise_goals.py on the teacher and each student on the GPU (EVAL_ENVS envs, 1024),
# into noise-goals.jsonl: the goals each reaches in 30 s acting on its mean, with half and all of its noise.
# VIDEO=NAME ...: then `phalanx play shadow-cube-vision --checkpoint NAME --steps 600 --video
# NAME.mp4` for those students (the camera's images beside the scene; needs imageio-ffmpeg staged).
# $OUT/distill.tgz: each run's metrics.jsonl, config.json and log, students.json (the bench.json of
# `bench-table students`, by tools/student_runs.py), the videos, progress.txt (launch and exit
# times), gpu.txt, gpumem.txt (memory and use every 20 s, and each run's memory);
# $OUT/checkpoints.tgz.part-*: the teacher's and each student's model_last.pt and config.json, to
# carry into a later session.
set -uo pipefail
out=${OUT:?set OUT}
work=/tmp/distill
if [ -n "${START:-}" ]; then
  rm -rf "$work" && mkdir -p "$work"
  cp -r src tools "$work/"
  if [ -n "${TEACHER:-}" ]; then cp -r "$TEACHER" "$work/teacher"; else : "${TEACHER_S:?set TEACHER or TEACHER_S}"; fi
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > "$work/gpu.txt"
  export PHALANX_COMMIT=${PHALANX_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
  cat > "$work/run.sh" <<EOS
set -uo pipefail
cd $work
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$work/src PHALANX_COMMIT=$PHALANX_COMMIT
apps() {  # each process's GPU memory, named by its run directory where /proc shows it
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | while IFS=', ' read -r pid mib; do
    run=\$({ tr '\\0' ' ' < /proc/\$pid/cmdline; } 2>/dev/null | grep -o -- '--run-dir [^ ]*' | sed 's|.*/||')
    printf ' %s=%sMiB' "\${run:-\$pid}" "\$mib"
  done
}
(while true; do echo "\$(date -u +%T) \$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)\$(apps)"; sleep 20; done) > gpumem.txt &
sampler=\$!
if [ ! -d teacher ]; then
  echo "teacher launch \$(date -u +%s) \$(date -u)" >> progress.txt
  # shellcheck disable=SC2086  # TEACHER_PROGRAM and TEACHER_ARGS are word lists
  timeout -s TERM ${TEACHER_S:-0} python3 ${TEACHER_PROGRAM:--m phalanx train shadow-cube} --max-iterations 100000 --run-dir $work/teacher \\
    --logger none --save-interval 1000000 ${TEACHER_ARGS:-} > teacher.log 2>&1
  echo "teacher exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
fi
student() {  # NAME PROGRAM FLAGS
  echo "\$1 launch \$(date -u +%s) \$(date -u)" >> progress.txt
  # shellcheck disable=SC2086  # PROGRAM and FLAGS are word lists
  timeout -s TERM ${STUDENT_S:-600} python3 \$2 --teacher $work/teacher --distill.iterations 100000 \\
    --run-dir $work/\$1 --logger none --save-interval 1000000 \$3 > \$1.log 2>&1
  echo "\$1 exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
}
IFS='|' read -ra students <<< "${STUDENTS:-e1:}"
for entry in "\${students[@]}"; do
  head=\${entry%%:*} flags=\${entry#*:} name=\${head%%@*} program="-m phalanx train shadow-cube-vision"
  [ "\$head" != "\$name" ] && program=\${head#*@}
  if [ -n "${AT_ONCE:-}" ]; then student "\$name" "\$program" "\$flags" & else student "\$name" "\$program" "\$flags"; fi
done
pids=\$(jobs -p | grep -vx "\$sampler"); [ -n "\$pids" ] && wait \$pids
python3 tools/student_runs.py $work "${STUDENTS:-e1:}" --out students.json > student_runs.log 2>&1
echo "student runs exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
if [ -n "${EVAL:-}" ]; then  # each run's goals in 30 s with none, half and all of its noise
  names=""; for entry in "\${students[@]}"; do head=\${entry%%:*}; names="\$names \${head%%@*}"; done
  # shellcheck disable=SC2086  # names is a word list
  timeout 600 python3 tools/noise_goals.py teacher \$names --device cuda --envs ${EVAL_ENVS:-1024} \
    > noise-goals.jsonl 2> noise-goals.log
  echo "noise goals exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
fi
for name in ${VIDEO:-}; do
  timeout 300 python3 -m phalanx play shadow-cube-vision --checkpoint $work/\$name --steps 600 --video \$name.mp4 \\
    --out \$name.play.json > \$name.play.log 2>&1
  echo "\$name video exit \$? \$(date -u +%s) \$(date -u)" >> progress.txt
done
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
tar -C "$work" --exclude='*/checkpoints' --exclude=parts --exclude=src --exclude=tools -czf "$out/distill.tgz" .
# Checkpoints in 15 MiB parts (cat checkpoints.tgz.part-* | tar -xz), packed again whenever a run
# saved since; the device returns 64 MiB a call, so each call sends the parts it has not yet sent
# that fit beside distill.tgz, and says when a later call (WAIT_S=0) must bring the rest.
parts=$work/parts
newest=$(ls -t "$work"/*/checkpoints/model_last.pt 2>/dev/null | head -1)
if [ -n "$newest" ] && { [ ! -f "$parts/packed" ] || [ "$newest" -nt "$parts/packed" ]; }; then
  rm -rf "$parts" && mkdir -p "$parts" && touch "$parts/packed"
  (cd "$work" && ls -d ./*/checkpoints/model_last.pt | sed 's|/checkpoints/model_last.pt||' |
    while read -r run; do echo "$run/checkpoints/model_last.pt" "$run/config.json"; done |
    xargs -r tar -cz | split -b 15M - "$parts/checkpoints.tgz.part-")
fi
room=$((60 * 1024 * 1024 - $(stat -c %s "$out/distill.tgz")))
for part in "$parts"/checkpoints.tgz.part-??; do
  [ -f "$part" ] && [ ! -f "$part.sent" ] || continue
  size=$(stat -c %s "$part")
  if [ "$size" -gt "$room" ]; then echo "checkpoint parts left to send: call again (WAIT_S=0)"; break; fi
  cp "$part" "$out/" && touch "$part.sent" && room=$((room - size))
done
true
