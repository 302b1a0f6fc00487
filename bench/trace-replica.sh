#!/usr/bin/env bash
# A late replica, seen in traces: 3 local nodes, RF 3, E1 inserts at ALL and RATE op/s, a tenth
# of the operations sent traced (--trace-slow 10%, kept over the p99). Node3 is stopped
# (SIGSTOP) for PAUSE at 5, 12 and 19 s of a 25 s window after 20 s of warm-up (each pause
# shorter than the 2 s write timeout): an operation coordinated by node1 or node2 waits for
# node3's acknowledgement, and one coordinated by node3 waits outside its session, in its
# socket. Prints, per run, how the traces read were told, and the share of those coordinated by
# node1 or node2 told as waiting for node3's reply.
#
#   bench/trace-replica.sh [RUNS] [RATE] [PAUSE]
#   default 2 runs, 300 op/s, 800ms
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2}
rate=${2:-300}
pause=${3:-800ms}
export CAPLAB_HOME=${TRACE_REPLICA_HOME:-/tmp/caplab-trace-replica}
work=$(mktemp -d /tmp/caplab-trace-replica.XXXX)
source bench/fresh-node.sh
fresh_node --nodes 3 --address 127.0.54.1 --jmx-port 7820 --heap 1G
hosts=127.0.54.1,127.0.54.2,127.0.54.3
common=(--hosts "$hosts" --replication-factor 3 --consistency all --rate "$rate" --timeout 2s -q --keyspace trace_replica)
"$CAPLAB" run "${common[@]}" --warmup 0s --duration 30s --out "$work/warm" >/dev/null
for r in $(seq "$runs"); do
  "$CAPLAB" run "${common[@]}" --warmup 20s --duration 25s --trace-slow 10% \
    --fault "pause node3 at 5s for $pause" --fault "pause node3 at 12s for $pause" \
    --fault "pause node3 at 19s for $pause" --out "$work/run$r" >/dev/null || true
done
python3 - "$work" "$runs" <<'PY'
import json, sys
work, runs = sys.argv[1], int(sys.argv[2])
for r in range(1, runs + 1):
    d = json.load(open(f"{work}/run{r}/result.json"))
    t = d["traces"]
    read = [o for o in t["ops"] if o["told"] != "unread"]
    others = [o for o in read if o["coordinator"] != "127.0.54.3"]
    waited = [o for o in others if o["told"] == "replica" and "127.0.54.3's reply" in o["said"]]
    p99 = d["summary"]["total"]["response"]["p99_ms"]
    print(f"run {r}: p99 {p99:.1f} ms, {t['over']} traced over p99, {len(read)} read: {t['by_where']}; "
          f"coordinated by node1 or node2: {len(others)}, waiting for node3: {len(waited)}")
    for o in read[:4]:
        print(f"  {o['response_ms']:.1f} ms, coordinator {o['coordinator']}: {o['said']}; {o['cause']}")
PY
echo "runs in $work"
