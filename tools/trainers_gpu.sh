#!/usr/bin/env bash
# `phalanx bench compare` on one machine: every trainer on each task of $TASKS (TASK:ITERATIONS pairs)
# with $ENVS envs. Each compare's bench.json, report.md, compare.png and the trainers' metrics and
# log tails go to $OUT/TASK.tgz (few files come back per device call). The RL libraries come as
# py3.12 wheels, in /tmp/site already or in .device/libs (installed with --no-deps into /tmp/site).
# EXTRA adds flags to every compare, e.g. EXTRA="--gpus 1,2" for one and two GPUs.
#   TASKS="cartpole:150 ant:300" ENVS=4096 TRAINERS=phalanx,rsl_rl,rl_games,skrl,sb3 bash tools/trainers_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
[ -d .device/libs ] && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/libs/*.whl 2>&1 | tail -2
source tools/bytecode.sh  # start-up as after a pip install
python3 -m compileall -q -j 0 /tmp/site > /dev/null 2>&1  # the RL libraries' bytecode too
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
nvidia-smi topo -m > "$out/topology.txt" 2>&1
git rev-parse HEAD 2>/dev/null | tee "$out/commit.txt"
# What a compare has so far (bench.json is rewritten after each trainer, metrics.jsonl after each
# iteration) goes to $OUT/TASK.tgz every 30 s, so a device call cut short still returns it.
pack() {
  local task=$1 dir=$2 tmp
  tmp=$(mktemp -d)
  mkdir -p "$tmp/$task"
  cp "$dir"/bench.json "$dir"/report.md "$dir"/compare.png "$dir"/warm-up.log "$tmp/$task/" 2>/dev/null
  for t in "$dir"/*/; do
    name=$(basename "$t")
    [ -f "$t/train.log" ] && tail -c 3000 "$t/train.log" > "$tmp/$task/$name.log"
    [ -f "$t/run/metrics.jsonl" ] && cp "$t/run/metrics.jsonl" "$tmp/$task/$name.jsonl"
  done
  tar -C "$tmp" -czf "$out/$task.tgz.tmp" "$task" && mv "$out/$task.tgz.tmp" "$out/$task.tgz"
  rm -rf "$tmp"
}
for pair in ${TASKS:-cartpole:150}; do
  task=${pair%%:*}; iters=${pair##*:}
  dir=/tmp/compare-$task
  rm -rf "$dir"  # an earlier call's compare on a warm machine
  python3 -m phalanx bench compare "$task" --trainers "${TRAINERS:-phalanx,rsl_rl,rl_games,skrl,sb3}" \
    --num-envs "${ENVS:-4096}" --iterations "$iters" --run-dir "$dir" ${EXTRA:-} > "$out/$task.log" 2>&1 &
  job=$!
  waited=0
  while kill -0 $job 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    [ $((waited % 30)) -eq 0 ] && pack "$task" "$dir"
  done
  wait $job
  rc=$?
  pack "$task" "$dir"
  tail -n 15 "$out/$task.log"
  echo "bench compare $task: exit status $rc"
done
