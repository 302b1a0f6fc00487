#!/usr/bin/env bash
# The latency–throughput curve and its knee on a real node: one fresh node (E1 inserts, the
# defaults, 2 GB heap), flat out for 60 s to compile the write path, then, ROUNDS times in turn,
# a ramp from 1k op/s to past what the node holds and steps of 2k op/s up to the same, each after
# a 10 s warm-up at its first rate. Printed per run: the knee (result.json's `knee`) and the
# curve's points (`shape_parts`); the pages are in OUT/<run>/report.html, and the first ramp's
# curve is also drawn to OUT/knee.png by headless Chromium.
#
#   bench/knee.sh [OUT] [ROUNDS]      default /tmp/caplab-knee, 2
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/caplab-knee}
rounds=${2:-2}
mkdir -p "$out"
export CAPLAB_HOME=$out/home
. bench/fresh-node.sh   # CAPLAB, fresh_node
fresh_node --heap 2G
"$CAPLAB" run --warmup 0 --duration 60s -q --no-history --out "$out/jit" --force >/dev/null
knee() { # NAME ARGS...
  "$CAPLAB" run --warmup 10s -q --no-history --out "$out/$1" --force "${@:2}" >/dev/null
  python3 - "$out/$1" "$1" <<'PY'
import json, sys
from pathlib import Path
out, name = Path(sys.argv[1]), sys.argv[2]
r = json.load(open(out / "result.json"))
k = r.get("knee") or {}
g = lambda v: "–" if v is None else f"{v:,.0f}"
print(f"{name:8} {r['config']['engine']['rate_shape']:24} knee: held {g(k.get('held_rate'))}, broke {g(k.get('broke_rate'))} "
      f"op/s (low-load {k.get('percentile')} {k.get('base_ms', 0):.2f} ms; {k.get('broke_because') or 'no rise'})")
for p in r.get("shape_parts", []):
    print(f"         {p['from_s']:5.0f}-{p['to_s']:<5.0f} s: {p['target_rate']:>8,.0f} asked, {p['achieved_rate']:>8,.0f} achieved, "
          f"p50 {p['response']['median_ms']:7.2f} ms, p99 {p['response']['p99_ms']:8.2f} ms")
PY
}
for i in $(seq 1 "$rounds"); do
  knee "ramp$i" --rate ramp:1k..40k/2m
  knee "steps$i" --rate steps:2k,4k,6k,8k,10k,12k,14k,16k,18k,20k,22k,24k,26k,28k,30k,32k/10s
done
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,5200 \
  --virtual-time-budget=5000 --screenshot="$out/page.png" "file://$out/ramp1/report.html" 2>/dev/null || true
echo "page: $out/page.png"
