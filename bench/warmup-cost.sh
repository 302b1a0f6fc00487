#!/usr/bin/env bash
# What the automatic warm-up costs and what it buys (issue 33):
#   1. on a settled node (5 minutes flat out first): how long `--warmup auto` takes, flat out
#      and at a fixed rate (half the flat-out throughput), RUNS times each;
#   2. on fresh nodes reached as a plain --hosts target with --server-facts cql (as a cluster
#      caplab does not run), RUNS times each way, alternating: `blind` (no JIT telemetry, so the
#      settle rule's longer hold applies) and `jmx` (the JIT read over --jmx): the warm-up's
#      length, then the 60 s window's verdict and its climb (the last 10 s against the first
#      10 s).
# Usage: bench/warmup-cost.sh [RUNS]   (default 5; about 50 minutes, RUNS=3 about 30).
# PART=2 runs the second part only. Prints a table per part.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
OUT=${OUT:-/tmp/warmup-cost}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
source bench/fresh-node.sh
caplab=$CAPLAB
mkdir -p "$OUT"
log() { printf '== %s\n' "$*" >&2; }
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/result.json" "$2"; }

fresh_node --heap 4G
if [ "${PART:-all}" != 2 ]; then
log "settling the node: 5 minutes flat out"
$caplab run --warmup 0s --duration 5m -q --force --out "$OUT/settle" >/dev/null
flat=$(field "$OUT/settle" "round(d['summary']['total']['op_rate'])")
rate=$((flat / 2))

echo "| settled node | run | warm-up (s) | settled | what the rule read |"
echo "|---|---|---|---|---|"
for mode in flat rate; do
  for i in $(seq "$RUNS"); do
    dir="$OUT/settled-$mode-$i"
    extra=(); [ "$mode" = rate ] && extra=(--rate "$rate")
    $caplab run --warmup auto --duration 10s "${extra[@]}" -q --force --out "$dir" >/dev/null
    echo "| $mode$([ "$mode" = rate ] && echo " ($rate op/s)") | $i | $(field "$dir" "d['warmup']['length_s']") | $(field "$dir" "d['warmup']['settled']") | $(field "$dir" "d['warmup']['check']") |"
  done
done
echo
fi

echo "| fresh node, --hosts | run | warm-up (s) | settled | what the rule read | window verdict | climb in window (last 10 s / first 10 s) |"
echo "|---|---|---|---|---|---|---|"
status=$($caplab node status --json)
hosts=$(python3 -c "import json,sys; n=json.load(sys.stdin)[0]['node']; print(n['address'] + ':' + str(n['native_port']))" <<<"$status")
jmx=$(python3 -c "import json,sys; n=json.load(sys.stdin)[0]['node']; print(n['address'] + ':' + str(n['jmx_port']))" <<<"$status")
for i in $(seq "$RUNS"); do
  for mode in blind jmx; do
    $caplab node stop --no-drain >/dev/null
    $caplab node wipe --force >/dev/null
    $caplab node start --heap 4G >/dev/null
    dir="$OUT/fresh-$mode-$i"
    extra=(); [ "$mode" = jmx ] && extra=(--jmx "$jmx")
    $caplab run --hosts "$hosts" --server-facts cql "${extra[@]}" --warmup auto --duration 60s -q --force --out "$dir" >/dev/null
    climb=$(python3 -c "
import csv,collections
rows=collections.defaultdict(float)
for r in csv.DictReader(open('$dir/latency.csv')): rows[r['timestamp']]+=float(r['count'])
v=[rows[k] for k in sorted(rows)][:60]
print(round(sum(v[-10:])/max(sum(v[:10]),1),3))")
    echo "| $mode | $i | $(field "$dir" "d['warmup']['length_s']") | $(field "$dir" "d['warmup']['settled']") | $(field "$dir" "d['warmup']['check']") | $(field "$dir" "d['steady_state']['summary']") | $climb |"
  done
done
