#!/usr/bin/env bash
# What explaining the slow operations costs the client: two builds of caplab, A (keeps the slow
# operations and runs the canary) and B (one without them, e.g. 4e6567a), interleaved ABAB
# against one warm node, PAIRS pairs of WINDOW seconds (after 10 s of warm-up), flat out and
# at RATE op/s. Per run: throughput and caplab's CPU per operation (result.json's
# client_cpu_cores over the op rate).
#
#   A=path/to/new/caplab B=path/to/old/caplab bench/slow-ops-cost.sh [PAIRS] [WINDOW] [RATE]
#   default 4 pairs of 20 s, 5000 op/s
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-4}
window=${2:-20}
rate=${3:-5000}
: "${A:?A=path of the build that keeps slow operations}" "${B:?B=path of a build without}"
export CAPLAB_HOME=${SLOW_COST_HOME:-/tmp/caplab-slow-cost}
work=$(mktemp -d /tmp/caplab-slow-cost.XXXX)
CAPLAB=$A
. bench/fresh-node.sh
fresh_node --heap 2G
"$A" run --warmup 0s --duration 60s -q --no-history --out "$work/warm-up" >/dev/null
run() { # BINARY NAME RATE
  "$1" run --rate "$3" --warmup 10s --duration "${window}s" -q --no-history --out "$work/$2" >/dev/null
}
for kind in flat rate; do
  r=0; [ $kind = rate ] && r=$rate
  for p in $(seq "$pairs"); do
    run "$A" "$kind-A$p" "$r"
    run "$B" "$kind-B$p" "$r"
  done
done
python3 - "$work" "$pairs" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
for kind in ("flat", "rate"):
    print(f"{kind}: run  op/s  caplab_us/op")
    got = {"A": [], "B": []}
    for p in range(1, pairs + 1):
        for mode in "AB":
            r = json.load(open(f"{work}/{kind}-{mode}{p}/result.json"))
            t = r["summary"]["total"]
            us = r["server"]["client_cpu_cores"] * 1e6 / t["op_rate"]
            print(f"  {mode}{p}  {t['op_rate']:.0f}  {us:.2f}")
            got[mode].append((t["op_rate"], us))
    for i, what in enumerate(("op/s", "caplab us/op")):
        a = statistics.mean(x[i] for x in got["A"])
        b = statistics.mean(x[i] for x in got["B"])
        print(f"  mean {what}: A {a:.2f}, B {b:.2f}, ratio {a / b:.3f}")
PY
echo "runs in $work"
