#!/usr/bin/env python3
"""Keeps Cargo.toml's list of crates that run only while building (proc macros, build scripts'
helpers) unoptimised, and true.

`[profile.dev.package."*"] opt-level = 2` optimises every dependency, and Cargo gives that
glob precedence over `[profile.dev.build-override]`, so proc macros and their syn, quote and
proc-macro2 were compiled at opt-level 2 too: time spent optimising code that runs only inside
the compiler, for a few seconds a build. Named, at opt-level 0, the test build from clean takes
about a third less time (bench/results/ci-time.md, "The build: crates that run only inside the
compiler"). This finds them: every package this workspace's builds on the host reach only
through a proc macro or a build dependency.

    scripts/build-only-crates.py          fails (exit 1) naming what Cargo.toml's list lacks
                                          or holds in excess, with the lines to paste
    scripts/build-only-crates.py --self-test
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "# build-only crates, from scripts/build-only-crates.py"
END = "# end of the build-only crates"


def host():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def build_only(metadata):
    """Names of the packages reached from the workspace's members only through proc macros
    or build dependencies."""
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    members = set(metadata["workspace_members"])

    def proc_macro(pid):
        return any("proc-macro" in t["kind"] for t in packages[pid]["targets"])

    runtime, todo = set(members), list(members)
    while todo:
        for dep in nodes[todo.pop()]["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if proc_macro(dep["pkg"]) or not kinds & {None, "dev"} or dep["pkg"] in runtime:
                continue
            runtime.add(dep["pkg"])
            todo.append(dep["pkg"])
    return sorted({packages[p]["name"] for p in nodes if p not in runtime})


def listed(manifest):
    """The names in Cargo.toml's build-only section."""
    if BEGIN not in manifest or END not in manifest:
        return None
    section = manifest.split(BEGIN, 1)[1].split(END, 1)[0]
    return sorted(re.findall(r'^\[profile\.dev\.package\."?([A-Za-z0-9_-]+)"?\]', section, re.M))


def lines_for(names):
    return "".join(f'[profile.dev.package.{n if "-" not in n else chr(34) + n + chr(34)}]\nopt-level = 0\n' for n in names)


def self_test():
    pid = lambda n: f"{n} 1.0"
    pkg = lambda n, kind="lib": {"id": pid(n), "name": n, "targets": [{"kind": [kind]}]}
    dep = lambda n, kind=None: {"pkg": pid(n), "dep_kinds": [{"kind": kind}]}
    meta = {
        "workspace_members": [pid("app")],
        "packages": [pkg("app"), pkg("serde"), pkg("serde_derive", "proc-macro"), pkg("syn"), pkg("cc"), pkg("memchr")],
        "resolve": {
            "nodes": [
                {"id": pid("app"), "deps": [dep("serde"), dep("cc", "build")]},
                {"id": pid("serde"), "deps": [dep("serde_derive"), dep("memchr")]},
                {"id": pid("serde_derive"), "deps": [dep("syn"), dep("memchr")]},
                {"id": pid("syn"), "deps": []},
                {"id": pid("cc"), "deps": []},
                {"id": pid("memchr"), "deps": []},
            ]
        },
    }
    # memchr is reached at run time too (through serde): it stays optimised.
    assert build_only(meta) == ["cc", "serde_derive", "syn"], build_only(meta)
    manifest = f'x\n{BEGIN}\n[profile.dev.package.syn]\nopt-level = 0\n[profile.dev.package."serde-x"]\nopt-level = 0\n{END}\n'
    assert listed(manifest) == ["serde-x", "syn"], listed(manifest)
    assert listed("no section") is None
    print("build-only crates: self-test passed")


def main():
    if "--self-test" in sys.argv[1:]:
        self_test()
        return 0
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--filter-platform", host()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    want = build_only(json.loads(out))
    have = listed((ROOT / "Cargo.toml").read_text())
    if have == want:
        print(f"build-only crates: Cargo.toml leaves the {len(want)} crates that run only while building unoptimised")
        return 0
    print("Cargo.toml's build-only crates are not the ones the build has:", file=sys.stderr)
    if have is None:
        print(f"  no section between '{BEGIN}' and '{END}'", file=sys.stderr)
        have = []
    for n in sorted(set(want) - set(have)):
        print(f"  missing: {n}", file=sys.stderr)
    for n in sorted(set(have) - set(want)):
        print(f"  not build-only (or gone): {n}", file=sys.stderr)
    print(f"replace the section with:\n{BEGIN}\n{lines_for(want)}{END}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
