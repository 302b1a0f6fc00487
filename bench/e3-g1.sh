#!/usr/bin/env bash
# E3's capacity search for G1 alone (experiments/e3-capacity.yaml's g1 variant: Cassandra
# 6.0-alpha2 on JDK 21, G1, 4 GiB heap; the timeseries workload; p99.9 < 100 ms in every 10 s
# window; 30 s a step, 10 % precision, the automatic warm-up at most 2 min, 2-minute confirmation),
# on a fresh node: does the search excuse a failing rate as client-bound when G1's pauses failed
# it? (issue 90). Prints each step's verdict line and the capacity.
#
#   bench/e3-g1.sh          about 25 minutes; run it alone (needs a JDK 21: scripts/setup.sh --test)
#
# Results: $OUT (default /tmp/e3-g1): capacity.json and every step's results.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/e3-g1}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT-home}
rm -rf "$OUT"
. bench/fresh-node.sh
fresh_node --version 6.0-alpha2 --java 21 --heap 4G --gc g1
set +e
"$CAPLAB" capacity --workload timeseries --sla 'p99.9<100ms/10s' --measure 30s --precision 10% \
  --warmup-max 2m --no-history --out "$OUT"
echo "exit $?"
set -e
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
c = json.load(open(os.path.join(out, "capacity.json")))
for s in c["steps"] + c.get("confirmation", []):
    r = json.load(open(os.path.join(out, s["dir"], "result.json")))
    a = r.get("client") or {}
    f = a.get("failing") or {}
    share = {x["cause"]: x["share"] for x in (r.get("slow") or {}).get("by_cause", [])}
    why = "CLIENT-BOUND" if s.get("client_bound") else "MACHINE-BOUND" if s.get("machine_bound") else ""
    failing = f"failing ops {f['over']}, client named {f['client']:.0f} of {f['named']:.0f} kept, client made {f['client_windows']} of {f['windows']} windows fail" if f else ""
    print(f"{s['rate']:>8.0f} op/s {'pass' if s['pass'] else 'FAIL'} worst {s.get('worst_ms')} | over p99: client {share.get('client', 0):.0%} gc {share.get('gc_pause', 0):.0%} | {failing} | limit {a.get('limit')} {why}")
print("capacity", c.get("capacity"), "confirmed", c.get("confirmed"), "at least", c.get("at_least"), "note", c.get("stopped_early"))
PY
