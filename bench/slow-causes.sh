#!/usr/bin/env bash
# Slow operations explained, with a planted cause (issue 75's proof) and without: E1 inserts,
# warm-up then a measured window, each run's `slow` shares from result.json.
#   gc      a node with a GC_HEAP heap (default 256M) at GC_RATE op/s (default 3,000) of E1 rows whose values are
#           GC_VALUE characters (default 10): GC pauses (GC_ARGS: more node flags, e.g.
#           "--gc parallel"; on a fast machine the plant that makes GC the tail is
#           GC_RATE=5000 GC_VALUE=200 GC_ARGS="--gc parallel": results/slow-causes.md, gc-plant-xeon)
#   client  a node pinned to CPU 0 (started with NODE_ARGS too, e.g. "--heap 1G --gc zgc") at
#           2,000 op/s, caplab pinned to CPU 1 beside HOGS busy loops there (default 3; only the
#           client is starved)
#   none    the same, nothing planted
# client and none are interleaved, RUNS each. (The fault proxy's delay on one node of three is
# tests/faults_cluster.rs's delay_through_the_proxy.)
#
#   bench/slow-causes.sh [RUNS] [PARTS]     default 2 runs, parts "gc client"
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2}
parts=${2:-gc client}
export CAPLAB_HOME=${SLOW_HOME:-/tmp/caplab-slow-causes}
work=$(mktemp -d /tmp/caplab-slow-causes.XXXX)
. bench/fresh-node.sh
show() {
  python3 - "$1/result.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["slow"]; t = r["summary"]["total"]
shares = ", ".join(f"{c['cause']} {100 * c['share']:.0f} %" for c in s["by_cause"])
c = r.get("client") or {}
print(f"{sys.argv[2]}: p99 {t['response']['p99_ms']:.1f} ms, {s['over_p99']} over p99, {s['matched']} matched: {shares}; "
      f"client stalled {100 * c.get('stalled_share', 0):.2f} %, waited for a CPU {100 * (c.get('cpu_wait_share') or 0):.2f} %, "
      f"p50 {t['response']['median_ms']:.2f} ms")
PY
}
hogs() { for _ in $(seq "${HOGS:-3}"); do taskset -c 1 sh -c 'while :; do :; done' & done; }
unhog() { pkill -f "while :; do :; done" || true; }
trap 'unhog; "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
if [[ $parts == *gc* ]]; then
# shellcheck disable=SC2086 # GC_ARGS is flags, split as written
fresh_node --heap "${GC_HEAP:-256M}" ${GC_ARGS:-}
for r in $(seq "$runs"); do
  "$CAPLAB" run --rate "${GC_RATE:-3000}" --value-size "${GC_VALUE:-10}" --warmup 20s --duration 30s -q --no-history \
    --out "$work/gc-$r" >/dev/null
  show "$work/gc-$r" "gc $r"
done
fi
[[ $parts == *client* ]] || exit 0
# shellcheck disable=SC2086 # NODE_ARGS is flags, split as written
fresh_node --cpus 0 ${NODE_ARGS:-}
trap 'unhog; "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
"$CAPLAB" run --rate 2000 --warmup 60s --duration 10s -q --no-history --out "$work/jit" >/dev/null
for r in $(seq "$runs"); do
  for mode in none client; do
    [ $mode = client ] && hogs
    "$CAPLAB" run --client-cpus 1 --rate 2000 --warmup 5s --duration 30s -q --no-history \
      --out "$work/$mode-$r" >/dev/null
    unhog
    show "$work/$mode-$r" "$mode $r"
  done
done
