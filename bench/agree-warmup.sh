#!/bin/bash
# How long three loaders with an automatic warm-up take to settle on a fresh node, as in
# tests/loaders.rs's loaders_with_an_automatic_warm_up_agree_on_when_to_measure: a node started
# fresh, a 20 s run at 1,000 op/s, optionally a flat-out run of $FLAT (e.g. 30s; the test runs
# 30 s flat out), then three loaders 1 s apart
# at $RATE op/s in all with `--warmup auto --warmup-max 120s`. Prints each loader's warm-up
# length, whether it settled and the rule's last reading, for $N fresh nodes.
#   RATE=3000 FLAT=30s N=3 bash bench/agree-warmup.sh
set -u
cd "$(dirname "$0")/.."
source bench/fresh-node.sh
B=$CAPLAB
export CAPLAB_HOME=${CAPLAB_HOME:-/tmp/agree-warmup}
RATE=${RATE:-3000}
mkdir -p "$CAPLAB_HOME"
for it in $(seq 1 "${N:-3}"); do
  rm -rf "$CAPLAB_HOME"/runs && mkdir -p "$CAPLAB_HOME"/runs
  fresh_node --address 127.0.0.50 --jmx-port 7250 --heap 1G || exit 1
  $B run --hosts 127.0.0.50:9042 -q --rate 1000 --warmup 3s --duration 20s \
    --out "$CAPLAB_HOME"/runs/pre >/dev/null
  if [ -n "${FLAT:-}" ]; then
    $B run --hosts 127.0.0.50:9042 -q --warmup 0s --duration "$FLAT" \
      --out "$CAPLAB_HOME"/runs/flat >/dev/null
  fi
  start=$(( $(date +%s) + 8 ))
  for i in 1 2 3; do
    $B run --hosts 127.0.0.50:9042 -q --rate "$RATE" --warmup auto --warmup-max 120s \
      --duration 8s --start-at "$start" --loader "$i/3" --out "$CAPLAB_HOME/runs/a$i" \
      >"$CAPLAB_HOME/runs/a$i.log" 2>&1 &
    sleep 1
  done
  wait
  for i in 1 2 3; do
    python3 -c "import json; w = json.load(open('$CAPLAB_HOME/runs/a$i/result.json'))['warmup']; \
print('node $it loader $i:', w['length_s'], 's, settled' if w['settled'] else 's, not settled;', w.get('check'))"
  done
done
$B node stop >/dev/null 2>&1
