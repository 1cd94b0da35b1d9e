#!/usr/bin/env bash
# Profiles a warm start (caches filled by an earlier run on this machine): for each task of $TASKS,
# `phalanx train TASK --max-iterations 1` under cProfile and under -X importtime, into $OUT.
#   TASKS="cartpole ant" bash tools/profile_startup.sh
set -uo pipefail
out=${OUT:-bench-out}
mkdir -p "$out"
source tools/bytecode.sh
for task in ${TASKS:-cartpole}; do
  python3 -m phalanx train "$task" --max-iterations 1 --run-dir "/tmp/prof-$task-0" > /dev/null 2>&1  # fill caches
  s=$EPOCHREALTIME
  python3 -m phalanx train "$task" --max-iterations 1 --run-dir "/tmp/prof-$task-1" > "$out/$task-plain.log" 2>&1
  echo "$task plain warm: $(python3 -c "print(round($EPOCHREALTIME - $s, 2))") s"
  python3 -X importtime -m phalanx train "$task" --max-iterations 1 --run-dir "/tmp/prof-$task-2" 2> "$out/$task-importtime.txt" > /dev/null
  python3 -m cProfile -o "$out/$task.prof" -m phalanx train "$task" --max-iterations 1 --run-dir "/tmp/prof-$task-3" > /dev/null 2>&1
  python3 -c "
import pstats
for order, count in (('cumulative', 60), ('tottime', 40)):
    with open('$out/$task-' + order + '.txt', 'w') as stream:
        pstats.Stats('$out/$task.prof', stream=stream).sort_stats(order).print_stats(count)
"
done
