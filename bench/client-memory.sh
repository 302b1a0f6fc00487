#!/usr/bin/env bash
# Where caplab's memory goes: E1 inserts against one local node started by caplab (wiped
# first), at 5,000 op/s and flat out, SECONDS each after a 20 s run that warms the node.
# Prints caplab's peak RSS while it measures (VmHWM sampled as the measured window ends) and
# at exit (report.html is built in-process at the very end), in MiB.
#
#   bench/client-memory.sh [SECONDS]        default 60
#   CAPLAB=path/to/caplab bench/client-memory.sh   another build (default: release of this tree)
#
# What holds the memory: heaptrack (apt-get install heaptrack) on one run, e.g.
#   heaptrack -o /tmp/caplab.heap target/release/caplab run --hosts 127.0.51.1 --rate 5000 ...
#   heaptrack_print -f /tmp/caplab.heap.zst | sed -n '/PEAK MEMORY CONSUMERS/,+60p'
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
export CAPLAB_HOME=${MEMORY_HOME:-/tmp/caplab-memory}
addr=127.0.51.1
work=$(mktemp -d /tmp/caplab-mem.XXXX)
source bench/fresh-node.sh

fresh_node --address "$addr" --jmx-port 7760 --heap 2G
"$CAPLAB" run --hosts "$addr" --warmup 0s --duration 20s -q --out "$work/warm-up" >/dev/null

# run NAME ARGS...: peak RSS while measuring (VmHWM 1 s before the window ends), and at exit.
run() {
  local name=$1; shift
  /usr/bin/time -f %M -o "$work/$name.peak" \
    "$CAPLAB" run --hosts "$addr" --warmup 0s --duration "${secs}s" -q --out "$work/$name" "$@" \
    >"$work/$name.log" 2>&1 &
  local tpid=$! child measuring
  sleep 1
  child=$(pgrep -P "$tpid")
  sleep $((secs - 1))
  measuring=$(awk '/VmHWM/{print $2}' "/proc/$child/status")
  wait "$tpid"
  printf '%-10s measuring %6.1f MiB   at exit %6.1f MiB\n' "$name" \
    "$(echo "$measuring / 1024" | bc -l)" "$(echo "$(cat "$work/$name.peak") / 1024" | bc -l)"
}

run rate-5k --rate 5000
run flat-out
run rate-5k-b --rate 5000
run flat-out-b
echo "work directory: $work"
