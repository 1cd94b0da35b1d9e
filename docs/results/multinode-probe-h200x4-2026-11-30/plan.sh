#!/usr/bin/env bash
# #62 probe: two torchrun "nodes" of 2 GPUs on one host, NCCL told they are other hosts (NCCL_HOSTID), sockets between.
set -u
export NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET PYTHONUNBUFFERED=1
for n in 0 1; do
  CUDA_VISIBLE_DEVICES=$((2*n)),$((2*n+1)) NCCL_HOSTID=node$n timeout 170 python3 -m torch.distributed.run --nnodes 2 --nproc_per_node 2 --node_rank $n \
    --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:29411 --rdzv_id mn1 \
    -m phalanx train ant --distributed --max-iterations 30 --run-dir /tmp/mn/run > $OUT/node$n.log 2>&1 &
done
wait
grep -h "NET/\|via\|Using network\|iteration 30" $OUT/node*.log | sort | uniq -c | sort -rn | head -40
