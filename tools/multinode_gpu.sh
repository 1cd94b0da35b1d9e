#!/usr/bin/env bash
# Two torchrun "nodes" on one host against one node of as many processes (issue #62): each node
# runs its own agent (phalanx.dist.launch: torchrun with one-line stops; c10d rendezvous on
# 127.0.0.1, node 0 hosting the store) on its half of the GPUs. NCCL_HOSTID tells NCCL the nodes
# are two hosts, so it joins them through its network transport, restricted to sockets
# (NCCL_IB_DISABLE=1) as between machines without InfiniBand, and NVLink (P2P) inside each node
# (NCCL_DEBUG=INFO in the logs shows both; $OUT/transports.txt counts them).
#   OUT=DIR TASK=ant PER_NODE=2 ITERATIONS=40 bash tools/multinode_gpu.sh
#   OUT=DIR DEVICE=cpu TASK=cartpole PER_NODE=1 ITERATIONS=6 TRAIN_ARGS="--num-envs 16" bash tools/multinode_gpu.sh
# Runs, each a fresh run directory under /tmp/multinode and its log in $OUT:
#   single-a, single-b   one node of 2 x PER_NODE processes, ITERATIONS each: is the device
#                        deterministic at all (same seed, same checkpoint bit for bit)?
#   multi-a              the two nodes, ITERATIONS: against single-a, throughput and state
#   multi-r              the two nodes, ITERATIONS/2, then --resume last to ITERATIONS: against multi-a
#   multi-s              the two nodes until SIGTERM to both agents after ITERATIONS/2 logged rows
#                        (as a scheduler's preemption), then --resume last for 4 more iterations
# $OUT/compare.txt: tools/compare_checkpoints.py for each pair; $OUT/fps.txt: each run's median fps_total.
set -uo pipefail
out=${OUT:?set OUT}
task=${TASK:-ant}
per_node=${PER_NODE:-2}
iterations=${ITERATIONS:-40}
device_args=()
[ "${DEVICE:-cuda}" = cpu ] && device_args=(--device cpu)
work=/tmp/multinode
rm -rf "$work" && mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1 NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
port=$((29500 + RANDOM % 1000))
# shellcheck disable=SC2206  # TRAIN_ARGS is a list of flags
train=(-m phalanx train "$task" --distributed --logger none --seed 1 "${device_args[@]}" ${TRAIN_ARGS:-})

single() {  # NAME ITERATIONS [more flags]
  local name=$1 its=$2
  shift 2
  timeout 600 python3 -m phalanx.dist.launch --standalone --nproc_per_node $((2 * per_node)) \
    "${train[@]}" --max-iterations "$its" --run-dir "$work/$name" "$@" >>"$out/$name.log" 2>&1
  echo "$name: exit $?" | tee -a "$out/status.txt"
}

node() {  # NODE NAME ITERATIONS [more flags]: one node's agent, in the background (rendezvous $job)
  local n=$1 name=$2 its=$3 visible=""
  shift 3
  if [ "${DEVICE:-cuda}" != cpu ]; then
    visible=$(seq -s, $((n * per_node)) $((n * per_node + per_node - 1)))
  fi
  CUDA_VISIBLE_DEVICES=$visible NCCL_HOSTID=phalanx-node$n setsid timeout 600 python3 -m phalanx.dist.launch \
    --nnodes 2 --nproc_per_node "$per_node" --node_rank "$n" --rdzv_backend c10d \
    --rdzv_endpoint "127.0.0.1:$port" --rdzv_id "$job" --rdzv_conf "is_host=$((n == 0 ? 1 : 0))" \
    "${train[@]}" --max-iterations "$its" --run-dir "$work/$name" "$@" >>"$out/$name-node$n.log" 2>&1 &
  echo $! >"$work/$name-node$n.pid"
}

multi() {  # NAME ITERATIONS [more flags]: both nodes, waited for
  local name=$1
  job="$name-$RANDOM"
  node 0 "$@"
  node 1 "$@"
  for n in 0 1; do
    wait "$(cat "$work/$name-node$n.pid")"
    echo "$name node $n: exit $?" | tee -a "$out/status.txt"
  done
  port=$((port + 1))
}

compare() {  # A B
  echo "== $1 against $2" >>"$out/compare.txt"
  python3 tools/compare_checkpoints.py "$work/$1/checkpoints/model_last.pt" "$work/$2/checkpoints/model_last.pt" \
    >>"$out/compare.txt" 2>&1
}

nvidia-smi -L >"$out/gpus.txt" 2>&1
single single-a "$iterations"
single single-b "$iterations"
multi multi-a "$iterations"
multi multi-r $((iterations / 2))
multi multi-r "$iterations" --resume last
# Preemption: SIGTERM to both agents once half the iterations are logged; they forward it.
name=multi-s
job="$name-$RANDOM"
node 0 "$name" 100000
node 1 "$name" 100000
until [ "$(wc -l <"$work/$name/metrics.jsonl" 2>/dev/null || echo 0)" -ge $((iterations / 2)) ]; do
  sleep 1
  kill -0 "$(cat "$work/$name-node0.pid")" 2>/dev/null || break
done
for n in 0 1; do kill -TERM -- "-$(cat "$work/$name-node$n.pid")" 2>/dev/null; done
for n in 0 1; do
  wait "$(cat "$work/$name-node$n.pid")"
  echo "$name node $n (SIGTERM): exit $?" | tee -a "$out/status.txt"
done
port=$((port + 1))
saved=$(python3 -c "import torch, sys; print(torch.load(sys.argv[1], weights_only=True)['iteration'])" \
  "$work/$name/checkpoints/model_last.pt")
echo "$name: saved at iteration $saved" | tee -a "$out/status.txt"
multi "$name" $((saved + 4)) --resume last

compare single-a single-b
compare single-a multi-a
compare multi-a multi-r
for run in single-a single-b multi-a multi-r multi-s; do
  python3 - "$work/$run/metrics.jsonl" "$run" >>"$out/fps.txt" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
fps = [r["fps_total"] for r in rows[len(rows) // 2 :]]  # the second half: past the first iterations
print(f"{sys.argv[2]}: {len(rows)} iterations, median fps_total {statistics.median(fps):,.0f} over the last {len(fps)}")
EOF
done
grep -h "via P2P\|via NET" "$out"/multi-a-node*.log | sed 's/^[^ ]* //' | sort | uniq -c | sort -rn | head -8 >"$out/transports.txt"
cat "$out/status.txt" "$out/fps.txt" "$out/compare.txt" "$out/transports.txt"
