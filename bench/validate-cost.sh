#!/usr/bin/env bash
# What reading back every acknowledged write costs (issue 35, `--validate`): E1 inserts and
# batches flat out on one fresh 5.0.9 node (4 GiB heap), each run with --validate in a fresh
# keyspace, then the time the read-back took per million rows, and `caplab validate DIR` again
# on the finished run (what checking it later costs).
#
# Usage: bench/validate-cost.sh [SECONDS]   (default 60 s measured per run; about 8 minutes)
# Results: $OUT (default /tmp/validate-cost). Run it alone on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
OUT=${OUT:-/tmp/validate-cost}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
mkdir -p "$OUT"
. bench/fresh-node.sh
fresh_node --heap 4G
caplab=$CAPLAB

for w in insert batch; do
  $caplab run --workload $w --keyspace "v_$w" --warmup 10s --duration "${SECS}s" -q --force \
    --out "$OUT/$w" --no-history --validate | grep -E '^(Op rate|Validation)' | tr -s ' '
  python3 - "$OUT/$w/result.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["validation"]
print(f"  {d['workload']}: {v['rows']:,} rows of {v['operations']:,} operations read back in {v['elapsed_s']:.1f} s: "
      f"{v['elapsed_s'] / v['rows'] * 1e6:.1f} s per million rows ({v['rows'] / v['elapsed_s']:,.0f} rows/s)")
PY
  s=$(date +%s.%N)
  $caplab validate "$OUT/$w" | grep Validation | tr -s ' '
  echo "  caplab validate again: $(echo "$(date +%s.%N) - $s" | bc -l | cut -c1-5) s, process start included"
done
