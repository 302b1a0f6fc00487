#!/usr/bin/env bash
# Is the client the limit of a bursty replay, and is --threads its fix? (issue 90): an application
# on the DataStax Python driver (tests/apps/shop.py: 150 operations a second, 450 in the last
# second of every five) captured for 20 s from a fresh 5.0.9 node, then replayed at its own pace
# (1x) and at four times it (4x), each with one client thread and with two, alternated (round 1:
# 1 then 2 threads, round 2: 2 then 1), ROUNDS rounds. Per replay: p99 and p99.9, the share of the
# slow operations named for the client, the share sent late by a free worker, the client's waits
# for a CPU, and the audit's verdict.
#
#   bench/bursty-replay.sh [ROUNDS]        default 2; about 10 minutes; run it alone
#   SHOP_BURST=instant bench/bursty-replay.sh 2
#                                           each burst's 450 operations due at once, sent as fast as
#                                           the driver sends them (as the report's application did)
#
# Results: $OUT (default /tmp/bursty-replay): replays.tsv and each replay's directory.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
OUT=${OUT:-/tmp/bursty-replay}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
rm -rf "$OUT/runs" "$OUT/shop.jsonl" "$OUT/shop.fql"
mkdir -p "$OUT/runs"
. bench/fresh-node.sh
fresh_node
python3 tests/apps/shop.py schema 127.0.0.1 9042
"$CAPLAB" capture --for 300s --out "$OUT/shop.jsonl" 2>"$OUT/capture.log" &
capture=$!
until [ -e "$OUT/shop.fql/node1/metadata.cq4t" ]; do sleep 0.5; done
python3 tests/apps/shop.py run 127.0.0.1 9042 20 "$OUT/app.json"
kill -INT "$capture"
wait "$capture" || true
printf 'round\tspeed\tthreads\tp99_ms\tp999_ms\tclient_named\tlate\tcpu_wait\tclient_cores\tlimit\n' >"$OUT/replays.tsv"
n=0
for round in $(seq "$rounds"); do
  order="1 2"
  [ $((round % 2)) = 0 ] && order="2 1"
  for speed in 1 4; do
    for threads in $order; do
      n=$((n + 1))
      dir="$OUT/runs/$n-x$speed-t$threads"
      "$CAPLAB" run --replay "$OUT/shop.jsonl" --speed "$speed" --threads "$threads" --keyspace "shop_$n" \
        -q --no-history --out "$dir" >/dev/null
      python3 - "$dir/result.json" "$round" "$speed" "$threads" >>"$OUT/replays.tsv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["summary"]["total"]["response"]; c = r.get("client") or {}
print("\t".join([sys.argv[2], sys.argv[3] + "x", sys.argv[4], f"{t['p99_ms']:.1f}", f"{t['p999_ms']:.1f}",
                 f"{(c.get('slow_share') or 0) * 100:.0f} %", f"{c.get('late_share', 0) * 100:.2f} %",
                 f"{(c.get('cpu_wait_share') or 0) * 100:.1f} %", f"{r['server']['client_cpu_cores']:.3f}",
                 c.get("limit", "?")]))
PY
      tail -n 1 "$OUT/replays.tsv" >&2
    done
  done
done
column -t -s $'\t' "$OUT/replays.tsv"
