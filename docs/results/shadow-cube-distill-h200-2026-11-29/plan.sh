#!/usr/bin/env bash
# Session plan (#57): shadow-cube teacher (2048 envs) beside the GPU distillation test, then two
# shadow-cube-vision students distilled from it side by side: A keypoint head (registered), B end-to-end.
# call: START=1 bash .device/plan57.sh ; later: bash .device/plan57.sh (waits WAIT_S, packs $OUT)
set -uo pipefail
w=/tmp/p57
if [ -n "${START:-}" ]; then
  rm -rf $w && mkdir -p $w && cp -r src tests pyproject.toml $w/
  cat > $w/run.sh <<'EOS'
set -uo pipefail
cd /tmp/p57
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:/tmp/p57/src PHALANX_COMMIT=${COMMIT}
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > gpu.txt
(while true; do echo "$(date -u +%T) $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)"; sleep 20; done) > gpumem.txt &
echo "teacher start $(date -u +%s) $(date -u)" >> progress.txt
timeout -s TERM ${TEACHER_S} python3 -m phalanx train shadow-cube --num-envs 2048 --run-dir $PWD/teacher --logger none --save-interval 1000000 > teacher.log 2>&1 &
tp=$!
timeout 400 python3 -m pytest -m gpu -v -p no:cacheprovider tests/test_gpu.py -k "student or teacher or distill" > gpu_tests.log 2>&1
echo "gpu tests rc $? $(date -u)" >> progress.txt
wait $tp; echo "teacher rc $? $(date -u +%s) $(date -u)" >> progress.txt
for v in A B; do
  extra=""; [ $v = B ] && extra="--policy.image-targets None"
  timeout -s TERM ${STUDENT_S} python3 -m phalanx train shadow-cube-vision --teacher $PWD/teacher --distill.iterations 100000 \
    --run-dir $PWD/student$v --logger none --save-interval 1000000 $extra > student$v.log 2>&1 &
done
wait; echo "students done $(date -u +%s) $(date -u)" >> progress.txt
EOS
  COMMIT=${COMMIT:-unknown} TEACHER_S=${TEACHER_S:-540} STUDENT_S=${STUDENT_S:-600} \
    setsid nohup bash $w/run.sh > $w/run.log 2>&1 < /dev/null &
  echo $! > $w/pid
fi
pid=$(cat $w/pid)
deadline=$((SECONDS + ${WAIT_S:-540}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
kill -0 "$pid" 2>/dev/null && echo "plan running" || echo "plan done"
cat $w/progress.txt; tail -4 $w/gpu_tests.log 2>/dev/null; for f in teacher studentA studentB; do echo "== $f"; tail -3 $w/$f.log 2>/dev/null; done
tail -2 $w/gpumem.txt
tar -C $w --exclude='*/checkpoints' -czf "$OUT/p57.tgz" gpu.txt gpumem.txt progress.txt run.log gpu_tests.log teacher.log studentA.log studentB.log teacher studentA studentB 2>/dev/null
true
