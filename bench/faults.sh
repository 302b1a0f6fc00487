#!/usr/bin/env bash
# Every fault type on this machine: 3 local nodes, RF 3, E1 inserts at RATE op/s and
# CONSISTENCY (default 300 op/s, QUORUM: three JVMs on 2 shared cores saturate near 1,500),
# one run per fault, each fault on node2 at 10 s of a 60 s window after a 20 s warm-up, 5 s long
# where it has a length. Prints per fault: when the client saw it (detect), how long after its
# end p99 and throughput were back in band (recover), when the node answered CQL again (back),
# availability during the fault, after it and over the window, the failures during it, and what
# reading back every acknowledged write found afterwards (read back as written of acknowledged,
# missing, wrong, unknown: sent and never acknowledged). WORKLOAD (default insert) may be any
# workload --validate reads back (keyvalue, timeseries: 2,000 partitions, populated first);
# FAULTS (a ';'-separated list) runs those faults only.
#
#   bench/faults.sh [RATE] [CONSISTENCY] [WORKLOAD]
#   FAULTS='kill node2 at 10s for 5s;pause node2 at 10s for 5s' bench/faults.sh 300 quorum keyvalue
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-300}
cl=${2:-quorum}
workload=${3:-insert}
export CAPLAB_HOME=${FAULTS_HOME:-/tmp/caplab-faults-bench}
work=$(mktemp -d /tmp/caplab-faults.XXXX)
source bench/fresh-node.sh
fresh_node --nodes 3 --address 127.0.53.1 --jmx-port 7800 --heap 1G
hosts=127.0.53.1,127.0.53.2,127.0.53.3
common=(--hosts "$hosts" --replication-factor 3 --consistency "$cl" --rate "$rate"
  --timeout 2s --give-up-after 2m -q --workload "$workload")
case "$workload" in insert | batch) ;; *) common+=(--partitions 2000) ;; esac
# Warm the nodes' JIT first, so the runs compare faults, not warm-ups.
"$CAPLAB" run "${common[@]}" --keyspace "faults_$workload" --warmup 0s --duration 60s --out "$work/warm" >/dev/null

printf '%-42s %7s %8s %7s %9s %9s %9s  %s  |  %s\n' fault detect recover back during after window "failed during" "read back"
all="pause node2 at 10s for 5s;kill node2 at 10s for 5s;stop node2 at 10s for 5s;drain node2 at 10s for 5s;\
restart node2 at 10s;delay node2 at 10s for 5s by 50ms;bandwidth node2 at 10s for 5s to 10KB/s;\
blackhole node2 at 10s for 5s;reset node2 at 10s"
IFS=';' read -r -a faults <<< "${FAULTS:-$all}"
for fault in "${faults[@]}"; do
  kind=$(echo "$fault" | cut -d' ' -f1)
  out="$work/$kind"
  # Each run in a keyspace of its own, every acknowledged write read back once the fault is
  # undone (--validate: at QUORUM after QUORUM writes, at ALL after ONE).
  "$CAPLAB" run "${common[@]}" --keyspace "faults_${workload}_$kind" --warmup 20s --duration 60s --fault "$fault" \
    --validate --out "$out" >/dev/null || true
  python3 - "$out" "$fault" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1] + "/result.json"))
f = r["faults"][0]
s = lambda v: "-" if v is None else f"{v:.1f}s"
p = lambda v: "-" if v is None else f"{100 * v:.1f}%"
errors = ", ".join(f"{k} {n}" for k, n in f["during"]["errors"].items()) or "none"
back = None if f.get("back_s") is None or f.get("start_s") is None else f["back_s"] - f["start_s"]
v = r.get("validation") or {}
check = (f"{v['found']}/{v['rows']} {v['consistency']}, {v['missing']} missing, {v['wrong']} wrong, {v['unknown']} unknown"
         if v else "not validated")
print(f"{sys.argv[2]:<42} {s(f['detect_s']):>7} {s(f['recover_s']):>8} {s(back):>7} "
      f"{p(f['during']['availability']):>9} {p(f['after']['availability']):>9} {p(r.get('availability')):>9}  {errors}  |  {check}")
EOF
done
