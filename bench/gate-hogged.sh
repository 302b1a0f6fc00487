#!/usr/bin/env bash
# The nightly gate on this machine, as a user would run it (issue 90): one fresh node (5.0.9,
# 2 GiB heap), E1 inserts at 3,000 op/s, 10 s warm-up and 15 s windows, each run recorded in a
# history of its own and `caplab history check --fail-on regression` after it. CLEAN runs on the
# quiet machine first, then HOGGED runs beside two busy loops (one a core), then, in a second
# series on the same node, CLEAN runs with one hogged run among them.
#
# Per run: p99, p99.9, server CPU per operation, other processes' CPU on the run's cores, and the
# check's exit status (0 green, 1 a change, 3 not judged: the latest run disturbed) and verdict.
#
#   bench/gate-hogged.sh [CLEAN] [HOGGED]      defaults 8 and 5; about 25 minutes; run it alone
#
# Results: $OUT (default /tmp/gate-hogged): series.tsv (one row a run) and each check's text.
set -euo pipefail
cd "$(dirname "$0")/.."
clean=${1:-8}
hogged=${2:-5}
OUT=${OUT:-/tmp/gate-hogged}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
rm -rf "$OUT/runs" "$OUT"/*.db* "$OUT/checks"
mkdir -p "$OUT/runs" "$OUT/checks"
. bench/fresh-node.sh
fresh_node --heap 2G
hogs() { for _ in 1 2; do sh -c 'while :; do :; done' & done; }
trap 'pkill -f "while :; do :; done" || true; "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
printf 'series\trun\tmode\tp99_ms\tp999_ms\tserver_cpu_us_per_op\tother_cores\tdisturbed\tcheck\tverdict\n' >"$OUT/series.tsv"

run() { # $1 series, $2 run number, $3 clean|hogged
  local db="$OUT/$1.db" dir="$OUT/runs/$1-$2"
  [ "$3" = hogged ] && hogs
  "$CAPLAB" run --rate 3000 --warmup 10s --duration 15s -q --out "$dir" --history "$db" \
    --label "run=$2" --label "mode=$3" >/dev/null
  pkill -f "while :; do :; done" || true
  set +e
  "$CAPLAB" history --history "$db" check --fail-on regression >"$OUT/checks/$1-$2.txt" 2>&1
  local code=$?
  set -e
  local verdict
  verdict=$(grep -E '^(  REGRESSION|  IMPROVEMENT|  STARVED|DISTURBED|No new change|NOT JUDGED|FAIL)' "$OUT/checks/$1-$2.txt" |
    sed 's/ from the run of.*//' | cut -c1-90 | paste -sd '|' -)
  python3 - "$dir/result.json" "$1" "$2" "$3" "$code" "$verdict" >>"$OUT/series.tsv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["summary"]["total"]; s = r["server"]; m = s.get("machine") or {}
cpu = sum(n["cpu_seconds"] for n in s["nodes"]) * 1e6 / max(t["ops"], 1)
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], f"{t['response']['p99_ms']:.2f}", f"{t['response']['p999_ms']:.2f}",
                 f"{cpu:.1f}", f"{m.get('other_cpu_cores', 0):.2f}", "yes" if m.get("disturbed") else "no", sys.argv[5], sys.argv[6]]))
PY
  tail -n 1 "$OUT/series.tsv" >&2
}

for i in $(seq "$clean"); do run eight-then-five "$i" clean; done
for i in $(seq "$hogged"); do run eight-then-five "$((clean + i))" hogged; done
# The second series: the same clean runs with one hogged run among them (the fifth).
for i in $(seq "$((clean + 1))"); do
  mode=clean
  [ "$i" = 5 ] && mode=hogged
  run one-hogged "$i" "$mode"
done
column -t -s $'\t' "$OUT/series.tsv"
