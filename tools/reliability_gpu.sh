#!/usr/bin/env bash
# Device plan of one call on 2 GPUs: the reliability paths on NCCL that the CPU tests (gloo) cannot
# show. 1) the distributed GPU tests (NCCL inside the trainer's graphs; a 2-GPU train command,
# whose final checkpoint gathers both ranks' envs over NCCL, exits); 2) 2-GPU cartpole, 6
# iterations straight vs 3 + `--resume last` to 6: the largest difference of every checkpoint
# tensor; 3) SIGTERM to the torchrun agent of a 2-GPU run: exit, checkpoint iteration, metrics rows
# and both ranks' env step counts. Logs and summaries in $OUT.
#   COMMIT=$(git rev-parse --short HEAD) bash tools/reliability_gpu.sh
set -uo pipefail
out=${OUT:-reliability-out}
mkdir -p "$out" /tmp/rel
export PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; echo "commit ${COMMIT:-unknown}"; nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv; } \
  | tee "$out/machine.txt"

python3 -m pytest -q -p no:cacheprovider tests/distributed/test_distributed.py -m gpu 2>&1 | tail -15 | tee "$out/nccl_tests.log"

train=(python3 -m torch.distributed.run --standalone --nproc_per_node 2 -m phalanx train cartpole --distributed
       --num-envs 4096 --save-interval 3)
"${train[@]}" --run-dir /tmp/rel/straight --max-iterations 6 >"$out/resume.log" 2>&1; echo "straight rc=$?" | tee -a "$out/resume.log"
for n in 3 6; do
  "${train[@]}" --run-dir /tmp/rel/restarted --resume last --max-iterations $n >>"$out/resume.log" 2>&1
  echo "restarted to $n rc=$?" | tee -a "$out/resume.log"
done
python3 - <<'EOF' 2>&1 | tee "$out/resume_compare.txt"
import json, torch
a, b = (torch.load(f"/tmp/rel/{d}/checkpoints/model_6.pt", weights_only=True) for d in ("straight", "restarted"))
def leaves(tree, path=""):
    if isinstance(tree, torch.Tensor):
        yield path, tree
    elif isinstance(tree, dict):
        for k, v in tree.items():
            yield from leaves(v, f"{path}/{k}")
    elif isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            yield from leaves(v, f"{path}/{i}")
rows = [json.loads(l)["iteration"] for l in open("/tmp/rel/restarted/metrics.jsonl")]
print("ranks in checkpoint:", len(a["ranks"]), "| restarted metrics iterations:", rows)
worst, unequal, total = (0.0, ""), 0, 0
for key in ("policy", "obs_norm", "ppo", "ranks"):
    theirs = dict(leaves(b[key]))
    for path, x in leaves(a[key]):
        y, total = theirs[path], total + 1
        if not torch.equal(x, y):
            unequal += 1
            if x.is_floating_point():
                d = (x.double() - y.double()).abs().max().item()
                worst = max(worst, (d, key + path))
print(f"tensors bitwise equal: {total - unequal} of {total}; largest difference {worst[0]:.3g} at {worst[1]}")
EOF

"${train[@]}" --run-dir /tmp/rel/term --max-iterations 100000 >"$out/sigterm.log" 2>&1 &
job=$!
for _ in $(seq 600); do
  kill -0 "$job" 2>/dev/null || break
  [ -f /tmp/rel/term/metrics.jsonl ] && [ "$(wc -l </tmp/rel/term/metrics.jsonl)" -ge 20 ] && break
  sleep 0.5
done
kill -TERM "$job"; wait "$job"; echo "sigterm: torchrun rc=$?" | tee -a "$out/sigterm.log"
python3 - <<'EOF' 2>&1 | tee -a "$out/sigterm.log"
import torch
s = torch.load("/tmp/rel/term/checkpoints/model_last.pt", weights_only=True)
rows = len(open("/tmp/rel/term/metrics.jsonl").read().splitlines())
steps = [int(r["env"]["buffers"]["step_count"]) for r in s["ranks"]]
print(f"sigterm: checkpoint iteration {s['iteration']}, metrics rows {rows}, env steps per rank {steps}")
EOF
grep -E "interrupted by|exitcode|lost the other" "$out/sigterm.log" | head -5
ls /tmp/rel/term
