#!/usr/bin/env bash
# GPU plan for the docs' QP tables at today's commit, on two GPUs of one host (nvidia-h200-x2), in
# one device call of at most 10 minutes:
#   GPU 0: `phalanx train anymal-qp` for TRAIN_S seconds (SIGTERM saves its checkpoint), then
#          `phalanx play` of it over 4096 envs x 1000 steps (--out: a bench.json, kind play);
#   GPU 1: the solver alone (tools/qp_speed.py), the full-GPU pipeline against the host QP
#          (tools/qp_pipeline.py, anymal-qp and anymal-stones-qp), and the heuristic alone
#          (`phalanx play anymal-qp --policy zero`, seeds 0 and 1).
# Each result is a bench.json under $OUT/tables/ (copy it to docs/results/NAME/ and run `phalanx
# bench docs docs`); logs and status go into $OUT/tables.tgz as each step ends.
#   TRAIN_S=390 bash tools/tables_gpu.sh
set -uo pipefail
out=${OUT:?set OUT}
work=/tmp/tables
mkdir -p "$work/results"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv | tee "$work/gpu.txt"
run() {  # NAME SECONDS GPU COMMAND...: its output in NAME.log, its exit status in status.txt
  local name=$1 limit=$2 gpu=$3
  shift 3
  CUDA_VISIBLE_DEVICES=$gpu timeout -s TERM "$limit" "$@" > "$work/$name.log" 2>&1
  echo "$name: exit $? after ${SECONDS}s of the script" >> "$work/status.txt"
  local packed="$work.$BASHPID.tgz"  # each of the two job lists packs on its own, then the newest wins
  tar czf "$packed" -C "$work" --exclude=runs . && mv "$packed" "$out/tables.tgz"
}
play=(python3 -m phalanx play anymal-qp --num-envs 4096 --steps 1000)
(
  run train-anymal-qp "${TRAIN_S:-390}" 0 python3 -m phalanx train anymal-qp --max-iterations 1000000 \
    --logger none --run-dir "$work/runs/anymal-qp"
  run play-trained 150 0 "${play[@]}" --checkpoint "$work/runs/anymal-qp" --out "$work/results/play-trained.json"
) &
(
  run qp-speed 150 1 python3 tools/qp_speed.py --backends warp,torch --iterations 25,200 \
    --batches 1024,4096,16384,65536 --out "$work/results/qp-speed.json"
  for task in anymal-qp anymal-stones-qp; do
    run "pipeline-$task" 150 1 python3 tools/qp_pipeline.py "$task" --num-envs 4096 --out "$work/results/pipeline-$task.json"
  done
  for seed in 0 1; do
    run "play-zero-$seed" 100 1 "${play[@]}" --policy zero --seed "$seed" --out "$work/results/play-zero-$seed.json"
  done
) &
wait
cp "$work"/results/*.json "$out/" 2> /dev/null
cat "$work/status.txt"
