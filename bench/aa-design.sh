#!/usr/bin/env bash
# Less noise at the source, each change measured by the width of an A/A interval at the same
# wall time, side by side in one run of this script (E1 batches flat out on 5.0.9, the file
# bench/aa-batch.yaml):
#
#   1. a calibration (`caplab experiment --calibrate`, CAL_ROUNDS rounds, 3 windows a node):
#      the variance of throughput, p99 and server CPU per operation at each level, and the
#      windows per node `--check` chooses from it;
#   2. five A/A experiments of BUDGET each (the same configuration twice):
#        old:  the design caplab had (rotated order, one window per fresh node), analysed both
#              unpaired (as it was) and paired by round;
#        new:  randomized blocks with the windows per node the calibration chose, paired;
#        pin:  the same with `pin: true` (caplab's client on core 0, the node on the others);
#        duet: `design: duet`, both variants' nodes at once with half the operations in flight
#              each, their windows started in the same second (a fixed 150 s warm-up);
#        duet60: the same with 60 s windows (bench/duet.sh's);
#   3. bench/aa-design.py: each design's rounds, its 95 % interval of the throughput ratio
#      (width as a share), and the throughput level (what pinning costs).
#
#   bench/aa-design.sh [OUT] [BUDGET] [CAL_ROUNDS]      default /tmp/caplab-aa-design, 30m, 6
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/caplab-aa-design}
budget=${2:-30m}
cal_rounds=${3:-6}
mkdir -p "$out"
export CAPLAB_HOME=$out/home
. bench/fresh-node.sh   # CAPLAB
say() { printf '\n== %s %s\n' "$(date -u +%H:%M:%S)" "$*"; }

if [ ! -f "$out/calibration/calibration.json" ]; then
  say "calibration: $cal_rounds rounds, 3 windows a node"
  "$CAPLAB" experiment --calibrate bench/aa-batch.yaml --calibrate-rounds "$cal_rounds" --out "$out/calibration" \
    --no-history | tail -n 20
fi
plan=$("$CAPLAB" experiment --check bench/aa-batch.yaml --calibration "$out/calibration")
echo "$plan" | tail -n 8
windows=$(echo "$plan" | sed -n 's/.*batch throughput ±5 %: \([0-9]*\) window(s) per node.*/\1/p' | head -n 1)
windows=${windows:-1}

aa() { # NAME ORDER WINDOWS PIN [DESIGN] [DURATION]
  local f="$out/aa-$1.yaml"
  sed -e "s/^name: aa-batch/name: aa-$1/" -e "s/^  duration: 30s/  duration: ${6:-30s}/" \
      -e "s/^variants:/repeats: 40\nbudget: $budget\norder: $2\nwindows: $3\npin: $4\ndesign: ${5:-blocks}\nvariants:/" \
      -e 's/^  - {name: "5.0.9"}/  - {name: a}\n  - {name: a-again}/' bench/aa-batch.yaml > "$f"
  if [ ! -f "$out/aa-$1/experiment.json" ] || ! grep -q '"stopped"' "$out/aa-$1/experiment.json"; then
    say "A/A $1: order $2, $3 window(s) a node, pin $4, design ${5:-blocks}, budget $budget"
    # A sitting the budget ends without an answer is what an A/A of this length is for.
    "$CAPLAB" experiment "$f" --out "$out/aa-$1" --force --no-history | tail -n 4 || true
  fi
}
aa old rotate 1 false
aa new random "$windows" false
aa duet random 1 false duet
aa duet60 random 1 false duet 60s
aa pin random "$windows" true
say "analysis"
python3 bench/aa-design.py "$out"
