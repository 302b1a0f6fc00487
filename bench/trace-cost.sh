#!/usr/bin/env bash
# What `--trace-slow` costs: one build of caplab, runs with a share of the operations sent
# traced (A: --trace-slow SHARE) and without (B), interleaved ABAB against one warm node, PAIRS
# pairs of WINDOW seconds (after 10 s of warm-up), flat out and at RATE op/s. Per run:
# throughput, the server's and caplab's CPU per operation (result.json's server_cpu_cores and
# client_cpu_cores over the op rate), p50 and p99.
#
#   bench/trace-cost.sh [PAIRS] [WINDOW] [RATE] [SHARE]
#   default 3 pairs of 20 s, 5000 op/s, 1%
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
window=${2:-20}
rate=${3:-5000}
share=${4:-1%}
export CAPLAB_HOME=${TRACE_COST_HOME:-/tmp/caplab-trace-cost}
work=$(mktemp -d /tmp/caplab-trace-cost.XXXX)
. bench/fresh-node.sh
fresh_node --heap 2G
"$CAPLAB" run --warmup 0s --duration 60s -q --no-history --out "$work/warm-up" >/dev/null
run() { # NAME RATE [FLAGS...]
  local name=$1 r=$2
  shift 2
  "$CAPLAB" run --rate "$r" --warmup 10s --duration "${window}s" -q --no-history --out "$work/$name" "$@" >/dev/null
}
for kind in flat rate; do
  r=0; [ $kind = rate ] && r=$rate
  for p in $(seq "$pairs"); do
    run "$kind-A$p" "$r" --trace-slow "$share"
    run "$kind-B$p" "$r"
  done
done
python3 - "$work" "$pairs" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
for kind in ("flat", "rate"):
    print(f"{kind}: run  op/s  server_us/op  caplab_us/op  p50_ms  p99_ms  traces_read")
    got = {"A": [], "B": []}
    for p in range(1, pairs + 1):
        for mode in "AB":
            r = json.load(open(f"{work}/{kind}-{mode}{p}/result.json"))
            t = r["summary"]["total"]
            s = r["server"]
            row = (
                t["op_rate"],
                s["server_cpu_cores"] * 1e6 / t["op_rate"],
                s["client_cpu_cores"] * 1e6 / t["op_rate"],
                t["response"]["median_ms"],
                t["response"]["p99_ms"],
            )
            read = r.get("traces", {}).get("read", "-")
            print(f"  {mode}{p}  {row[0]:.0f}  {row[1]:.1f}  {row[2]:.2f}  {row[3]:.2f}  {row[4]:.2f}  {read}")
            got[mode].append(row)
    for i, what in enumerate(("op/s", "server us/op", "caplab us/op", "p50 ms", "p99 ms")):
        a = statistics.mean(x[i] for x in got["A"])
        b = statistics.mean(x[i] for x in got["B"])
        print(f"  mean {what}: A {a:.2f}, B {b:.2f}, ratio {a / b:.3f}")
PY
echo "runs in $work"
