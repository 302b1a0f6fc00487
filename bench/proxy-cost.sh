#!/usr/bin/env bash
# What the network-fault proxy costs when it does nothing: E1 inserts against one local node
# at RATE op/s, interleaved (ABAB, REPEATS pairs) without a proxy and through an idle one. The
# proxied runs carry a fault (a 1 s blackhole) in their last seconds only, so the proxy is in
# the path for the whole run and idle before that; both are compared on the seconds before it.
# Prints, per run, the client CPU (cores, from result.json's per-second timeline) and the
# response-time median and p99.9 (ms, averaged over the per-second CSV rows), first 40 s.
#
#   bench/proxy-cost.sh [RATE] [REPEATS]      default 5000 op/s, 2 pairs
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-5000}
repeats=${2:-2}
export CAPLAB_HOME=${PROXY_HOME:-/tmp/caplab-proxy-cost}
addr=127.0.52.9
work=$(mktemp -d /tmp/caplab-proxy.XXXX)
source bench/fresh-node.sh
fresh_node --address "$addr" --jmx-port 7790 --heap 2G
# A warm node first (JIT), so the pairs compare the client, not the server's warm-up.
"$CAPLAB" run --hosts "$addr" --warmup 0s --rate "$rate" --duration 60s -q --out "$work/warm-up" >/dev/null

run() { # name, extra args
  local out="$work/$1"
  shift
  "$CAPLAB" run --hosts "$addr" --warmup 5s --rate "$rate" --duration 50s -q --out "$out" "$@" >/dev/null
  python3 - "$out" <<'EOF'
import csv, json, sys
d = sys.argv[1]
r = json.load(open(d + "/result.json"))
cpu = [s["client_cpu_cores"] for s in r["server"]["timeline"] if s["measured"]][:40]
rows = list(csv.DictReader(open(d + "/latency.csv")))[:40]
med = sum(float(x["medianMs"]) for x in rows) / len(rows)
p999 = sum(float(x["p999Ms"]) for x in rows) / len(rows)
print(f"{d.split('/')[-1]:<10} client CPU {sum(cpu) / len(cpu):.3f} cores  median {med:.3f} ms  p99.9 {p999:.3f} ms")
EOF
}
for i in $(seq 1 "$repeats"); do
  run "direct-$i"
  run "proxied-$i" --fault "blackhole node1 at 48s for 1s"
done
