#!/usr/bin/env bash
# The workloads of Cassandra 5 (issue 35) on one fresh 5.0.9 node (4 GiB heap), each at its
# default size (populated where the profile says), 20 s warm-up and 30 s measured at a fixed
# rate: lwt and counter with --validate (claims' winners, counters' totals read back), sai,
# and vector with its recall@10. Prints each run's per-operation line and its validation or
# recall line.
#
# Usage: bench/c5-workloads.sh [RATE]   (default 500 op/s; about 6 minutes)
# Results: $OUT (default /tmp/c5-workloads). Run it alone on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-500}
OUT=${OUT:-/tmp/c5-workloads}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
mkdir -p "$OUT"
. bench/fresh-node.sh
fresh_node --heap 4G
caplab=$CAPLAB

for w in lwt counter sai vector; do
  extra=()
  case $w in lwt | counter) extra=(--validate) ;; esac
  echo "== $w at $RATE op/s"
  $caplab run --workload $w --rate "$RATE" --warmup 20s --duration 30s --force --no-history \
    --out "$OUT/$w" "${extra[@]}" | grep -E '^  [a-z_]+ +:|^(Validation|Recall)' | tr -s ' ' || true
done
