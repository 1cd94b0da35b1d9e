#!/usr/bin/env bash
# Issue #62's measurements on one 4-GPU host, in one device call (about 12 minutes), each step
# packed into $OUT/scaling-study.tgz as it ends:
#   collectives  tools/collectives.py time: the all-reduces that cartpole's and ant's iterations
#                make (docs/results/scaling-model-2026-11-30/collectives/), on 2 and 4 GPUs of one
#                node and on two 2-GPU "nodes" joined by sockets (NCCL_HOSTID)
#   multinode    tools/multinode_gpu.sh for ant: two nodes against one, resume, SIGTERM, exactness
#   strong       phalanx bench scaling cartpole --mode strong --num-envs 65536 --gpus 1,2,4 with
#                the defaults, then with the env step and the update compiled; ant 65536 --gpus 1,4
#   STEPS="collectives strong" OUT=DIR bash tools/scaling_study_gpu.sh
set -uo pipefail
out=${OUT:?set OUT}
work=/tmp/scaling-study
mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1
counts=docs/results/scaling-model-2026-11-30/collectives
pack() { tar czf "$out/scaling-study.tgz.tmp" -C "$work" --exclude '*.pt' --exclude 'events.out*' . && mv "$out/scaling-study.tgz.tmp" "$out/scaling-study.tgz"; }
nvidia-smi -L >"$work/gpus.txt"

collectives() {
  local port=$((29600 + RANDOM % 300))
  for task in cartpole ant; do
    for k in 2 4; do
      timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node "$k" tools/collectives.py time \
        "$work/time-$task-$k.json" "$counts/$task.json" 400 >"$work/time-$task-$k.log" 2>&1
    done
    for n in 0 1; do  # two nodes of 2 GPUs, sockets between them
      CUDA_VISIBLE_DEVICES=$((2 * n)),$((2 * n + 1)) NCCL_HOSTID=node$n NCCL_IB_DISABLE=1 timeout 120 \
        python3 -m torch.distributed.run --nnodes 2 --nproc_per_node 2 --node_rank $n --rdzv_backend c10d \
        --rdzv_endpoint "127.0.0.1:$port" --rdzv_id "time-$task" --rdzv_conf "is_host=$((n == 0 ? 1 : 0))" \
        tools/collectives.py time "$work/time-$task-2x2.json" "$counts/$task.json" 400 >"$work/time-$task-2x2-node$n.log" 2>&1 &
    done
    wait
    port=$((port + 1))
  done
}

multinode() {
  OUT="$work/multinode" TASK=ant PER_NODE=2 ITERATIONS=40 bash tools/multinode_gpu.sh >"$work/multinode.log" 2>&1
}

strong() {
  local compiled="--env.compile-step --compile-update"
  for variant in default compiled; do
    local extra=""
    [ "$variant" = compiled ] && extra=$compiled
    python3 -m phalanx bench scaling cartpole --mode strong --num-envs 65536 --gpus 1,2,4 --iterations 15 \
      --telemetry --train-args="$extra" --job-timeout-s 300 --run-dir "$work/strong-cartpole-65536-$variant" \
      >>"$work/strong.log" 2>&1
    pack
  done
  python3 -m phalanx bench scaling ant --mode strong --num-envs 65536 --gpus 1,4 --iterations 8 \
    --telemetry --train-args= --job-timeout-s 300 --run-dir "$work/strong-ant-65536" >>"$work/strong.log" 2>&1
}

for step in ${STEPS:-collectives multinode strong}; do
  start=$SECONDS
  "$step"
  echo "$step: $((SECONDS - start)) s" | tee -a "$work/steps.txt"
  pack
done
cat "$work/steps.txt"
