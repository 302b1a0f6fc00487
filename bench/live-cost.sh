#!/usr/bin/env bash
# What serving live metrics costs the client: one E1 insert run at RATE op/s against a warm
# local node, with --metrics-listen, its measured window cut into 2×PAIRS segments of SEG
# seconds, alternately scraped once a second (A, as Prometheus would) and not scraped at all (B):
# ABAB. Per segment: caplab's CPU (utime + stime from /proc, 10 ms ticks) over the operations
# the CSV counts in it, µs per operation. Also what one scrape takes (curl's total time) and
# the size of the exposition.
#
#   bench/live-cost.sh [RATE] [PAIRS] [SEG]      default 3000 op/s, 4 pairs of 30 s
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-3000}
pairs=${2:-4}
seg=${3:-30}
export CAPLAB_HOME=${LIVE_HOME:-/tmp/caplab-live-cost}
addr=127.0.53.9
work=$(mktemp -d /tmp/caplab-live.XXXX)
. bench/fresh-node.sh
fresh_node --address "$addr" --jmx-port 7791 --heap 2G
# A warm node first (JIT), so the segments compare the client, not the server's warm-up.
"$CAPLAB" run --hosts "$addr" --warmup 0s --rate "$rate" --duration 60s -q --out "$work/warm-up" >/dev/null

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
window=$((2 * pairs * seg + 10))
"$CAPLAB" run --hosts "$addr" --rate "$rate" --warmup 20s --duration "${window}s" -q --out "$work/run" \
  --metrics-listen "$addr:9500" --metrics-linger 0s >/dev/null &
pid=$!
sleep 25 # the schedule's start, and warm-up
: > "$work/segments"
: > "$work/scrapes"
for p in $(seq "$pairs"); do
  for mode in A B; do
    t0=$(date +%s.%N)
    c0=$(ticks $pid)
    if [ $mode = A ]; then
      for _ in $(seq "$seg"); do
        s=$(date +%s.%N)
        curl -s -o /dev/null -w '%{time_total} %{size_download}\n' "http://$addr:9500/metrics" >> "$work/scrapes"
        sleep "$(python3 -c "import time; print(max(0.0, 1 - (time.time() - $s)))")"
      done
    else
      sleep "$seg"
    fi
    echo "$mode $t0 $(date +%s.%N) $c0 $(ticks $pid)" >> "$work/segments"
  done
done
wait $pid
python3 - "$work" <<'PY'
import csv, datetime, statistics, sys
work = sys.argv[1]
per_s = {}
for row in csv.DictReader(open(f"{work}/run/latency.csv")):
    t = datetime.datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).timestamp()
    per_s[t] = per_s.get(t, 0) + int(row["count"])
out = {"A": [], "B": []}
print("segment  mode  ops      cpu_s   us/op")
for i, line in enumerate(open(f"{work}/segments")):
    mode, t0, t1, c0, c1 = line.split()
    t0, t1 = float(t0), float(t1)
    # whole seconds inside the segment only
    secs = [t for t in per_s if t >= t0 and t + 1 <= t1]
    ops = sum(per_s[t] for t in secs)
    # CPU over the same whole seconds, prorated from the segment's
    cpu = (int(c1) - int(c0)) / 100 * len(secs) / (t1 - t0)
    us = cpu / ops * 1e6
    out[mode].append(us)
    print(f"{i + 1:>7}  {mode:>4}  {ops:>7}  {cpu:>6.2f}  {us:>6.2f}")
a, b = statistics.mean(out["A"]), statistics.mean(out["B"])
print(f"mean µs/op: scraped (A) {a:.2f}, not scraped (B) {b:.2f}, A/B {a / b:.3f}")
print(f"spread within B: {min(out['B']):.2f} to {max(out['B']):.2f}")
times = [float(l.split()[0]) * 1e3 for l in open(f"{work}/scrapes")]
sizes = [int(l.split()[1]) for l in open(f"{work}/scrapes")]
print(f"scrapes: {len(times)}, median {statistics.median(times):.2f} ms, max {max(times):.2f} ms, {statistics.median(sizes)} bytes")
PY
echo "results: $work"
