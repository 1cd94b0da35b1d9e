#!/usr/bin/env bash
# `phalanx bench compare` on one GPU: every trainer on each task of $TASKS (TASK:ITERATIONS pairs)
# with $ENVS envs. Each compare's bench.json, report.md, compare.png and the trainers' metrics and
# log tails go to $OUT/TASK.tgz (few files come back per device call). The RL libraries come as
# py3.12 wheels, in /tmp/site already or in .device/libs (installed with --no-deps into /tmp/site).
# EXTRA adds flags to every compare, e.g. EXTRA="--gpus 1,2" for one and two GPUs.
#   TASKS="cartpole:150 ant:300" ENVS=4096 TRAINERS=phalanx,rsl_rl,rl_games,skrl,sb3 bash bench/trainers_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
[ -d .device/libs ] && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/libs/*.whl 2>&1 | tail -2
source bench/bytecode.sh  # start-up as after a pip install
python3 -m compileall -q -j 0 /tmp/site > /dev/null 2>&1  # the RL libraries' bytecode too
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
nvidia-smi topo -m > "$out/topology.txt" 2>&1
git rev-parse HEAD 2>/dev/null | tee "$out/commit.txt"
for pair in ${TASKS:-cartpole:150}; do
  task=${pair%%:*}; iters=${pair##*:}
  dir=/tmp/compare-$task
  python3 -m phalanx bench compare "$task" --trainers "${TRAINERS:-phalanx,rsl_rl,rl_games,skrl,sb3}" \
    --num-envs "${ENVS:-4096}" --iterations "$iters" --run-dir "$dir" ${EXTRA:-} 2>&1 | tail -15 | tee "$out/$task.log"
  mkdir -p "$out/$task"
  cp "$dir"/bench.json "$dir"/report.md "$dir"/compare.png "$out/$task/" 2>/dev/null
  for t in "$dir"/*/; do
    name=$(basename "$t")
    [ -f "$t/train.log" ] && tail -c 3000 "$t/train.log" > "$out/$task/$name.log"
    [ -f "$t/run/metrics.jsonl" ] && cp "$t/run/metrics.jsonl" "$out/$task/$name.jsonl"
  done
  tar -C "$out" -czf "$out/$task.tgz" "$task" && rm -rf "${out:?}/$task"
done
