#!/usr/bin/env bash
# Rate shapes on a real node: how closely each second's achieved rate follows the shape asked.
# One fresh node (E1 inserts, the defaults), then `caplab run` along a ramp, steps, a sine, bursts
# and a replayed trace, each after a 10 s warm-up at its first rate. Printed per shape: the
# seconds, how many were within 1 % of the shape's count for that second (the CSV counts
# completions, so an operation due at a second's edge may land in the next), the largest miss,
# and the operations due against those done; then each constant part's rate asked and achieved
# and its percentiles (result.json's shape_parts).
#
#   bench/shapes.sh [OUT]      default /tmp/caplab-shapes
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/caplab-shapes}
mkdir -p "$out"
export CAPLAB_HOME=$out/home
. bench/fresh-node.sh   # CAPLAB, fresh_node
fresh_node --heap 2G
# A trace as a dashboard exports it: a quiet minute's 2k, a spike, a dip to nothing, back.
{
  echo "second,rate"
  for s in $(seq 0 19); do echo "$s,2000"; done
  for s in $(seq 20 24); do echo "$s,9000"; done
  for s in $(seq 25 27); do echo "$s,0"; done
  for s in $(seq 28 39); do echo "$s,3000"; done
} > "$out/trace.csv"
shape() { # NAME ARGS...
  "$CAPLAB" run --warmup 10s -q --no-history --out "$out/$1" --force "${@:2}" >/dev/null
  python3 - "$out/$1" "$1" <<'PY'
import json, sys
from pathlib import Path
out, name = Path(sys.argv[1]), sys.argv[2]
r = json.load(open(out / "result.json"))
e = r["config"]["engine"]
rows = [l.split(",") for l in open(out / "latency.csv").read().splitlines()[1:]]
got = [int(x[4]) for x in rows]
# The shape's count for each measured second, from the trace or the closed forms.
shape = e["rate_shape"]
def asked(s):
    if shape.startswith("trace"):
        lines = [l.split(",")[-1] for l in open(shape.split(" ", 1)[1]).read().splitlines()[1:]]
        rates = [float(x) for x in lines]
        return rates[s] if s < len(rates) else rates[-1]
    kind, rest = shape.split(":", 1)
    if kind == "ramp":
        a, b = (float(x.rstrip("k")) * 1000 for x in rest.split("/")[0].split(".."))
        L = 60.0
        lo, hi = s, s + 1
        f = lambda u: a * min(u, L) + (b - a) * min(u, L) ** 2 / (2 * L) + b * max(u - L, 0)
        return f(hi) - f(lo)
    if kind == "steps":
        rates = [float(x.rstrip("k")) * 1000 for x in rest.split("/")[0].split(",")]
        return rates[min(s // 20, len(rates) - 1)]
    if kind == "burst":
        return 13000.0 if s % 30 >= 25 else 3000.0
    if kind == "sine":
        import math
        m, amp, T = 8000.0, 4000.0, 30.0
        F = lambda u: m * u + amp * T / (2 * math.pi) * (1 - math.cos(2 * math.pi * u / T))
        return F(s + 1) - F(s)
want = [asked(s) for s in range(len(got))]
within = sum(1 for g, w in zip(got, want) if w == 0 and g == 0 or w > 0 and abs(g - w) <= 0.01 * w)
worst = max((abs(g - w) / w for g, w in zip(got, want) if w > 0), default=0)
t = r["summary"]["total"]
print(f"{name:6} {shape:34} {len(got)} s: {within} within 1 % of the shape, largest miss {worst * 100:.1f} %, "
      f"due {t['due']:,} done {t['ops']:,}")
for p in r.get("shape_parts", []):
    print(f"       {p['from_s']:5.0f}-{p['to_s']:<5.0f} s: {p['target_rate']:>8,.0f} op/s asked, {p['achieved_rate']:>8,.0f} achieved, "
          f"p50 {p['response']['median_ms']:.2f} ms, p99 {p['response']['p99_ms']:.2f} ms")
PY
}
shape ramp --rate ramp:1k..20k/60s
shape steps --rate steps:2k,6k,12k/20s
shape sine --rate "sine:8k±4k/30s" --duration 60s
shape burst --rate "burst:3k,+10k for 5s every 30s" --duration 60s
shape trace --rate-file "$out/trace.csv"
