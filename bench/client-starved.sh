#!/usr/bin/env bash
# A client starved of CPU against one that is not: E1 inserts at RATE op/s with caplab pinned to
# CPU 1 (--client-cpus 1), alone (clean) or beside three busy loops pinned to the same CPU (hog),
# interleaved, PAIRS pairs of 5 s warm-up and 15 s measured. Per run: operations started more than
# 10 ms late, the largest start lag, p99 response and service time, caplab's and the server's CPU.
#
#   bench/client-starved.sh [PAIRS] [RATE]     default 3 pairs at 2000 op/s
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
rate=${2:-2000}
export CAPLAB_HOME=${STARVED_HOME:-/tmp/caplab-starved}
work=$(mktemp -d /tmp/caplab-starved.XXXX)
. bench/fresh-node.sh
fresh_node
hogs() { for _ in 1 2 3; do taskset -c 1 sh -c 'while :; do :; done' & done; }
trap 'pkill -f "while :; do :; done" || true; "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
for p in $(seq "$pairs"); do
  for mode in clean hog; do
    [ $mode = hog ] && hogs
    "$CAPLAB" run --client-cpus 1 --rate "$rate" --warmup 5s --duration 15s -q --no-history \
      --out "$work/$mode-$p" >/dev/null
    pkill -f "while :; do :; done" || true
    python3 - "$work/$mode-$p/result.json" "$mode $p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["summary"]["total"]; s = r["server"]
print(sys.argv[2], f"late {t['late_ops']} max_lag_ms {t['max_lag_ms']:.1f} p99 {t['response']['p99_ms']:.1f}",
      f"service_p99 {t['service']['p99_ms']:.1f} client_cores {s['client_cpu_cores']:.3f} server_cores {s['server_cpu_cores']:.3f}")
PY
  done
done
