#!/usr/bin/env bash
# Client efficiency, caplab against latte 0.29, on E1's insert workload against one local
# Cassandra node started by caplab. For each tool, alternately: a fixed 5,000 op/s run and a
# flat-out run of SECONDS each. Prints client CPU (user+sys from /usr/bin/time), server CPU
# (/proc of the node), achieved rate, p99 and peak RSS, then the ratios the goal is stated in.
#
#   bench/client-efficiency.sh [SECONDS]      default 60
#   LONG=1800 bench/client-efficiency.sh      also: caplab's RSS each minute of a long run
#   ROUNDS=4 RATES=5000 bench/client-efficiency.sh 30
#                                             rounds in alternating order (odd: caplab first, even:
#                                             latte first), so the node's warming is no tool's
#                                             cost; each row gives the server's CPU per operation
#
# Its node lives in EFFICIENCY_HOME (default /tmp/caplab-efficiency) and is wiped at the start.
#
# Needs: cargo (builds caplab, installs latte-cli 0.29 if missing), JDK 17, Maven.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
secs=${1:-60}
# The script owns this home: its node is wiped at the start, so every run of the script
# measures against the same fresh node (E1's tables keep every SSTable: no compaction).
export CAPLAB_HOME=${EFFICIENCY_HOME:-/tmp/caplab-efficiency}
addr=127.0.50.1
work=$(mktemp -d /tmp/caplab-eff.XXXX)

source bench/fresh-node.sh
caplab=$CAPLAB
latte=$(command -v latte || echo "$HOME/.cargo/bin/latte")
if ! [ -x "$latte" ]; then
  echo "installing latte-cli 0.29 (cargo install; several minutes)"
  cargo install latte-cli --version '~0.29' --locked -q
  latte=$HOME/.cargo/bin/latte
fi
"$latte" --version

fresh_node --address "$addr" --jmx-port 7750 --heap 2G
pid=$("$caplab" node status | awk 'NR==1{for(i=1;i<=NF;i++) if($i=="PID") c=i} NR==2{print $c}')
ticks() { awk '{sub(/.*\) /,""); print $12+$13}' "/proc/$pid/stat"; }
(cd "$work" && "$latte" schema "$root/bench/latte/e1_insert.rn" "$addr" >/dev/null)
# Warm the server's JIT before anything is measured (into caplab's table, not measured).
"$caplab" run --hosts "$addr" --warmup 0s --duration 20s -q --out "$work/warm-up" >/dev/null

# run NAME CMD...: client user+sys seconds, peak RSS (KiB), server CPU seconds.
run() {
  local name=$1; shift
  local before after
  before=$(ticks)
  /usr/bin/time -f "%U %S %M" -o "$work/$name.time" "$@" >"$work/$name.out" 2>&1
  after=$(ticks)
  read -r u s rss <"$work/$name.time"
  client=$(echo "$u + $s" | bc -l)
  server=$(echo "($after - $before) / 100" | bc -l)
  echo "$name $client $rss $server" >>"$work/results"
}

caplab_run() { # rate round
  run "caplab-$1-$2" "$caplab" run --hosts "$addr" --warmup 0s --rate "$1" --duration "${secs}s" -q --out "$work/caplab-$1-$2"
}
latte_run() { # rate round
  local r=()
  [ "$1" != 0 ] && r=(-r "$1")
  # The same load shape as caplab's defaults: 256 in flight, 1 connection, 1 thread.
  # latte writes its log into the current directory: run it in the work directory.
  (cd "$work" && run "latte-$1-$2" "$latte" run "$root/bench/latte/e1_insert.rn" -d "${secs}s" "${r[@]}" \
    -p 256 -c 1 -t 1 -q -o "$work/latte-$1-$2.json" "$addr")
}

rates=${RATES:-5000 0}
for round in $(seq "${ROUNDS:-1}"); do
  for rate in $rates; do
    if ((round % 2)); then
      caplab_run "$rate" "$round"
      latte_run "$rate" "$round"
    else
      latte_run "$rate" "$round"
      caplab_run "$rate" "$round"
    fi
  done
done

# caplab's p99 as service time (from the send, what latte reports) / response time (from the
# intended start, which adds the schedule's lateness).
achieved_caplab() { python3 -c "import json,sys;d=json.load(open(sys.argv[1]));t=d['summary']['total'];print(round(t['op_rate']), '%.2f/%.2f' % (t['service']['p99_ms'], t['response']['p99_ms']))" "$work/caplab-$1/result.json"; }
achieved_latte() { # throughput and p99 from latte's text report
  python3 - "$work/latte-$1.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
thr = re.search(r"Throughput\s*\[op/s\]\s+([\d.]+)", t)
p99 = re.search(r"\n\s*99\s+([\d.]+)", t)
print(round(float(thr.group(1))) if thr else "?", p99.group(1) if p99 else "?")
PY
}

printf '\n%-8s %6s %8s %10s %14s %12s %14s %12s %12s %16s\n' tool round "rate" achieved "p99 ms" "client cpu s" "cpu s / 1M ops" "peak RSS MiB" "server cpu s" "server s / 1M ops"
while read -r name client rss server; do
  IFS=- read -r tool rate round <<<"$name"
  if [ "$tool" = caplab ]; then read -r ach p99 < <(achieved_caplab "$rate-$round"); else read -r ach p99 < <(achieved_latte "$rate-$round"); fi
  per=$( [ "$ach" != "?" ] && echo "$client / ($ach * $secs) * 1000000" | bc -l || echo 0)
  sper=$( [ "$ach" != "?" ] && echo "$server / ($ach * $secs) * 1000000" | bc -l || echo 0)
  printf '%-8s %6s %8s %10s %14s %12.2f %14.2f %12.1f %12.1f %16.2f\n' "$tool" "$round" "$rate" "$ach" "$p99" "$client" "$per" "$(echo "$rss/1024" | bc -l)" "$server" "$sper"
  echo "$tool $rate $per $ach $sper" >>"$work/per-op"
done <"$work/results"

# Each tool's mean over the rounds, and caplab's ratio to latte's.
echo
python3 - "$work/per-op" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tool, rate, per, ach, sper = line.split()
    rows[(tool, rate)].append((float(per), float(ach) if ach != "?" else float("nan"), float(sper)))
for rate in sorted({r for _, r in rows}, key=lambda r: -int(r) if r != "0" else 1):
    label = "flat out" if rate == "0" else f"at {rate} op/s"
    c, l = rows[("caplab", rate)], rows[("latte", rate)]
    mean = lambda xs, i: statistics.fmean(x[i] for x in xs)
    span = lambda xs, i: f"{min(x[i] for x in xs):.2f}-{max(x[i] for x in xs):.2f}"
    print(f"caplab/latte {label} ({len(c)} runs each): client CPU per op {mean(c, 0) / mean(l, 0):.2f}x, "
          f"throughput {mean(c, 1) / mean(l, 1):.2f}x, server CPU-s per 1M ops {mean(c, 2):.2f} "
          f"[{span(c, 2)}] against {mean(l, 2):.2f} [{span(l, 2)}]: {mean(c, 2) / mean(l, 2):.2f}x")
PY

if [ -n "${LONG:-}" ]; then
  echo; echo "caplab RSS each minute of a ${LONG}s run at 5,000 op/s:"
  "$caplab" run --hosts "$addr" --warmup 0s --rate 5000 --duration "${LONG}s" -q --out "$work/long" &
  cpid=$!
  while kill -0 $cpid 2>/dev/null; do
    sleep 60
    kill -0 $cpid 2>/dev/null && awk '/VmRSS/{print strftime("%T"), $2/1024 " MiB"}' "/proc/$cpid/status"
  done
fi
echo "raw outputs: $work"
