#!/usr/bin/env bash
# The history's change detection on real runs (issue 34): one configuration run again and again
# on a settled node, then a known change, then more runs. The change should be found at the run
# where it began, and nothing else should be.
#
#   1. a settled node: Cassandra 5.0.9, 4 GiB heap, E1 inserts flat out for 3 minutes first;
#   2. BEFORE runs (default 20) of E1 inserts flat out, 10 s warm-up and 30 s measured each,
#      recorded in their own history ($OUT/history.db), labelled run=N phase=before; then
#      `caplab history check` (it should pass: exit 0);
#   3. AFTER runs (default 10) of the same with a CPU hog busy one whole core beside the node for
#      each run (phase=hog): throughput falls, latency rises; then `caplab history check`
#      (it should fail, exit 1, naming the first hog run) and the series' records and changes.
#
# Usage: bench/history-calibration.sh [BEFORE] [AFTER]   (defaults 20, 10; about 25 minutes)
# Results: $OUT (default /tmp/history-calibration). Run it alone on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:-20}
AFTER=${2:-10}
OUT=${OUT:-/tmp/history-calibration}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
db="$OUT/history.db"
source bench/fresh-node.sh
caplab=$CAPLAB
rm -f "$db" "$db-wal" "$db-shm"
mkdir -p "$OUT"

log() { printf '== %s\n' "$*" >&2; }

$caplab node stop >/dev/null 2>&1 || true
$caplab node wipe --force >/dev/null 2>&1 || true
log "starting a node (5.0.9, 4G heap)"
$caplab node start --heap 4G >/dev/null
trap '$caplab node stop --no-drain >/dev/null 2>&1 || true' EXIT
log "settling it: 3 minutes flat out"
$caplab run --warmup 0s --duration 3m -q --force --out "$OUT/settle" --no-history >/dev/null

run() { # $1 = run number, $2 = phase
  $caplab run --warmup 10s --duration 30s -q --force --out "$OUT/run-$1" --history "$db" \
    --label "run=$1" --label "phase=$2" 2>&1 | grep -E '^(Op rate|Steady state)' | tr -s ' ' >&2 || true
}

for i in $(seq "$BEFORE"); do
  log "run $i of $BEFORE, as it is"
  run "$i" before
done
log "check after $BEFORE runs with no change (should pass)"
set +e
$caplab history --history "$db" check
echo "exit code: $?"
set -e

for i in $(seq $((BEFORE + 1)) $((BEFORE + AFTER))); do
  log "run $i: with a CPU hog busy one core beside the node"
  python3 -c "
import time
end = time.time() + 45
while time.time() < end: pass" &
  hog=$!
  run "$i" hog
  kill "$hog" 2>/dev/null || true
  wait "$hog" 2>/dev/null || true
done

log "check after the change (should fail, naming run $((BEFORE + 1)))"
set +e
$caplab history --history "$db" check
echo "exit code: $?"
set -e
series=$($caplab history --history "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["series"])')
$caplab history --history "$db" "$series"
