#!/usr/bin/env bash
# Regenerates the README's screenshots of report pages with headless Chromium, from results
# directories of real runs: docs/screenshots.sh RUN_DIR CAPACITY_DIR EXPERIMENT_DIR [MERGED_DIR]
# (e.g. from `caplab run --workload batch --rate 800 --duration 15s`, `caplab capacity --rates
# 500,1000 --sla 'p99<500ms/2s'`, `caplab experiment FILE`, and `caplab merge` of three
# loaders, as README's "Many loaders" shows).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 RUN_DIR CAPACITY_DIR EXPERIMENT_DIR [MERGED_DIR]" >&2; exit 2; }
docs=$(cd "$(dirname "$0")" && pwd)
caplab=${CAPLAB:-$docs/../target/release/caplab}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shot() { # dir, png, height
  "$caplab" report "$1" >/dev/null
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --virtual-time-budget=15000 --window-size="1280,$3" \
    --screenshot="$docs/$2" "file://$(cd "$1" && pwd)/report.html" 2>/dev/null
  echo "$docs/$2"
}
shot "$1" report-run.png 2600
shot "$2" report-capacity.png 1700
shot "$3" report-experiment.png 3400
[ $# -lt 4 ] || shot "$4" report-merged.png 2900
