#!/usr/bin/env bash
# Pixels on one GPU: MuJoCo Warp's own render rate for cartpole-rgb's camera (testspeed, refit and
# render alone), phalanx's training throughput of $TASKS at $ENVS envs (`phalanx bench throughput`),
# and the time from launch to a balanced pole (cold caches). Writes into $OUT (at most 8 files come
# back from a device call): gpu.txt, render.log, throughput-TASK.json, camera.log, and for the tasks in
# $LEARN time_to_result.jsonl and each run's metrics (train-ttr-TASK-*.jsonl).
#   ENVS=1024,4096,16384 TASKS="cartpole-rgb cartpole-depth" LEARN=cartpole-rgb RUNS=cold,warm bash tools/camera_gpu.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
source "$here/bytecode.sh"
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv | tee -a "$out/gpu.txt"
python3 - <<'PY'
import mujoco
import phalanx
from phalanx.sim.model import build_model

cfg = phalanx.env_cfg("cartpole-rgb")  # the task's model with its camera, for testspeed
mujoco.mj_saveModel(build_model(cfg.model, cfg.actuators, None, cfg.cameras), "/tmp/cartpole-rgb.mjb", None)
PY
for n in ${ENVS//,/ }; do
  for size in 64 128; do
    echo "testspeed render cartpole-rgb eye ${size}x$size rgb nworld $n"
    python3 -m mujoco_warp.testspeed /tmp/cartpole-rgb.mjb --function=render --nworld="$n" --nstep=200 \
      --camera_name=eye --render_width="$size" --render_height="$size" --render_depth=false --render_seg=false \
      --render_textures=false > /tmp/testspeed.log 2>&1
    grep -E "Total (JIT|steps per second|time per step)" /tmp/testspeed.log || tail -20 /tmp/testspeed.log
  done
done 2>&1 | tee -a "$out/render.log"
for task in ${TASKS:-cartpole-rgb}; do
  python3 -m phalanx bench throughput "$task" --num-envs "${ENVS:-4096}" --iterations "${ITERATIONS:-10}" \
    --run-dir "/tmp/throughput-$task" 2>&1 | tail -12 | tee -a "$out/camera.log"
  cp "/tmp/throughput-$task/bench.json" "$out/throughput-$task.json"
done
for task in ${LEARN:-}; do  # from launch to a balanced pole, one line per run
  python3 "$here/time_to_result.py" "$task" mean_episode_length 285 --runs "${RUNS:-cold}" --max-s 300 \
    | tee -a "$out/time_to_result.jsonl"
  for run_dir in $(python3 -c 'import json, sys; [print(json.loads(l)["run_dir"]) for l in open(sys.argv[1])]' "$out/time_to_result.jsonl"); do
    cp "$run_dir/metrics.jsonl" "$out/train-$(basename "$run_dir").jsonl"
  done
done
