#!/usr/bin/env bash
# Each cause the slow-operation audit names, checked by removing it (issue 90): the same run with
# the cause there and with it removed, alternated (ABAB…), ROUNDS rounds, and for each run the share
# of the operations over p99 named for the cause against how far the tail moved. A cause named for
# most slow operations whose removal leaves p99 where it was is a wrong rule.
#
#   shared  the machine: E1 inserts flat out, 30 s after a 20 s warm-up, on a node warmed 2 min;
#           A: client and node share both cores; B: the node re-pinned to core 1 (taskset, live)
#           and the client on core 0 (--client-cpus 0). Cause: client (its waits for a CPU).
#   gc      GC pauses: E1 inserts at 4,000 op/s, 30 s after a 20 s warm-up; A: a node with a
#           512 MiB heap, B: 4 GiB (a fresh node each run, warmed 30 s). Cause: gc_pause.
#   replica a late node: three nodes (1 GiB heaps), RF 3, QUORUM, 300 op/s, 30 s after a 20 s
#           warm-up; A: node2's answers delayed 20 ms by the fault proxy from 10 s for 5 s of the
#           window, B: no delay. Cause: fault.
#   pending a thread pool short of threads: one node, E1 inserts at PENDING_RATE op/s (default
#           6,000), 30 s after a 20 s warm-up; A: concurrent_writes 2 (the least Cassandra
#           takes), B: 32 (as shipped; a fresh node each run, warmed 30 s). Cause: pending.
#   flush   flushes and compactions: one node, E1 inserts of 1,000-character values at 3,000 op/s
#           (3 MB/s) with compaction on (--compaction: size-tiered; FLUSH_COMPACTION=off keeps
#           it off, as E1 has it, for flushes alone), 30 s after a 20 s warm-up;
#           A: an 8 MiB memtable (several flushes a second, and the compactions they bring), B:
#           1 GiB (no flush of the table in the run; a fresh node each run, warmed 30 s).
#           Causes: flush, compaction.
#
#   bench/cause-removal.sh shared|gc|replica|pending|flush [ROUNDS]
#                                           default 2 rounds; 10-15 minutes each; run it alone
#
# Results: $OUT (default /tmp/cause-removal-MODE): runs.tsv and each run's directory. Starved
# clients: bench/client-starved.sh; a client runtime short of threads: bench/bursty-replay.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?shared or gc}
rounds=${2:-2}
OUT=${OUT:-/tmp/cause-removal-$mode}
export CAPLAB_HOME=${CAPLAB_HOME:-$OUT/home}
rm -rf "$OUT/runs"
mkdir -p "$OUT/runs"
. bench/fresh-node.sh
printf 'round\tcase\tthroughput\tp50_ms\tp99_ms\tp999_ms\tnamed\tlimit\tcpu_wait\n' >"$OUT/runs.tsv"

record() { # $1 dir, $2 round, $3 case
  python3 - "$1/result.json" "$2" "$3" >>"$OUT/runs.tsv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["summary"]["total"]; c = r.get("client") or {}
named = ", ".join(f"{s['cause']} {s['share'] * 100:.0f} %"
                  for s in (r.get("slow") or {}).get("by_cause", []) if s["share"] >= 0.005)
q = t["response"]
print("\t".join([sys.argv[2], sys.argv[3], f"{t['op_rate']:.0f}", f"{q['median_ms']:.2f}",
                 f"{q['p99_ms']:.2f}", f"{q['p999_ms']:.2f}", named or "-", c.get("limit", "?"),
                 f"{(c.get('cpu_wait_share') or 0) * 100:.1f} %"]))
PY
  tail -n 1 "$OUT/runs.tsv" >&2
}

case $mode in
shared)
  fresh_node --heap 4G
  pid=$("$CAPLAB" node status --json 2>/dev/null | python3 -c 'import json,sys; n = json.load(sys.stdin)[0]; print(n["node"]["pid"])')
  "$CAPLAB" run --warmup 0s --duration 2m -q --no-history --out "$OUT/runs/settle" >/dev/null
  for round in $(seq "$rounds"); do
    for c in shared apart; do
      dir="$OUT/runs/$round-$c"
      if [ $c = shared ]; then
        taskset -a -p -c 0-1 "$pid" >/dev/null
        "$CAPLAB" run --warmup 20s --duration 30s -q --no-history --out "$dir" >/dev/null
      else
        taskset -a -p -c 1 "$pid" >/dev/null
        "$CAPLAB" run --warmup 20s --duration 30s --client-cpus 0 -q --no-history --out "$dir" >/dev/null
      fi
      record "$dir" "$round" "$c"
    done
  done
  ;;
gc)
  for round in $(seq "$rounds"); do
    for heap in 512M 4G; do
      fresh_node --heap "$heap"
      "$CAPLAB" run --rate 4000 --warmup 0s --duration 30s -q --no-history --out "$OUT/runs/$round-$heap-warm" >/dev/null
      dir="$OUT/runs/$round-$heap"
      "$CAPLAB" run --rate 4000 --warmup 20s --duration 30s -q --no-history --out "$dir" >/dev/null
      record "$dir" "$round" "heap $heap"
    done
  done
  ;;
replica)
  fresh_node --nodes 3 --address 127.0.54.1 --jmx-port 7900 --heap 1G
  common=(--hosts 127.0.54.1,127.0.54.2,127.0.54.3 --replication-factor 3 --consistency quorum
    --rate 300 -q --no-history)
  "$CAPLAB" run "${common[@]}" --warmup 0s --duration 60s --out "$OUT/runs/settle" >/dev/null
  for round in $(seq "$rounds"); do
    for c in delayed prompt; do
      dir="$OUT/runs/$round-$c"
      fault=()
      [ $c = delayed ] && fault=(--fault 'delay node2 at 10s for 5s by 20ms')
      "$CAPLAB" run "${common[@]}" "${fault[@]}" --warmup 20s --duration 30s --out "$dir" >/dev/null
      record "$dir" "$round" "$c"
    done
  done
  ;;
pending | flush)
  for round in $(seq "$rounds"); do
    for c in planted removed; do
      if [ $mode = pending ]; then
        set_=(--set "concurrent_writes=$([ $c = planted ] && echo 2 || echo 32)")
        load=(--rate "${PENDING_RATE:-6000}")
      else
        set_=(--set "memtable_heap_space=$([ $c = planted ] && echo 8MiB || echo 1024MiB)")
        load=(--rate 3000 --value-size 1000)
        [ "${FLUSH_COMPACTION:-on}" = off ] || load+=(--compaction)
      fi
      fresh_node --heap 2G "${set_[@]}"
      "$CAPLAB" run "${load[@]}" --warmup 0s --duration 30s -q --no-history --out "$OUT/runs/$round-$c-warm" >/dev/null
      dir="$OUT/runs/$round-$c"
      "$CAPLAB" run "${load[@]}" --warmup 20s --duration 30s -q --no-history --out "$dir" >/dev/null
      record "$dir" "$round" "$c ${set_[1]}"
    done
  done
  ;;
*)
  echo "unknown mode $mode: shared, gc, replica, pending or flush" >&2
  exit 2
  ;;
esac
column -t -s $'\t' "$OUT/runs.tsv"
