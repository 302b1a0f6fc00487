#!/usr/bin/env bash
# What a node's start costs, with and without one extra JVM option: PAIRS pairs of fresh 5.0
# nodes (heap 1G, C1 alone and a 1 ms timer slack, as the test suite starts them), alternated
# (ABAB), each on a wiped home. Prints, per start, the seconds until CQL is accepted and the
# JVM's CPU seconds by then (/proc/PID/stat).
#
#   bench/start-cost.sh JVM_OPT [PAIRS]      default 3 pairs
#   bench/start-cost.sh -Dcassandra.memtable_row_overhead_computation_step=100000
#                                            (the estimate as Cassandra ships it)
set -euo pipefail
cd "$(dirname "$0")/.."
opt=${1:?give the JVM option to compare, e.g. -Dcassandra.memtable_row_overhead_computation_step=100000}
pairs=${2:-3}
export CAPLAB_HOME=${START_HOME:-/tmp/caplab-start-cost}
export CAPLAB_JIT=c1 CAPLAB_TIMER_SLACK=1ms
source bench/fresh-node.sh
printf "%-10s %8s %8s\n" start seconds cpu_s
for pair in $(seq "$pairs"); do
  for with in without with; do
    args=(--heap 1G)
    [ "$with" = with ] && args+=("--jvm-opt=$opt")
    "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true
    "$CAPLAB" node wipe --force >/dev/null 2>&1 || true
    t0=$(date +%s.%N)
    fresh_node "${args[@]}" 2>/dev/null
    t1=$(date +%s.%N)
    pid=$("$CAPLAB" node status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["node"]["pid"])')
    cpu=$(awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/t}' "/proc/$pid/stat")
    printf "%-10s %8.1f %8s\n" "$with" "$(echo "$t1 - $t0" | bc)" "$cpu"
  done
done
