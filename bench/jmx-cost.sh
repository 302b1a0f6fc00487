#!/usr/bin/env bash
# What the per-second JMX reader (src/telemetry/CaplabJmx.java) costs: its own CPU to start and
# per second on caplab's side, and Cassandra's CPU with and without it, three rounds ABAB of 20 s
# each on an idle fresh node (/proc/PID/stat utime+stime). Run from the project's root, alone:
#
#   CAPLAB_HOME=/tmp/jmx-cost bench/jmx-cost.sh
#
# bench/results/compaction.md ("Server facts over JMX, once a second") has its numbers.
set -euo pipefail
export CAPLAB_HOME=${CAPLAB_HOME:-/tmp/caplab-jmx-cost}
. bench/fresh-node.sh
PORT=7355
fresh_node --heap 1G --jmx-port "$PORT"
PID=$(pgrep -f "$CAPLAB_HOME/nodes/node1" | head -1)
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
reader() { # runs the reader for $1 seconds (its stdin's end stops it)
  (printf '\n\n\n'; sleep "$1") | java -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    src/telemetry/CaplabJmx.java "127.0.0.1:$PORT" >/dev/null &
}

reader 60
sleep 5
R=$(pgrep -f "CaplabJmx.java 127.0.0.1:$PORT" | head -1)
a=$(cpu "$R"); sleep 50; b=$(cpu "$R")
echo "reader: $(echo "scale=2; $a/$TCK" | bc) CPU-s to start, $(echo "scale=4; ($b-$a)/$TCK/50" | bc) cores after ($(ps -o rss= -p "$R") kB resident)"
wait

for round in 1 2 3; do
  for mode in without with; do
    [ "$mode" = with ] && reader 30
    sleep 6
    a=$(cpu "$PID"); sleep 20; b=$(cpu "$PID")
    echo "round $round $mode reader: Cassandra $(echo "scale=4; ($b-$a)/$TCK/20" | bc) cores"
    wait
  done
done
