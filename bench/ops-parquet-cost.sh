#!/usr/bin/env bash
# What keeping every operation costs (`--ops-parquet`): E1 inserts flat out against a warm local
# node, runs with the operations file (A) and without (B) interleaved ABAB, PAIRS pairs of
# WINDOW seconds each (after 10 s of warm-up). Per run: throughput, caplab's CPU (µs per
# operation, from result.json's client_cpu_cores), the writer thread's CPU per row and the
# file's bytes per row (result.json's files.operations). A fixed-rate pair follows (RATE op/s),
# where the client's CPU per operation is compared without the server's limit moving it.
#
#   bench/ops-parquet-cost.sh [PAIRS] [WINDOW] [RATE]     default 4 pairs of 20 s, 5000 op/s
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-4}
window=${2:-20}
rate=${3:-5000}
export CAPLAB_HOME=${OPS_HOME:-/tmp/caplab-ops-cost}
work=$(mktemp -d /tmp/caplab-ops.XXXX)
. bench/fresh-node.sh
fresh_node --heap 2G
# A warm node first (JIT), so the pairs compare the client, not the server's warm-up.
"$CAPLAB" run --warmup 0s --duration 60s -q --out "$work/warm-up" >/dev/null
run() { # NAME RATE [--ops-parquet]
  "$CAPLAB" run --rate "$2" --warmup 10s --duration "${window}s" -q --out "$work/$1" "${@:3}" >/dev/null
}
for p in $(seq "$pairs"); do
  run "flat-A$p" 0 --ops-parquet
  run "flat-B$p" 0
done
for p in $(seq "$pairs"); do
  run "rate-A$p" "$rate" --ops-parquet
  run "rate-B$p" "$rate"
done
python3 - "$work" "$pairs" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
for kind in ("flat", "rate"):
    print(f"{kind}: run  op/s  caplab_us/op  writer_us/row  bytes/row")
    got = {"A": [], "B": []}
    for p in range(1, pairs + 1):
        for mode in "AB":
            r = json.load(open(f"{work}/{kind}-{mode}{p}/result.json"))
            t = r["summary"]["total"]
            secs = r["summary"]["operation_time_s"]
            us = r["server"]["client_cpu_cores"] * 1e6 / t["op_rate"]
            f = r["files"].get("operations")
            w = f"{f['writer_cpu_s'] * 1e6 / f['rows']:.2f}  {f['bytes'] / f['rows']:.1f}" if f else "-  -"
            print(f"  {mode}{p}  {t['op_rate']:.0f}  {us:.2f}  {w}")
            got[mode].append((t["op_rate"], us))
    for i, what in enumerate(("op/s", "caplab us/op")):
        a = statistics.mean(x[i] for x in got["A"])
        b = statistics.mean(x[i] for x in got["B"])
        print(f"  mean {what}: with {a:.2f}, without {b:.2f}, ratio {a / b:.3f}")
PY
echo "runs in $work"
