#!/usr/bin/env bash
# GPU plans for the docs' QP tables at today's commit, on two GPUs of one host (nvidia-h200-x2),
# each in one device call of at most 10 minutes. PLAN picks one:
#   play    GPU 0: `phalanx train anymal-qp` for TRAIN_S seconds (SIGTERM saves its checkpoint),
#                  then `phalanx play` of it over 4096 envs x 1000 steps (--out: kind play);
#           GPU 1: the heuristic alone (`phalanx play anymal-qp --policy zero`, seeds 0 and 1),
#                  then the learning suite of the QP tasks (`phalanx bench learn anymal-qp
#                  anymal-stones-qp --seeds 1 --no-cold`, into $OUT/learn.tgz).
#   stones  GPU 0: `phalanx train anymal-stones-qp` for TRAIN_S seconds, then tools/stones_eval.py
#                  of it, then of the heuristic alone (zero actions), with and without looking
#                  at the stones (--blind);
#           GPU 1: the solver and the pipeline, then `phalanx train anymal-stones` (joint targets)
#                  for TRAIN_S seconds and tools/stones_eval.py of it.
#   classic GPU 0 alone (one GPU is enough: nvidia-h200): tools/qp_pipeline.py anymal-qp, then the
#                  classic pipeline (tools/classic_pipeline.py: MuJoCo C and the QP on every core,
#                  the policy on the GPU) at each of CLASSIC_ENVS robots (default 1024 4096 16384);
#                  nothing else runs beside it, as it uses every core.
#   The solver and the pipeline: tools/qp_speed.py (warp and torch; proxsuite's one-core time
#   where it imports), tools/qp_pipeline.py (anymal-qp, anymal-stones-qp; its host QP needs
#   proxsuite) and tools/quadruped_controller_speed.py (the controller alone, warp QP).
# Each result is a bench.json under $OUT (copy it to docs/results/NAME/ and run `phalanx bench docs
# docs`); logs, training metrics and status go into $OUT/tables.tgz as each step ends.
#   PLAN=play TRAIN_S=390 bash tools/tables_gpu.sh;  PLAN=stones TRAIN_S=340 bash tools/tables_gpu.sh
#   PLAN=classic bash tools/tables_gpu.sh
set -uo pipefail
out=${OUT:?set OUT}
plan=${PLAN:?set PLAN to play, stones or classic}
train_s=${TRAIN_S:-}
if [ "$plan" != classic ] && [ -z "$train_s" ]; then
  echo "TRAIN_S: set it to the seconds of each training run of PLAN=$plan" >&2
  exit 2
fi
work=/tmp/tables
mkdir -p "$work/results"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv | tee "$work/gpu.txt"
python3 -c "import proxsuite" 2> /dev/null || echo "proxsuite does not import: no host QP, no reference" | tee -a "$work/status.txt"
run() {  # NAME SECONDS GPU COMMAND...: its output in NAME.log, its exit status in status.txt
  local name=$1 limit=$2 gpu=$3
  shift 3
  CUDA_VISIBLE_DEVICES=$gpu timeout -s TERM "$limit" "$@" > "$work/$name.log" 2>&1
  echo "$name: exit $? after ${SECONDS}s of the script" >> "$work/status.txt"
  local packed="$work.$BASHPID.tgz"  # each of the two job lists packs on its own, then the newest wins
  tar czf "$packed" -C "$work" --exclude=runs --exclude=learn . && mv "$packed" "$out/tables.tgz"
}
train() {  # TASK GPU: TRAIN_S seconds of `phalanx train TASK`, its metrics kept beside the logs
  run "train-$1" "$train_s" "$2" python3 -m phalanx train "$1" --max-iterations 1000000 --logger none \
    --run-dir "$work/runs/$1"
  gzip -c "$work/runs/$1/metrics.jsonl" > "$work/metrics-$1.jsonl.gz"
}
solver() {  # GPU
  run qp-speed 150 "$1" python3 tools/qp_speed.py --backends warp,torch --iterations 25,200 \
    --batches 1024,4096,16384,65536 --out "$work/results/qp-speed.json"
  for task in anymal-qp anymal-stones-qp; do
    run "pipeline-$task" 150 "$1" python3 tools/qp_pipeline.py "$task" --num-envs 4096 --out "$work/results/pipeline-$task.json"
  done
  run controller-speed 120 "$1" python3 tools/quadruped_controller_speed.py --batches 1024,4096,16384,65536 \
    --qp-backend warp --out "$work/results/controller-speed.json"
}
stones() {  # NAME TASK GPU LABEL [--checkpoint FILE]: the policy's success per level, NAME.json
  local name=$1 task=$2 gpu=$3 label=$4
  shift 4
  run "$name" 120 "$gpu" python3 tools/stones_eval.py "$task" --label "$label" "$@" --out "$work/results/$name.json"
}
play=(python3 -m phalanx play anymal-qp --num-envs 4096 --steps 1000)
case $plan in
  play)
    (
      train anymal-qp 0
      run play-trained 150 0 "${play[@]}" --checkpoint "$work/runs/anymal-qp" --out "$work/results/play-trained.json"
    ) &
    (
      for seed in 0 1; do
        run "play-zero-$seed" 100 1 "${play[@]}" --policy zero --seed "$seed" --out "$work/results/play-zero-$seed.json"
      done
      run learn 330 1 python3 -m phalanx bench learn anymal-qp anymal-stones-qp --seeds 1 --no-cold --videos none \
        --gpus 0 --run-dir "$work/learn"
      for job in "$work"/learn/jobs/*/; do
        gzip -c "$job/run/metrics.jsonl" > "$work/learn/metrics-$(basename "$job").jsonl.gz"
      done
      tar czf "$out/learn.tgz" -C "$work" --exclude=learn/jobs learn
    ) &
    ;;
  stones)
    last=checkpoints/model_last.pt
    (
      train anymal-stones-qp 0
      stones stones-rl-qp anymal-stones-qp 0 "RL + QP, $train_s s" --checkpoint "$work/runs/anymal-stones-qp/$last"
      stones stones-heuristic anymal-stones-qp 0 "heuristic (zero actions)"
      stones stones-heuristic-blind anymal-stones-qp 0 "heuristic, blind" --blind
    ) &
    (
      solver 1
      train anymal-stones 1
      stones stones-joint-targets anymal-stones 1 "joint targets, $train_s s" --checkpoint "$work/runs/anymal-stones/$last"
    ) &
    ;;
  classic)
    run pipeline-anymal-qp 150 0 python3 tools/qp_pipeline.py anymal-qp --num-envs 4096 --out "$work/results/pipeline-anymal-qp.json"
    for n in ${CLASSIC_ENVS:-1024 4096 16384}; do
      run "classic-$n" 240 0 python3 tools/classic_pipeline.py anymal-qp --num-envs "$n" --steps 20 \
        --out "$work/results/classic-$n.json"
    done
    ;;
  *)
    echo "PLAN: must be play, stones or classic, got $plan" >&2
    exit 2
    ;;
esac
wait
cp "$work"/results/*.json "$out/" 2> /dev/null
cat "$work/status.txt"
