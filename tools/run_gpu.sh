#!/usr/bin/env bash
# The GPU measurement plan of one device call: GPU tests, the env-vs-physics benchmark, and
# MuJoCo Warp's own testspeed for reference. Logs go to $OUT (or ./bench-out).
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
# test_gpu.py alone: the GPU machine lacks tyro, which the CLI tests import
python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -25 | tee "$out/gpu_tests.log"
[ -n "${SKIP_BENCH:-}" ] || python3 tools/env_fps.py --out "$out/env_fps.json" "$@" 2>&1 | tee "$out/env_fps.log"
for m in ${TESTSPEED_MODELS-cartpole ant humanoid}; do
  python3 -m mujoco_warp.testspeed "src/phalanx/assets/$m.xml" --nworld 4096 --nstep 500 2>&1 \
    | grep -E "Total steps per second|naconmax|JIT" | sed "s/^/$m: /" | tee -a "$out/testspeed.log"
done
