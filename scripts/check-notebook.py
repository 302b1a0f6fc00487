#!/usr/bin/env python3
"""The lab notebook stays in bench/: code comments, help text (doc comments), build files and
docs keep the reason for a choice and cite where its figures are, never the story of a day's
measurement. A line is refused when it holds a date (2026-12-02), a CI tale ("a CI of", "in
CI took"), a session's number ("stop 62"), or "here" beside a figure ("took 57.7 ms here").
Exits 1 naming each line, so the notebook does not grow back into the product.

    python3 scripts/check-notebook.py [--count] [--self-test]

Read: src/, crates/*/src/, tests/, crates/*/tests/, crates/*/examples/ (comments and string
literals alike: help text is doc comments, and messages are strings), docs/*.md, README.md,
Cargo.toml files, .ci/run and scripts/. Not read: bench/ (the notebook) and experiments/*.yaml
(each file's comment is the experiment's own record, citing bench/ for its figures).
"""

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A figure: a number with a unit a measurement has.
FIGURE = r"(?<![\w.])\d[\d,.]*\s?(?:%|ms|µs|us|ns|s|min|h|op/s|ops/s|GiB|MiB|KiB|GB|MB|cores?|x)(?!\w)"
# Where a date is data, not a day's story: a log line or timestamp (a time follows), a quoted
# sample ("…" or `…`), or an epoch a format counts from.
SAMPLE = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|\b20\d\d-[01]\d-[0-3]\d[ T]\d\d:\d\d|\b(?:1970|2020)-01-01\b')
CI = r"(?<!%)(?<!% )\bCIs?\b(?! time)"
RULES = [
    ("a date", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")),
    ("a CI tale", re.compile(r"\b(?:a|one|this|that|the last|an earlier|two|three) CIs? (?:of|run|ran|took|on|failed|passed)\b|\bin (?:a )?CI,? (?:took|ran|failed)\b", re.I)),
    # (a confidence interval, "95 % CI", and the citation "CI time" are no CI run)
    ("a CI's figure", re.compile(rf"{FIGURE}.*{CI}|{CI}.*{FIGURE}")),
    ("a session's number", re.compile(r"\bstops? \d+\b", re.I)),
    ("\"here\" beside a figure", re.compile(rf"\bhere\b(?:[^.]|\.\d)*{FIGURE}|{FIGURE}.*\bhere\b", re.I)),
]
HERE = RULES[-1][0]
HERE_WORD = re.compile(r"\bhere\b", re.I)
# A comment's or doc comment's leading marks, taken off a continuation line.
COMMENT = re.compile(r"^\s*(?://[/!]?|#)\s?")


def files(root):
    out = []
    for pattern in ["src/**/*.rs", "crates/*/src/**/*.rs", "crates/*/tests/**/*.rs", "crates/*/examples/**/*.rs",
                    "tests/**/*.rs", "docs/*.md", "README.md", "Cargo.toml", "crates/*/Cargo.toml", ".ci/run",
                    "scripts/*"]:
        out += [p for p in sorted(root.glob(pattern)) if p.is_file()]
    return [p for p in dict.fromkeys(out) if p.name != "check-notebook.py" and p.suffix != ".tsv"]


def found(root):
    """(file, line number, rule, line) for every line the rules refuse."""
    hits = []
    for path in files(root):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        in_code = False
        lines = text.splitlines()
        for n, line in enumerate(lines, 1):
            if path.suffix == ".md" and line.startswith("```"):
                in_code = not in_code
            # "here" and its figure can be a line apart in one sentence of a wrapped comment.
            after = COMMENT.sub("", lines[n]) if n < len(lines) else ""
            for name, rule in RULES:
                seen = f"{line} {after}" if name == HERE and HERE_WORD.search(line) else line
                if rule.search(SAMPLE.sub("", seen) if name == "a date" else seen):
                    hits.append((path.relative_to(root), n, name, line.strip()))
                    break
    return hits


def self_test():
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "src").mkdir()
        (root / "docs").mkdir()
        (root / "src" / "a.rs").write_text(
            "// Fresh nodes settle in 67-103 s (bench/RESULTS.md, E1 batches).\n"
            "// A CI of 2026-12-01 took 57.7 ms.\n"
            "/// Took 12 s here.\n"
            "// Changed at stop 62.\n"
            "// The rule is here: every window is compared.\n"
            "/// to check behaviour rather than speed. Here a fresh 5.0\n"
            "/// node started on 22-30 % less CPU.\n"
            "// Two CIs ran it.\n"
            "# compile every crate twice (4 min 26 s of a clean-clone CI).\n"
            "# CI has 90 minutes; keep it under 20 (a rule, said once).\n"
            "// mean [95% CI] and ratio [95 % CI] of 2.5 ms (bench/RESULTS.md, CI time).\n"
            '        "INFO  [main] 2026-11-29 21:58:31,808 CassandraDaemon.java:1020 - Exception",\n'
            "/// `openjdk version \"17.0.15\" 2025-04-15` from `java -version`; days from 2020-01-01.\n"
        )
        (root / "docs" / "x.md").write_text("Here a fresh node started on 22-30 % less CPU.\nA date: 2026-11-27.\n")
        hits = found(root)
        got = {(str(f), n) for f, n, _, _ in hits}
        want = {("src/a.rs", 2), ("src/a.rs", 3), ("src/a.rs", 4), ("src/a.rs", 6), ("src/a.rs", 8), ("src/a.rs", 9),
                ("docs/x.md", 1), ("docs/x.md", 2)}
        assert got == want, f"refused {sorted(got)}, expected {sorted(want)}"
    print("check-notebook self-test: ok")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return
    hits = found(ROOT)
    if "--count" in sys.argv:
        per = {}
        for f, _, name, _ in hits:
            per[str(f)] = per.get(str(f), 0) + 1
        for f, n in sorted(per.items(), key=lambda x: -x[1]):
            print(f"{n:4} {f}")
        print(f"{len(hits)} line(s)")
        return
    for f, n, name, line in hits:
        print(f"{f}:{n}: {name}: {line[:110]}")
    if hits:
        print(f"\n{len(hits)} line(s) keep the lab notebook outside bench/: keep the reason, move the figure's "
              "story to bench/RESULTS.md (or a file under bench/) and cite it", file=sys.stderr)
        sys.exit(1)
    print("notebook: no dates, CI tales, session numbers or \"here\" beside a figure outside bench/")


if __name__ == "__main__":
    main()
