#!/usr/bin/env bash
# Training jobs side by side on one multi-GPU machine, each on its own GPUs, for $SECS seconds of
# wall clock (then SIGTERM: every rank finishes its iteration and saves model_last.pt): the
# horizontal and vertical experiments of the Isaac Lab scaling study, scaled to the GPUs lent.
# One word of $JOBS per job, NAME:GPUS:ENVS, with GPUS a comma-separated list of device indices and
# ENVS the envs per GPU; a job on several GPUs runs under torchrun (`phalanx train --gpus N`).
# A job whose run directory came with the call (carried as .device/study/NAME: an earlier call's
# $OUT/study.tgz and $OUT/NAME-checkpoint.tgz unpacked there) goes on from its last checkpoint.
# Each run directory without its checkpoints (config, metrics.jsonl) and its log NAME.log are packed
# into $OUT/study.tgz every 30 s and at the end; each job's last checkpoint into
# $OUT/NAME-checkpoint.tgz at the end. A file comes back from the device only below 16 MiB: one
# shadow-cube checkpoint is about 11 MB, so a call runs at most 7 jobs.
#   TASK=shadow-cube SECS=540 JOBS="h1:0:512 h2:1,2:512 v1:3:2048" bash tools/study_gpu.sh
#   TASK=shadow-cube SECS=540 JOBS="v2:0,1:1024 h4:0,1,2,3:512" ...   (no GPU in two jobs at once)
#   TASK=shadow-cube-vision TRAIN_ARGS="--teacher .device/teacher" ...  (students of a carried
#   shadow-cube run: its checkpoints/model_last.pt and config.json in .device/teacher)
set -uo pipefail
out=${OUT:-bench-out}
root=/tmp/study
mkdir -p "$out" "$root"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv | tee "$out/gpu.txt"
nvidia-smi topo -m >"$out/topology.txt" 2>&1
[ -d .device/study ] && cp -r .device/study/. "$root/"  # run directories carried from an earlier call
pack() {
  tar czf "$out/study.tgz.tmp" -C "$root" --exclude 'events.out*' --exclude '*.pt' . &&
    mv "$out/study.tgz.tmp" "$out/study.tgz"
}
pids=()
for job in ${JOBS:?give JOBS=\"NAME:GPUS:ENVS ...\"}; do
  IFS=: read -r name devices envs <<<"$job"
  count=$(awk -F, '{print NF}' <<<"$devices")
  run="$root/$name"
  flags=(--num-envs "$envs" --run-dir "$run" --save-interval 1000000 --logger none)
  [ "$count" -gt 1 ] && flags+=(--gpus "$count")
  if [ -f "$run/checkpoints/model_last.pt" ]; then
    flags+=(--resume last)
  else
    rm -rf "$run"  # stopped before its first checkpoint: start again
  fi
  # torchrun's --standalone rendezvous picks a free port: jobs side by side do not meet.
  # shellcheck disable=SC2086  # TRAIN_ARGS splits into flags
  CUDA_VISIBLE_DEVICES=$devices timeout -s TERM "${SECS:-540}" \
    python3 -m phalanx train "${TASK:-shadow-cube}" "${flags[@]}" ${TRAIN_ARGS:-} >>"$root/$name.log" 2>&1 &
  pids+=($!)
  echo "$name: ${TASK:-shadow-cube} on GPU(s) $devices, $envs envs per GPU, pid $!"
done
while pgrep -f "phalanx train" >/dev/null; do
  sleep 30
  pack
done
for pid in "${pids[@]}"; do wait "$pid"; echo "pid $pid: exit status $?"; done
pack
for job in $JOBS; do
  name=${job%%:*}
  [ -f "$root/$name/checkpoints/model_last.pt" ] &&
    tar czf "$out/$name-checkpoint.tgz" -C "$root" "$name/checkpoints/model_last.pt"
done
ls -l "$out"
for job in $JOBS; do
  name=${job%%:*}
  echo "$name: $(wc -l <"$root/$name/metrics.jsonl" 2>/dev/null || echo 0) iterations; $(tail -n 2 "$root/$name.log" | head -c 400)"
done
