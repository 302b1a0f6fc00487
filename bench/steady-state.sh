#!/usr/bin/env bash
# Does the automatic warm-up make repeats agree? Runs bench/steady-state.yaml (E1 inserts flat
# out, fresh 5.0.9 nodes, 15 s warm-up against auto, two identical variants of each, 4 repeats,
# rotated), then prints per variant each repeat's throughput, warm-up length and window class,
# the between-repeat coefficient of variation of throughput per warm-up, and the A/A comparisons
# (15 s: every repeat, as before; auto: steady repeats only, caplab's default, and every repeat).
#
#   bench/steady-state.sh [OUT]        default /tmp/caplab-steady-state (replaced)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/caplab-steady-state}
source bench/fresh-node.sh
caplab=$CAPLAB
if [ ! -f "$out/experiment.json" ]; then
  "$caplab" experiment bench/steady-state.yaml --out "$out" --force >"$out.log" 2>&1 || true
fi
python3 - "$out" <<'PY'
import json, statistics as st, sys, os
out = sys.argv[1]
doc = json.load(open(os.path.join(out, "experiment.json")))
by = {}
for s in doc["steps"]:
    if s["status"] != "completed":
        continue
    r = json.load(open(os.path.join(out, s["dir"], "result.json")))
    w, v = r.get("warmup") or {}, r.get("steady_state") or {}
    by.setdefault(s["variant_name"], []).append(
        (os.path.join(out, s["dir"]), r["summary"]["total"]["op_rate"], w.get("length_s"), w.get("settled"),
         v.get("class"), v.get("steady")))
for name, runs in by.items():
    print(f"{name}:")
    for d, rate, length, settled, cls, steady in runs:
        print(f"  {os.path.basename(d):32} {rate:>10,.0f} op/s  warm-up {length:>5.0f} s"
              f"{'' if settled is None else (' settled' if settled else ' NOT settled')}  window {cls} ({'steady' if steady else 'not steady'})")
for method in ("w15", "auto"):
    rates = [r[1] for n, runs in by.items() if n.startswith(method) for r in runs]
    if len(rates) > 1:
        print(f"{method}: {len(rates)} repeats, mean {st.mean(rates):,.0f} op/s, CV {st.stdev(rates) / st.mean(rates) * 100:.1f} %")
    lengths = [r[2] for n, runs in by.items() if n.startswith(method) for r in runs]
    print(f"{method}: warm-up {min(lengths):.0f}–{max(lengths):.0f} s (mean {st.mean(lengths):.0f} s)")
    steady = [r[5] for n, runs in by.items() if n.startswith(method) for r in runs]
    print(f"{method}: {sum(1 for s in steady if s)} of {len(steady)} windows steady")
with open(os.path.join(out, "pairs"), "w") as f:
    for method in ("w15", "auto"):
        f.write(" ".join(",".join(r[0] for r in by.get(f"{method}-{x}", [])) for x in "ab") + "\n")
PY
{ read -r w15_a w15_b; read -r auto_a auto_b; } <"$out/pairs"
echo "== A/A, 15 s warm-up, every repeat (what comparisons did before)"
"$caplab" compare --include-unsteady "$w15_a" "$w15_b" | head -8
echo "== A/A, automatic warm-up, steady repeats only (caplab's default)"
"$caplab" compare "$auto_a" "$auto_b" | head -8
echo "== A/A, automatic warm-up, every repeat"
"$caplab" compare --include-unsteady "$auto_a" "$auto_b" | head -8
