#!/usr/bin/env bash
# What C1 alone (`caplab node start --jit c1`) does to a short-lived node: one 5.0 node with the
# JIT as shipped (tiered: C1, then C2) and one with C1 alone, alternated (ABAB, PAIRS pairs),
# each fresh, 1 GiB of heap and a 1 ms timer slack as the test suite's nodes have; E1 inserts for
# 60 s at 1,000 op/s, then 20 s flat out. Prints, per node: its start (s and CPU-s until it
# accepts CQL), its cores over the fixed rate, that run's response-time p50 and p99 (ms), and
# the flat-out op/s and cores.
#
#   bench/jit-cost.sh [PAIRS]      default 2 pairs
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-2}
export CAPLAB_HOME=${JIT_HOME:-/tmp/caplab-jit}
work=$(mktemp -d /tmp/caplab-jit.XXXX)
source bench/fresh-node.sh
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }
printf "%-7s %8s %10s %10s %7s %7s %9s %10s\n" jit start_s start_cpu run_cores p50_ms p99_ms flat_op/s flat_cores
for pair in $(seq "$pairs"); do
  for jit in tiered c1; do
    t0=$(date +%s.%N)
    fresh_node --heap 1G --timer-slack 1ms --jit "$jit"
    t1=$(date +%s.%N)
    pid=$("$CAPLAB" node status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["node"]["pid"])')
    a=$(cpu "$pid")
    "$CAPLAB" run --rate 1000 --duration 60s --warmup 0s --no-history -q --out "$work/$pair-$jit" >/dev/null
    b=$(cpu "$pid"); t2=$(date +%s.%N)
    "$CAPLAB" run --duration 20s --warmup 0s --no-history -q --out "$work/$pair-$jit-flat" >/dev/null
    c=$(cpu "$pid"); t3=$(date +%s.%N)
    python3 - "$work/$pair-$jit" "$jit" "$t0" "$t1" "$a" "$b" "$t2" "$c" "$t3" <<'PY'
import json, sys
out, jit, *n = sys.argv[1:]
t0, t1, a, b, t2, c, t3 = map(float, n)
fixed = json.load(open(out + "/result.json"))["summary"]["total"]["response"]
flat = json.load(open(out + "-flat/result.json"))["summary"]["total"]["op_rate"]
print(f"{jit:<7} {t1 - t0:8.1f} {a:10.1f} {(b - a) / (t2 - t1):10.2f} {fixed['median_ms']:7.2f} "
      f"{fixed['p99_ms']:7.2f} {flat:9.0f} {(c - b) / (t3 - t2):10.2f}")
PY
  done
done
