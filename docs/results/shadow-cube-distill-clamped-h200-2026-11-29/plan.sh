#!/usr/bin/env bash
# Session plan: (1) --viewer's cost: cartpole and anymal-flat trained with and without --viewer,
# alternating, one at a time; (2) #57: shadow-cube teacher (2048 envs), then the end-to-end
# shadow-cube-vision student distilled from it alone on the GPU (clamped teacher actions).
# call: START=1 bash plan.sh ; later: bash plan.sh (waits WAIT_S, packs $OUT)
set -uo pipefail
w=/tmp/pl
if [ -n "${START:-}" ]; then
  rm -rf $w && mkdir -p $w && cp -r src tests pyproject.toml $w/
  cat > $w/run.sh <<'EOS'
set -uo pipefail
cd /tmp/pl
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/pl/src PHALANX_COMMIT=${COMMIT}
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > gpu.txt
(while true; do echo "$(date -u +%T) $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)"; sleep 20; done) > gpumem.txt &
sampler=$!
mkdir -p viewer
for spec in "cartpole 200 1" "cartpole 200 2" "anymal-flat 100 1"; do
  set -- $spec
  for mode in plain viewer; do
    extra=""; [ $mode = viewer ] && extra="--viewer --viewer-port 8080"
    s=$(date -u +%s.%N)
    timeout 300 python3 -m phalanx train $1 --max-iterations $2 --run-dir $PWD/viewer/$1-$mode-$3 --logger none $extra > viewer/$1-$mode-$3.log 2>&1
    echo "$1 $mode $3 rc $? launch-to-exit $(python3 -c "print(round($(date -u +%s.%N)-$s,1))") s" >> progress.txt
  done
done
echo "teacher start $(date -u +%s) $(date -u)" >> progress.txt
timeout -s TERM ${TEACHER_S} python3 -m phalanx train shadow-cube --num-envs 2048 --run-dir $PWD/teacher --logger none --save-interval 1000000 > teacher.log 2>&1
echo "teacher rc $? $(date -u +%s) $(date -u)" >> progress.txt
timeout -s TERM ${STUDENT_S} python3 -m phalanx train shadow-cube-vision --teacher $PWD/teacher --distill.iterations 100000 \
  --run-dir $PWD/studentB --logger none --save-interval 1000000 --policy.image-targets None > studentB.log 2>&1
echo "student rc $? $(date -u +%s) $(date -u)" >> progress.txt
kill $sampler
EOS
  COMMIT=${COMMIT:-unknown} TEACHER_S=${TEACHER_S:-600} STUDENT_S=${STUDENT_S:-660} \
    setsid nohup bash $w/run.sh > $w/run.log 2>&1 < /dev/null &
  echo $! > $w/pid
fi
pid=$(cat $w/pid)
deadline=$((SECONDS + ${WAIT_S:-540}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
kill -0 "$pid" 2>/dev/null && echo "plan running" || echo "plan done"
cat $w/progress.txt; for f in teacher studentB; do echo "== $f"; tail -2 $w/$f.log 2>/dev/null; done
tail -1 $w/gpumem.txt
tar -C $w --exclude='*/checkpoints' -czf "$OUT/pl.tgz" gpu.txt gpumem.txt progress.txt run.log viewer teacher.log studentB.log teacher studentB 2>/dev/null
[ -f $w/teacher/checkpoints/model_last.pt ] && tar -C $w -czf "$OUT/teacher_ckpt.tgz" teacher/checkpoints/model_last.pt teacher/config.json
[ -f $w/studentB/checkpoints/model_last.pt ] && tar -C $w -czf "$OUT/student_ckpt.tgz" studentB/checkpoints/model_last.pt studentB/config.json
true
