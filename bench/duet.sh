#!/usr/bin/env bash
# Duet benchmarking (Bulej et al., ICPE 2020) as an A/A on this machine: two nodes of the same
# configuration (bench/aa-batch.yaml's: E1 batches on 5.0.9) run at once on the one host, each
# driven flat out by its own caplab with half the operations in flight, their windows started in
# the same second; each round starts both fresh. Whatever disturbs the machine disturbs both, so
# the round's log-ratio cancels it, as the issue's design would have it; the cost is that each
# node has half the machine. Printed: per round both nodes' throughput, then the rounds' paired
# 95 % interval of the ratio and its width, to set beside bench/aa-design.sh's designs at the
# same wall time.
#
#   bench/duet.sh [OUT] [MINUTES]      default /tmp/caplab-duet, 30
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/caplab-duet}
minutes=${2:-30}
mkdir -p "$out"
. bench/fresh-node.sh   # CAPLAB
settings=(--version 5.0.9 --heap 4G
  --set memtable_allocation_type=offheap_objects --set memtable_flush_writers=8
  --set memtable.configurations.trie.class_name=TrieMemtable
  --set memtable.configurations.trie.parameters.shards=64
  --set memtable.configurations.default.inherits=trie --set sstable.selected_format=big
  --jvm-opt=-Dio.netty.eventLoopThreads=2)
node() { CAPLAB_HOME=$out/home-$1 "$CAPLAB" node "${@:2}"; }
stop_all() { for s in a b; do node $s stop --no-drain >/dev/null 2>&1 || true; done; }
trap stop_all EXIT
end=$(( $(date +%s) + minutes * 60 ))
round=0
while [ "$(date +%s)" -lt "$end" ]; do
  round=$((round + 1))
  for s in a b; do
    ip=127.0.61.$([ $s = a ] && echo 1 || echo 2)
    jmx=$([ $s = a ] && echo 7761 || echo 7762)
    node $s stop --no-drain >/dev/null 2>&1 || true
    node $s wipe --force >/dev/null 2>&1 || true
    node $s start --address "$ip" --jmx-port "$jmx" "${settings[@]}" >/dev/null
  done
  at=$(( $(date +%s) + 8 ))
  for s in a b; do
    ip=127.0.61.$([ $s = a ] && echo 1 || echo 2)
    CAPLAB_HOME=$out/home-$s "$CAPLAB" run --hosts "$ip" --workload batch --batch-size 10 --concurrency 128 \
      --warmup 150s --duration 60s --start-at "$at" -q --no-history --out "$out/r$round-$s" --force >/dev/null &
  done
  wait
  stop_all
  printf 'round %d: %s\n' "$round" "$(python3 -c "
import json
r = [json.load(open('$out/r$round-' + s + '/result.json'))['summary']['total']['op_rate'] for s in 'ab']
print(f'a {r[0]:,.0f} op/s, b {r[1]:,.0f} op/s, b/a {r[1] / r[0]:.3f}')")"
done
python3 - "$out" "$round" <<'PY'
import json, math, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
d = []
for r in range(1, rounds + 1):
    a, b = (json.load(open(f"{out}/r{r}-{s}/result.json"))["summary"]["total"]["op_rate"] for s in "ab")
    d.append(math.log(b / a))
n = len(d)
# Student's t at 97.5 % for n - 1 degrees of freedom (n is small: a table).
t = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}.get(n - 1, 2.2)
m, se = statistics.mean(d), statistics.stdev(d) / math.sqrt(n)
lo, hi = math.exp(m - t * se), math.exp(m + t * se)
print(f"duet: {n} rounds, ratio {math.exp(m):.3f} [{lo:.3f}-{hi:.3f}], width {(hi / lo - 1) * 100:.1f} %")
PY
