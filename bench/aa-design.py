#!/usr/bin/env python3
"""The A/A designs of bench/aa-design.sh side by side: per design its rounds, the 95 % interval of
the throughput ratio a-again / a (paired by round; the old design also unpaired, as caplab analysed
it), the interval's width as a share, and the throughput level (what pinning costs; a duet's node
runs with half the load).

    python3 bench/aa-design.py OUT
"""
import json
import os
import subprocess
import sys

out = sys.argv[1]
caplab = os.environ.get("CAPLAB", "target/release/caplab")


def compare(*args):
    text = subprocess.run([caplab, "compare", "--json", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(text)[0]


def throughput(cmp):
    row = next(r for r in cmp["rows"] if r["metric"] == "throughput")
    base, other = row["cells"][0], row["cells"][1]
    return base, other


print(f"{'design':<28} {'rounds':>6} {'time':>7} {'ratio':>7} {'95 % interval':>17} {'width':>7} {'a op/s':>9}")
for name in ["old", "new", "pin", "duet", "duet60"]:
    d = os.path.join(out, f"aa-{name}")
    path = os.path.join(d, "experiment.json")
    if not os.path.exists(path):
        continue
    record = json.load(open(path))
    done = [s for s in record["steps"] if s["status"] == "completed"]
    rounds = len({s["repeat"] for s in done if sum(t["repeat"] == s["repeat"] for t in done) == 2})
    minutes = record["sittings"][-1]["elapsed_s"] / 60
    windows = done[0].get("windows", 1) if done else 1
    rows = [(f"{name} ({windows} window(s), paired)", compare(d))]
    if name == "old":
        a = ",".join(os.path.join(d, s["dir"]) for s in done if s["variant_name"] == "a")
        b = ",".join(os.path.join(d, s["dir"]) for s in done if s["variant_name"] == "a-again")
        rows.append((f"{name} (1 window, unpaired)", compare(a, b)))
    for label, cmp in rows:
        base, other = throughput(cmp)
        if other["ratio"] is None or not other["ratio_ci"]:
            print(f"{label:<28} {rounds:>6} {minutes:>5.0f} m   (fewer than two rounds of both: no interval)")
            continue
        lo, hi = other["ratio_ci"]
        print(
            f"{label:<28} {rounds:>6} {minutes:>5.0f} m {other['ratio']:>7.3f} {f'[{lo:.3f}-{hi:.3f}]':>17} "
            f"{(hi / lo - 1) * 100:>6.1f}% {base['mean']:>9,.0f}"
        )
