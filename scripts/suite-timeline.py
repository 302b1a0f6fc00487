#!/usr/bin/env python3
"""Where the suite's time went, from the JUnit file cargo-nextest writes (stdlib only):
for each test binary, when its first test began and its last ended (seconds from the run's
first test), the span between, and the sum of its tests' own times; then the run's end.
scripts/test.sh prints it after the whole suite.

    scripts/suite-timeline.py [JUNIT]    (default target/nextest/ci/junit.xml)

A file's tests run one after another (its test group), so span ≈ sum for a file that starts
nodes; the three files that need the machine to themselves come last, and the gap between the
end of the others and their start is what waiting for the machine cost.
"""
import datetime
import pathlib
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent


def timeline(junit):
    """[(binary, start s, end s, sum of its tests' s)] by start, from the JUnit file."""
    rows = []
    for suite in ET.parse(junit).getroot().iter("testsuite"):
        for case in suite.iter("testcase"):
            began = datetime.datetime.fromisoformat(case.get("timestamp"))
            rows.append((began, float(case.get("time")), suite.get("name")))
    if not rows:
        return []
    zero = min(r[0] for r in rows)
    files = {}
    for began, took, name in rows:
        at = (began - zero).total_seconds()
        first, last, total = files.get(name, (at, at + took, 0.0))
        files[name] = (min(first, at), max(last, at + took), total + took)
    return sorted(((n, *v) for n, v in files.items()), key=lambda r: r[1])


def main():
    junit = pathlib.Path(sys.argv[1]) if sys.argv[1:] else ROOT / "target" / "nextest" / "ci" / "junit.xml"
    if not junit.exists():
        print(f"no {junit}: run the suite first (scripts/test.sh)")
        return 1
    rows = timeline(junit)
    print(f"{'test binary':28} {'start':>6} {'end':>6} {'span':>6} {'sum':>6}  (s)")
    for name, first, last, total in rows:
        print(f"{name:28} {first:6.0f} {last:6.0f} {last - first:6.0f} {total:6.0f}")
    if rows:
        print(f"{len(rows)} binaries; the last test ended {max(r[2] for r in rows):.0f} s after the first began")
    return 0


if __name__ == "__main__":
    sys.exit(main())
