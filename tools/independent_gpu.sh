#!/usr/bin/env bash
# Control run for multi-GPU scaling: K single-GPU trainings of TASK at once, one per GPU, with no
# collective between them. What they lose against one job alone is the cost of sharing the host
# (CPU, memory bandwidth, PCIe), not of communication. Prints the summed medians (iterations
# 4..end, as `phalanx bench scaling` counts them), samples SM clocks and throttle reasons every 2 s
# into clocks.csv, and packs the runs into $OUT/independent-TASK.tgz.
#   TASK=ant ENVS=4096 GPUS=4 ITERATIONS=10 bash tools/independent_gpu.sh
set -uo pipefail
out=${OUT:-bench-out}; root=/tmp/independent/${TASK}-${ENVS}-x${GPUS}
mkdir -p "$out" "$root"
pids=()
for ((i = 0; i < GPUS; i++)); do
  timeout "${JOB_TIMEOUT_S:-300}" python3 -m phalanx train "$TASK" --device "cuda:$i" --num-envs "$ENVS" --max-iterations $((4 + ${ITERATIONS:-10})) \
    --save-interval 1000000 --run-dir "$root/gpu-$i" >"$root/gpu-$i.log" 2>&1 &
  pids+=($!)
done
# SM clocks and the reasons the driver holds them down, per GPU, while the jobs run.
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.max.sm,clocks_event_reasons.active,power.draw,power.limit,pstate \
  --format=csv -l 2 >"$root/clocks.csv" 2>&1 &
smi=$!
wait "${pids[@]}"
kill "$smi"
python3 - "$root" "$GPUS" <<'PY'
import json, statistics, sys
from pathlib import Path
root, k = Path(sys.argv[1]), int(sys.argv[2])
names = ("fps_step", "fps_step_inference", "fps_total")
per_gpu = []
for i in range(k):
    rows = [json.loads(line) for line in (root / f"gpu-{i}" / "metrics.jsonl").read_text().splitlines()][4:]
    per_gpu.append({n: statistics.median(r[n] for r in rows) for n in names})
summed = {n: round(sum(g[n] for g in per_gpu)) for n in names}
print(f"{root.name}: {k} independent single-GPU jobs, summed medians {summed}; per GPU fps_total",
      [round(g["fps_total"]) for g in per_gpu])
(root / "summary.json").write_text(json.dumps({"per_gpu": per_gpu, "summed": summed}, indent=1))
PY
tar czf "$out/independent-$TASK.tgz" -C /tmp/independent --exclude '*.pt' --exclude 'events.out*' .
