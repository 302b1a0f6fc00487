#!/usr/bin/env bash
# What a node's timer slack (`caplab node start --timer-slack`) does to its CPU and latency:
# one 5.0 node at Linux's default slack (50 µs) and one at SLACK, alternated (ABAB, PAIRS
# pairs), each warmed by 20 s at 1,000 op/s, then E1 inserts for 20 s at 30, 300 and 1,000 op/s.
# Prints, per run, the node's CPU (cores, from /proc over the run) and the response-time p50 and
# p99 (ms, result.json). Cassandra's idle request workers sleep 10 µs to 1 ms at a time while
# they wait for work; the slack says how late the kernel may wake them.
#
#   bench/timer-slack.sh [SLACK] [PAIRS]      default 1ms, 2 pairs
#   SLACK_BASE=1ms bench/timer-slack.sh 4ms   against a slack of 1 ms instead of Linux's default
#   (CAPLAB_JIT=c1 for nodes as the test suite starts them)
set -euo pipefail
cd "$(dirname "$0")/.."
slack=${1:-1ms}
pairs=${2:-2}
base=${SLACK_BASE:-default}
export CAPLAB_HOME=${SLACK_HOME:-/tmp/caplab-timer-slack}
work=$(mktemp -d /tmp/caplab-slack.XXXX)
source bench/fresh-node.sh
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }
printf "%-8s %6s %11s %8s %8s\n" slack rate node_cores p50_ms p99_ms
for pair in $(seq "$pairs"); do
  for s in "$base" "$slack"; do
    if [ "$s" = default ]; then fresh_node --heap 2G; else fresh_node --heap 2G --timer-slack "$s"; fi
    pid=$("$CAPLAB" node status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["node"]["pid"])')
    "$CAPLAB" run --rate 1000 --duration 20s --warmup 0s --no-history -q --out "$work/warm-$pair-$s" >/dev/null
    for rate in 30 300 1000; do
      out="$work/$pair-$s-$rate"
      a=$(cpu "$pid"); t0=$(date +%s.%N)
      "$CAPLAB" run --rate "$rate" --duration 20s --warmup 0s --no-history -q --out "$out" >/dev/null
      b=$(cpu "$pid"); t1=$(date +%s.%N)
      python3 - "$out" "$s" "$rate" "$a" "$b" "$t0" "$t1" <<'PY'
import json, sys
out, s, rate, a, b, t0, t1 = sys.argv[1:]
r = json.load(open(out + "/result.json"))["summary"]["total"]["response"]
cores = (float(b) - float(a)) / (float(t1) - float(t0))
print(f"{s:<8} {rate:>6} {cores:11.2f} {r['median_ms']:8.2f} {r['p99_ms']:8.2f}")
PY
    done
  done
done
