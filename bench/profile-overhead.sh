#!/usr/bin/env bash
# What `--server-profile cpu` costs the server it explains: E1 inserts flat out (256 in flight)
# on one local Cassandra 5.0.9 node (2G heap, G1), warmed first (PREWARM seconds flat out: a
# fresh node's JIT keeps getting faster for minutes), then REPEATS pairs of runs of SECONDS
# each (10 s warm-up before each), with and without async-profiler's CPU sampler at its default
# 10 ms interval, alternated and the order flipped every pair (ABBA…). `caplab compare` then
# tests throughput, p99 and server CPU per op.
#
#   bench/profile-overhead.sh [REPEATS] [SECONDS]      defaults 5 and 20; PREWARM=120
#
# Its node lives in OVERHEAD_HOME (default /tmp/caplab-overhead), wiped at the start.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}
secs=${2:-20}
prewarm=${PREWARM:-120}
export CAPLAB_HOME=${OVERHEAD_HOME:-/tmp/caplab-overhead}
work=$(mktemp -d /tmp/caplab-overhead.XXXX)

source bench/fresh-node.sh
caplab=$CAPLAB
fresh_node --heap 2G
"$caplab" run --warmup 0s --duration "${prewarm}s" -q --out "$work/prewarm" >/dev/null
plain=() profiled=()
run() { # name, extra args
  local out=$work/$1
  "$caplab" run --warmup 10s --duration "${secs}s" -q --out "$out" "${@:2}" | grep '^Op rate' | sed "s/^/$1  /"
}
for i in $(seq 1 "$repeats"); do
  if (( i % 2 )); then order=(p c); else order=(c p); fi
  for o in "${order[@]}"; do
    if [ "$o" = p ]; then run "plain-$i"; plain+=("$work/plain-$i")
    else run "profiled-$i" --server-profile cpu; profiled+=("$work/profiled-$i"); fi
  done
done
"$caplab" node stop --no-drain >/dev/null
join() { local IFS=,; echo "$*"; }
"$caplab" compare "$(join "${plain[@]}")" "$(join "${profiled[@]}")"
echo "results: $work"
