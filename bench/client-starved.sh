#!/usr/bin/env bash
# A client starved of CPU against one that is not: E1 inserts at RATE op/s with caplab pinned to
# CPU 1 (--client-cpus 1), alone (clean) or beside three busy loops pinned to the same CPU (hog),
# interleaved, PAIRS pairs of 5 s warm-up and 15 s measured. Per run: operations started more than
# 10 ms late, the largest start lag, p99 response and service time, caplab's and the server's CPU,
# the other processes' cores, the share of slow operations named for the client, the share of the
# window its runtime stalled and its thread waited for a CPU, and the audit's limit (client,
# machine or neither).
#
#   bench/client-starved.sh [PAIRS] [RATE]     default 3 pairs at 2000 op/s
#   PIN_NODE=1 bench/client-starved.sh 3        the node pinned to CPU 0, so the busy loops on CPU 1
#                                               starve the client alone
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
rate=${2:-2000}
export CAPLAB_HOME=${STARVED_HOME:-/tmp/caplab-starved}
work=$(mktemp -d /tmp/caplab-starved.XXXX)
. bench/fresh-node.sh
fresh_node
if [ -n "${PIN_NODE:-}" ]; then
  pid=$("$CAPLAB" node status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["node"]["pid"])')
  taskset -a -p -c 0 "$pid" >/dev/null
fi
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
c, m = r.get("client") or {}, s.get("machine") or {}
named = {x["cause"]: x["share"] for x in (r.get("slow") or {}).get("by_cause", [])}.get("client", 0)
print(sys.argv[2], f"late {t['late_ops']} max_lag_ms {t['max_lag_ms']:.1f} p99 {t['response']['p99_ms']:.1f}",
      f"service_p99 {t['service']['p99_ms']:.1f} client_cores {s['client_cpu_cores']:.3f} server_cores {s['server_cpu_cores']:.3f}",
      f"other_cores {m.get('other_cpu_cores', 0):.2f} client_named {named:.0%}",
      f"stalled {c.get('stalled_share', 0):.1%} cpu_wait {c.get('cpu_wait_share') or 0:.1%} limit {c.get('limit')}")
PY
  done
done
