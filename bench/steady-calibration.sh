#!/usr/bin/env bash
# The steady-state verdict's error rates, measured on this machine (issue 33):
#
#   1. a settled node: Cassandra 5.0.9, 4 GiB heap, E1 inserts flat out for 5 minutes first;
#   2. stationary windows: 30 minutes flat out and 30 minutes at a fixed rate (half of what the
#      node did flat out), each one run, judged as 30 consecutive 60 s windows
#      (`caplab steady --window 60s`): every window not classed flat is a false alarm;
#   3. known changes, placed in the last third of 60 s windows: a CPU hog beside the node
#      (busy 25 %, 50 % and 100 % of one core; flat out, so throughput falls), and a response
#      delay through the fault proxy (1 ms and 5 ms; at the fixed rate, so p50 rises). Each
#      window is judged; the change's size is measured from the window itself (the last 20 s
#      against the first 40 s) and the detection rate given per size.
#
# Usage: bench/steady-calibration.sh [RUNS_PER_CHANGE] [STATIONARY_MINUTES]   (defaults 8, 30)
# About 2 hours with the defaults. Results: $OUT (default /tmp/steady-calibration), summary on
# stdout. Run it alone: anything else on the 2 cores is a change the verdict should see.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-8}
MINUTES=${2:-30}
OUT=${OUT:-/tmp/steady-calibration}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
source bench/fresh-node.sh
caplab=$CAPLAB
mkdir -p "$OUT"

log() { printf '== %s\n' "$*" >&2; }

$caplab node stop >/dev/null 2>&1 || true
$caplab node wipe --force >/dev/null 2>&1 || true
log "starting a node (5.0.9, 4G heap)"
$caplab node start --heap 4G >/dev/null
trap '$caplab node stop --no-drain >/dev/null 2>&1 || true' EXIT

log "settling it: 5 minutes flat out"
$caplab run --warmup 0s --duration 5m -q --force --out "$OUT/settle" >/dev/null
flat=$(python3 -c "import json;print(round(json.load(open('$OUT/settle/result.json'))['summary']['total']['op_rate']))")
rate=$((flat / 2))
log "flat out: $flat op/s; fixed rate: $rate op/s"

log "stationary, flat out: ${MINUTES} minutes"
$caplab run --warmup 0s --duration "${MINUTES}m" -q --force --out "$OUT/stationary-flat" >/dev/null
log "stationary, at $rate op/s: ${MINUTES} minutes"
$caplab run --warmup 0s --rate "$rate" --duration "${MINUTES}m" -q --force --out "$OUT/stationary-rate" >/dev/null

# Waits until the run writing into $1 has closed $2 seconds (CSV rows).
wait_seconds() {
  until [ "$(($(wc -l <"$1/latency.csv" 2>/dev/null || echo 1) - 1))" -ge "$2" ]; do sleep 0.2; done
}

# A hog busy $1 % of one core for $2 seconds.
hog() {
  python3 -c "
import time
duty, end = $1 / 100, time.time() + $2
while time.time() < end:
    t = time.time()
    while time.time() - t < duty * 0.01: pass
    time.sleep((1 - duty) * 0.01)"
}

for busy in 25 50 100; do
  for i in $(seq "$RUNS"); do
    dir="$OUT/hog-$busy-$i"
    log "CPU hog $busy % from 40 s: run $i of $RUNS"
    $caplab run --warmup 0s --duration 60s -q --force --out "$dir" >/dev/null &
    run=$!
    wait_seconds "$dir" 40
    hog "$busy" 22
    wait "$run" || true
  done
done

for ms in 1 5; do
  for i in $(seq "$RUNS"); do
    log "delay ${ms} ms from 40 s at $rate op/s: run $i of $RUNS"
    $caplab run --warmup 0s --rate "$rate" --duration 60s --fault "delay node1 at 40s for 20s by ${ms}ms" -q --force \
      --out "$OUT/delay-$ms-$i" >/dev/null || true
  done
done

for d in "$OUT"/stationary-* "$OUT"/hog-* "$OUT"/delay-*; do
  $caplab steady "$d" --window 60s --json >"$d/windows.json"
done
python3 bench/steady-calibration.py "$OUT"
