#!/usr/bin/env bash
# docs/live-prometheus.png: a run watched live by a real Prometheus (Debian's package), on its
# own graph page, for the Grafana dashboard's throughput and response-time queries. One local
# node; E1 inserts at RATE op/s for 3 minutes after 30 s of warm-up, node1 paused for 10 s one
# minute into the window; Prometheus scrapes every second; headless Chromium takes the picture.
#
#   scripts/live-screenshot.sh [RATE]      default 3000 op/s
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-3000}
export CAPLAB_HOME=${SHOT_HOME:-/tmp/caplab-live-shot}
addr=127.0.54.9
work=$(mktemp -d /tmp/caplab-shot.XXXX)
CAPLAB=${CAPLAB:-$PWD/target/release/caplab}
[ -x "$CAPLAB" ] || cargo build --release -q
"$CAPLAB" node start --address "$addr" --jmx-port 7792 --heap 2G >/dev/null
cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: caplab
    static_configs:
      - targets: ['$addr:9500']
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="$addr:9090" 2>"$work/prometheus.log" &
prom=$!
trap 'kill $prom 2>/dev/null || true; "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
"$CAPLAB" run --hosts "$addr" --rate "$rate" --warmup 30s --duration 180s -q --out "$work/run" \
  --metrics-listen "$addr:9500" --fault 'pause node1 at 60s for 10s' --label build.kind=nightly
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }
# Operations a second (warm-up ones too), p99 response time in ms from the buckets, and the phase
# (1 measuring, 2 while the fault is applied).
q0=$(enc 'sum(rate(caplab_operations_total{outcome="ok"}[5s])) + sum(rate(caplab_warmup_operations_total[5s]))')
q1=$(enc '1000 * histogram_quantile(0.99, sum by (le) (rate(caplab_response_time_seconds_bucket[5s])))')
q2=$(enc 'max(caplab_phase{phase="measuring"}) + max(caplab_fault_active)')
url="http://$addr:9090/graph?g0.expr=$q0&g0.tab=0&g0.range_input=4m&g1.expr=$q1&g1.tab=0&g1.range_input=4m"
url="$url&g2.expr=$q2&g2.tab=0&g2.range_input=4m"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1300,2000 \
  --virtual-time-budget=15000 --screenshot="$PWD/docs/live-prometheus.png" "$url" 2>/dev/null
echo "docs/live-prometheus.png; results in $work"
