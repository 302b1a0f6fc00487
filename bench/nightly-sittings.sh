#!/usr/bin/env bash
# Issue 45's real proof of the nightly gate: a series over sittings passes `history check`; a
# slowdown from outside caplab's configuration fails it and `check --confirm` confirms it; the
# same change, rerun once the machine is itself again, is not confirmed.
#
#   sitting s1: a fresh node (5.0.9, 4 GiB heap), settled 2 minutes flat out, then RUNS runs of
#               E1 inserts flat out (10 s warm-up, 20 s measured), labelled sitting=s1;
#   sitting s2: the node stopped and started again, settled 1 minute, RUNS runs (sitting=s2);
#               `caplab history check` (should pass: exit 0);
#   sitting s3: restarted and settled again, 4 runs as they are, then 3 with a CPU hog busy one
#               core beside the node; `check` (should fail); `check --confirm` with the hog
#               still there (should confirm: exit 1); the hog stopped, `check --confirm` again
#               (should not confirm: exit 0).
#
# Usage: bench/nightly-sittings.sh [RUNS]   (default 10; about 30 minutes). Run it alone.
# Results: $OUT (default /tmp/nightly-sittings), its history $OUT/history.db.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10}
OUT=${OUT:-/tmp/nightly-sittings}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
db="$OUT/history.db"
source bench/fresh-node.sh
caplab=$CAPLAB
rm -rf "$OUT"
mkdir -p "$OUT"

log() { printf '== %s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

$caplab node stop >/dev/null 2>&1 || true
trap '$caplab node stop --no-drain >/dev/null 2>&1 || true; kill $hog 2>/dev/null || true' EXIT
hog=
sitting() { # $1 = name, $2 = settle seconds
  $caplab node stop >/dev/null 2>&1 || true
  log "sitting $1: starting the node, settling ${2}s"
  $caplab node start --heap 4G >/dev/null
  $caplab run --warmup 0s --duration "${2}s" -q --force --out "$OUT/settle-$1" --no-history >/dev/null
}
run() { # $1 = sitting, $2 = run number, $3 = phase
  $caplab run --warmup 10s --duration 20s -q --force --out "$OUT/$1-run-$2" --history "$db" \
    --label "sitting=$1" --label "run=$2" --label "phase=$3" 2>&1 | grep -E '^(Op rate|Steady state)' | tr -s ' ' >&2 || true
}
check() { # $@ = extra options
  set +e
  (cd "$OUT" && $caplab history --history "$db" check "$@")
  echo "exit code: $?"
  set -e
}

$caplab node wipe --force >/dev/null 2>&1 || true
sitting s1 120
for i in $(seq "$RUNS"); do log "s1 run $i"; run s1 "$i" as-is; done
sitting s2 60
for i in $(seq "$RUNS"); do log "s2 run $i"; run s2 "$i" as-is; done
log "check after two sittings, nothing changed (should pass)"
check

sitting s3 60
for i in 1 2 3 4; do log "s3 run $i"; run s3 "$i" as-is; done
log "a CPU hog beside the node from here"
python3 -c "
while True: pass" &
hog=$!
for i in 5 6 7; do log "s3 run $i, hog"; run s3 "$i" hog; done
log "check (should fail)"
check
log "check --confirm with the hog still there (should confirm, exit 1)"
check --confirm
kill "$hog"; wait "$hog" 2>/dev/null || true; hog=
log "the hog stopped: check --confirm again (should not confirm, exit 0)"
check --confirm
series=$($caplab history --history "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["series"])')
$caplab history --history "$db" "$series"
log "done"
