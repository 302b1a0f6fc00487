#!/usr/bin/env python3
"""The run-to-run noise measured on this project's machines, as the statistics' simulations draw
it: writes crates/stats/src/stats/noise.rs (do not edit that file by hand).

Sources, all in the repository:
- every experiment sitting kept in bench/sittings/: each cell (a sitting's
  variant x measurement) is a configuration run again and again; a run's residual is its log
  value less the median of the cell's other runs (scaled by 1/sqrt(1 + pi/(2(n-1))), what that
  median adds to a normal run's spread). A cell's mean would spread one GC-paused run's excess
  over the others of a cell of four, making a quarter of all runs look low; its own median would
  make one run of each cell exactly 0, a spike a robust spread then reads as no spread at all;
- the nightly-gate series of bench/gate-hogged.sh kept in bench/results/ (gate-hogged-*.tsv):
  its clean runs after the first (the fresh node's JIT), as one cell per series.

A run is a row of residuals, one per figure the history checks (None where the figure was not
measured), kept whole so that figures that move together (a GC pause in p99, p99.9 and service
p99 at once) move together in the simulations too. Rows are grouped by machine: the CPU model of
the sitting's host (Intel Xeon, AMD EPYC), which is what differed between the machines measured.

    python3 bench/noise-model.py            # rewrites crates/stats/src/stats/noise.rs
    python3 bench/noise-model.py --check    # exits 1 when the file is not what the sources give
"""
import glob
import json
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates/stats/src/stats/noise.rs")
# The history's figures (`stats::sim::CHECK_FIGURES`' order) and each one's key in a step's values.
FIGURES = [
    ("throughput", "throughput"),
    ("p50_ms", "p50"),
    ("p99_ms", "p99"),
    ("p999_ms", "p999"),
    ("service_p99_ms", "service_p99"),
    ("server_cpu_us_per_op", "server_cpu_us_per_op"),
    ("gc_pause_ms", "gc_total_ms"),
]
TSV = {"p99_ms": "p99_ms", "p999_ms": "p999_ms", "server_cpu_us_per_op": "server_cpu_us_per_op"}


def machine(host):
    model = (host or {}).get("cpu_model", "")
    return "intel" if "Intel" in model else "amd" if "AMD" in model else None


def residual_rows(cells):
    """Rows of residuals from cells of runs (each run a dict figure -> value or None)."""
    rows = []
    for runs in cells:
        if len(runs) < 3:
            continue
        n = len(runs)
        measured = [fig for fig, _ in FIGURES if all(r.get(fig) and r[fig] > 0 for r in runs)]
        # The median of a normal sample of m has a variance of about pi/(2m) that of one value.
        scale = 1 / math.sqrt(1 + math.pi / (2 * (n - 1)))
        for i, r in enumerate(runs):
            row = []
            for fig, _ in FIGURES:
                if fig not in measured:
                    row.append(None)
                    continue
                others = [math.log(o[fig]) for j, o in enumerate(runs) if j != i]
                row.append(round((math.log(r[fig]) - statistics.median(others)) * scale, 4))
            rows.append(row)
    return rows


def sittings():
    by_machine = {}
    paths = sorted(glob.glob(os.path.join(ROOT, "bench/sittings/*/experiment.json")))
    for path in paths:
        d = json.load(open(path))
        hosts = {s["name"]: machine(s.get("host")) for s in d["sittings"]}
        cells = {}
        for s in d["steps"]:
            if s.get("status") != "completed":
                continue
            key = (s["sitting"], s.get("variant_name"), s.get("measurement_name"))
            cells.setdefault(key, []).append({fig: s["values"].get(src) for fig, src in FIGURES})
        for key, runs in cells.items():
            m = hosts.get(key[0])
            if m:
                by_machine.setdefault(m, {"cells": [], "sources": set()})
                by_machine[m]["cells"].append(runs)
                by_machine[m]["sources"].add(os.path.relpath(path, ROOT))
    return by_machine


def nightly(by_machine):
    for path in sorted(glob.glob(os.path.join(ROOT, "bench/results/gate-hogged-*.tsv"))):
        m = os.path.basename(path)[len("gate-hogged-"):-len(".tsv")]
        lines = open(path).read().splitlines()
        head = lines[0].split("\t")
        series = {}
        for line in lines[1:]:
            row = dict(zip(head, line.split("\t")))
            if row["mode"] != "clean" or row["run"] == "1" or row["disturbed"] == "yes":
                continue
            series.setdefault(row["series"], []).append({fig: float(row[col]) for fig, col in TSV.items()})
        by_machine.setdefault(m, {"cells": [], "sources": set()})
        for runs in series.values():
            by_machine[m]["cells"].append(runs)
        by_machine[m]["sources"].add(os.path.relpath(path, ROOT))


def render(by_machine):
    out = [
        "//! The run-to-run noise measured on this project's machines, as the simulations draw it: each",
        "//! row one measured run's residuals (its log value less its configuration's other runs' median, per figure",
        "//! of `sim::CHECK_FIGURES` but capacity; NAN where not measured), kept whole so that figures",
        "//! that move together move together. Generated by bench/noise-model.py from the sources each",
        "//! machine names; do not edit by hand (`python3 bench/noise-model.py --check` in CI).",
        "",
        "/// One machine's measured runs.",
        "pub struct Machine {",
        "    pub name: &'static str,",
        "    pub sources: &'static [&'static str],",
        "    pub rows: &'static [[f64; 7]],",
        "}",
        "",
        "#[rustfmt::skip]",
        "pub const MACHINES: [Machine; %d] = [" % len(by_machine),
    ]
    for m in sorted(by_machine):
        rows = residual_rows(by_machine[m]["cells"])
        out.append("    Machine {")
        out.append('        name: "%s",' % m)
        out.append("        sources: &[")
        for s in sorted(by_machine[m]["sources"]):
            out.append('            "%s",' % s)
        out.append("        ],")
        out.append("        rows: &[")
        for r in rows:
            cells = ", ".join("f64::NAN" if v is None else repr(float(v)) for v in r)
            out.append("            [%s]," % cells)
        out.append("        ],")
        out.append("    },")
    out.append("];")
    return "\n".join(out) + "\n"


def main():
    by_machine = sittings()
    nightly(by_machine)
    text = render(by_machine)
    if "--check" in sys.argv:
        if open(OUT).read() != text:
            print("crates/stats/src/stats/noise.rs is not what bench/noise-model.py gives: run it", file=sys.stderr)
            return 1
        print("noise model: crates/stats/src/stats/noise.rs is what its sources give")
        return 0
    open(OUT, "w").write(text)
    for m in sorted(by_machine):
        print(m, len(residual_rows(by_machine[m]["cells"])), "runs from", ", ".join(sorted(by_machine[m]["sources"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
