#!/usr/bin/env python3
"""Summarises bench/steady-calibration.sh's runs: the verdict's false alarms on stationary
windows and its detection of the changes placed in them, with each change's measured size.

Usage: steady-calibration.py DIR  (the script's $OUT; each run directory holds windows.json,
written by `caplab steady --window 60s --json`, and latency.csv)."""
import collections
import csv
import json
import pathlib
import sys


def per_second(run, column):
    """The run's per-second values of `column` (count or medianMs), all operation types."""
    rows = collections.defaultdict(list)
    with open(run / "latency.csv") as f:
        for r in csv.DictReader(f):
            rows[r["timestamp"]].append(r)
    out = []
    for _, rs in sorted(rows.items()):
        if column == "count":
            out.append(sum(float(r["count"]) for r in rs))
        else:
            out.append(max(float(r[column] or 0) for r in rs))
    return out


def change(run, column):
    """The last 20 s against the first 40 s of the run's one window, as a share."""
    v = per_second(run, column)[:60]
    before, after = v[:40], v[40:]
    if not before or not after:
        return None
    b, a = sum(before) / len(before), sum(after) / len(after)
    return (a - b) / b if b else None


def main():
    root = pathlib.Path(sys.argv[1])
    print("| windows | judged | flat | warm-up | slowdown | none | false alarms |")
    print("|---|---|---|---|---|---|---|")
    for name in ("stationary-flat", "stationary-rate"):
        w = json.loads((root / name / "windows.json").read_text())
        c = collections.Counter(x["class"] for x in w)
        alarms = sum(1 for x in w if x["class"] not in ("flat", None))
        print(f"| {name} | {len(w)} | {c['flat']} | {c['warmup']} | {c['slowdown']} | {c['none']} | "
              f"{alarms} of {len(w)} ({100 * alarms / max(len(w), 1):.0f} %) |")
    print()
    print("| change | runs | measured size (median, range) | detected (not flat) |")
    print("|---|---|---|---|")
    groups = collections.defaultdict(list)
    for d in sorted(root.iterdir()):
        if d.name.startswith(("hog-", "delay-")) and (d / "windows.json").exists():
            kind, size, _ = d.name.split("-")
            w = json.loads((d / "windows.json").read_text())
            if not w:
                continue
            column = "count" if kind == "hog" else "medianMs"
            groups[(kind, size)].append((change(d, column), w[0]["class"] != "flat"))
    for (kind, size), runs in sorted(groups.items(), key=lambda k: (k[0][0], int(k[0][1]))):
        sizes = sorted(s for s, _ in runs if s is not None)
        label = f"CPU hog {size} % of a core (throughput)" if kind == "hog" else f"delay {size} ms (p50)"
        med = sizes[len(sizes) // 2] if sizes else float("nan")
        span = f"{100 * sizes[0]:+.0f} to {100 * sizes[-1]:+.0f} %" if sizes else "-"
        hits = sum(1 for _, d in runs if d)
        print(f"| {label} | {len(runs)} | {100 * med:+.0f} % ({span}) | {hits} of {len(runs)} |")


if __name__ == "__main__":
    main()
