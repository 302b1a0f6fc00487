#!/usr/bin/env bash
# A further sitting on bench/nightly-sittings.sh's history: a fourth sitting, 4 runs as they are and
# 5 with the CPU hog, then check, check --confirm with the hog, check --confirm without.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/nightly-sittings}
export CAPLAB_HOME=$OUT/home
source bench/fresh-node.sh
caplab=$CAPLAB
db=$OUT/history.db
log() { printf '== %s  %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
run() { $caplab run --warmup 10s --duration 20s -q --force --out "$OUT/$1-run-$2" --history "$db" \
    --label "sitting=$1" --label "run=$2" --label "phase=$3" 2>&1 | grep -E '^(Steady state)' | cut -c1-120 >&2 || true; }
check() { (cd "$OUT" && $caplab history --history "$db" check "$@"); echo "exit code: $?"; }
hog=
trap '$caplab node stop --no-drain >/dev/null 2>&1 || true; [ -n "$hog" ] && kill $hog 2>/dev/null || true' EXIT
log "sitting s4: starting the node, settling 60s"
$caplab node start --heap 4G >/dev/null
$caplab run --warmup 0s --duration 60s -q --force --out "$OUT/settle-s4" --no-history >/dev/null
for i in 1 2 3 4; do log "s4 run $i"; run s4 "$i" as-is; done
python3 -c "
while True: pass" &
hog=$!
for i in 5 6 7 8 9; do log "s4 run $i, hog"; run s4 "$i" hog; done
log "check (should fail)"; check
log "check --confirm with the hog (should confirm)"; check --confirm
kill "$hog"; wait "$hog" 2>/dev/null; hog=
log "hog stopped: check --confirm (should not confirm)"; check --confirm
log done
