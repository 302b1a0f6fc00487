#!/usr/bin/env python3
"""The whole suite four files at a time: README's test command (scripts/test.sh) runs this.

`cargo test` runs its test files one after another, and much of a real-node test's time is
waiting (a node booting, a run at a fixed rate, a warm-up that has to last): on two cores, several
files at once take little more than one. So this builds every test binary once, then runs them
four at a time, the longest first, each into a log of its own that is printed whole, in one
piece, when the file ends (a failure's output is never interleaved with another file's). A file
starts as soon as a lane is free and its group allows it beside the files already running.
With the two cores busy while three files run, what shortens the suite is less work per node:
the tests' nodes run with a 1 ms timer slack and C1 alone for their JIT (bench/results/ci-time.md,
bench/results/provisioning.md).

The groups, read from the test files themselves (a `Test group:` line in the module doc; no
hand-kept list):
- a file that never names `jvm_lock` starts no node: it runs in whichever lane is free;
- `alone`: runs with the machine to itself, once every other file has begun: tests/steady.rs,
  which measures how a fresh node's flat-out throughput and JIT settle; tests/history_gate.rs,
  whose confirmation by rerunning must see the machine itself again; tests/loaders_warmup.rs,
  whose loaders wait for the node to settle. Beside another file's node the gate's canary missed
  a 2 ms slowdown in the neighbour's noise, and the loaders took most of their time to settle.
- `cluster`: starts a cluster of several nodes (tests/faults_cluster.rs, upgrade.rs, bank.rs);
  never beside another `cluster` file: six nodes on two cores make a killed node's return and
  an upgrade several times slower than alone, past the tests' windows;
- `quiet`: never beside a `cluster` file or another `quiet` one (tests/bank.rs, whose Accord
  transfers time out beside three more nodes);
- every other file shares the machine with one other file.
The order: the last measured duration of each file (scripts/test-durations.tsv, rewritten into
the target directory after every run: copy it over to keep the order current), longest first;
a file with no duration yet counts as 60 s. `--list` prints when each file would start if it
took that long again.

    scripts/lanes.py [--lanes N] [--list] [FILE...]

FILE names test files to run (`faults history`; `lib` is caplab's unit tests, `stats` those of
crates/stats), all of them when none is given. --lanes 1 runs the files one by one, as `cargo
test` would. How many lanes, measured against three and one: bench/results/ci-time.md.

A file that fails has its failed tests run once more, by exact name, alone, after everything
else: a failure that is the machine's (a slow sitting starving a loader or a proxy's delay) does
not come twice in a row with the machine to itself, while a bug does. Both outputs are printed;
a test that passed only alone is named at the end as such. Exits 1 if any test failed twice,
naming its file.
"""

import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import cpu_use

ROOT = Path(__file__).resolve().parent.parent
DURATIONS = ROOT / "scripts" / "test-durations.tsv"
UNKNOWN_S = 60.0


def build():
    """Builds every test binary; returns {name: executable} (name: `lib` or the test file's stem)."""
    out = subprocess.run(
        ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    ).stdout
    binaries = {}
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            continue
        kinds = msg["target"]["kind"]
        if "test" in kinds:
            binaries[msg["target"]["name"]] = msg["executable"]
        elif "lib" in kinds:
            # caplab's unit tests are `lib`; a workspace crate's are named after it (`stats` for
            # crates/stats, whose library is caplab_stats).
            name = msg["target"]["name"]
            binaries["lib" if name == "caplab" else name.removeprefix("caplab_")] = msg["executable"]
        # The binary's own unit tests (src/main.rs) hold none: skipped.
    return binaries


def starts_nodes(name):
    """Whether test file `name` starts Cassandra nodes: it names `jvm_lock`, as every test that
    starts one takes it (unit tests, `lib` or a workspace crate's, start none)."""
    path = ROOT / "tests" / f"{name}.rs"
    return path.exists() and "jvm_lock" in path.read_text()


@functools.cache
def tags_of(name):
    """The words of the test file's `Test group:` line in its module doc (`alone`, `quiet`,
    `cluster`), before any parenthesis: none for a file without one."""
    path = ROOT / "tests" / f"{name}.rs"
    if not path.exists():
        return set()
    for line in path.read_text().splitlines():
        if line.startswith("//! Test group:"):
            words = line.removeprefix("//! Test group:").split("(")[0]
            return {w.strip() for w in words.split(",") if w.strip()}
    return set()


def fits(name, running, tags):
    """Whether file `name` may start beside the files `running`: an `alone` file beside none,
    nothing beside an `alone` one, and never two `quiet` files, two `cluster` files or a `quiet`
    one and a `cluster` one together."""
    mine = tags(name)
    theirs = [tags(r) for r in running]
    if "alone" in mine:
        return not running
    if any("alone" in t for t in theirs):
        return False
    if "quiet" in mine and any("cluster" in t or "quiet" in t for t in theirs):
        return False
    if "cluster" in mine and any("quiet" in t or "cluster" in t for t in theirs):
        return False
    return True


def pick(pending, running, tags):
    """The next file to start beside `running` (pending is longest first), or None: the
    longest that fits, but an `alone` file only once every other has begun (it waits for the
    machine, and the others should not wait for it)."""
    others = [n for n in pending if "alone" not in tags(n)]
    for name in others or pending:
        if fits(name, running, tags):
            return name
    return None


def begin_what_fits(pending, running, lanes, tags, begin):
    """Takes from `pending` every file that may begin beside `running` while a lane is free,
    and calls `begin` with it (which adds it to `running`)."""
    while len(running) < lanes:
        name = pick(pending, list(running), tags)
        if name is None:
            return
        pending.remove(name)
        begin(name)


def simulate(names, lanes, known, tags):
    """The order `main` would start the files in, if each took its last measured time:
    [(start s, name)] and the expected end."""
    pending = sorted(names, key=lambda n: -known.get(n, UNKNOWN_S))
    running = {}  # name -> end
    now, order = 0.0, []

    def begin(name):
        running[name] = now + known.get(name, UNKNOWN_S)
        order.append((now, name))

    while pending or running:
        begin_what_fits(pending, running, lanes, tags, begin)
        if not running:
            break
        done = min(running, key=running.get)
        now = running.pop(done)
    return order, now


def durations():
    known = {}
    if DURATIONS.exists():
        for line in DURATIONS.read_text().splitlines():
            if line and not line.startswith("#"):
                name, seconds = line.split("\t")
                known[name] = float(seconds)
    return known


def failed_tests(output):
    """The names libtest lists under its last `failures:` heading (the one of names, after the
    one of outputs); none when the binary died before listing any."""
    lines = output.splitlines()
    heads = [i for i, line in enumerate(lines) if line.strip() == "failures:"]
    if not heads:
        return []
    names = []
    for line in lines[heads[-1] + 1 :]:
        if not line.startswith("    "):
            if names:
                break
            continue
        names.append(line.strip())
    return names


class Runner:
    def __init__(self, binaries, logs):
        self.binaries = binaries
        self.logs = logs
        self.print_lock = threading.Lock()
        self.failed = []
        self.took = {}
        self.cpu = {}  # file -> CPU seconds of its test binary and the caplabs it waited for

    def execute(self, name, log, tests=()):
        """Runs test file `name` (only `tests`, by exact name, when given) into `log`; returns
        (exit code, seconds)."""
        began = time.monotonic()
        with open(log, "w") as f:
            # Each test's own time beside its name (libtest's --report-time, which stable
            # toolchains print when RUSTC_BOOTSTRAP allows the unstable option): where a file's
            # minutes go. A file whose tests start nodes runs them one at a time (they take
            # common::jvm_lock in turn anyway), so a test's time is not its wait for the lock.
            one_by_one = ["--test-threads=1"] if starts_nodes(name) else []
            only = ["--exact", *tests] if tests else []
            child = subprocess.Popen(
                [self.binaries[name], "-Z", "unstable-options", "--report-time", *one_by_one, *only],
                cwd=ROOT,
                stdout=f,
                stderr=subprocess.STDOUT,
                env={**os.environ, "RUSTC_BOOTSTRAP": "1"},
            )
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = code = os.waitstatus_to_exitcode(status)
        if not tests:
            self.cpu[name] = usage.ru_utime + usage.ru_stime
        return code, time.monotonic() - began

    def run(self, name):
        log = self.logs / f"{name}.log"
        code, took = self.execute(name, log)
        self.took[name] = took
        with self.print_lock:
            word = "ok" if code == 0 else f"FAILED (exit {code})"
            print(f"\n== {name}: {word} in {took:.0f} s (log {log})", flush=True)
            sys.stdout.write(log.read_text())
            sys.stdout.flush()
            if code != 0:
                self.failed.append(name)

    def retry(self, name):
        """Runs a failed file's failed tests once more, alone; True when they all pass."""
        tests = failed_tests((self.logs / f"{name}.log").read_text())
        log = self.logs / f"{name}.retry.log"
        code, took = self.execute(name, log, tests)
        which = " ".join(tests) if tests else "the whole file (no test named as failed)"
        word = "ok" if code == 0 else f"FAILED again (exit {code})"
        print(f"\n== {name}, again alone: {which}: {word} in {took:.0f} s (log {log})", flush=True)
        sys.stdout.write(log.read_text())
        sys.stdout.flush()
        return code == 0


def main():
    args = sys.argv[1:]
    lanes = 4
    if "--lanes" in args:
        lanes = int(args[args.index("--lanes") + 1])
    binaries = build()
    wanted = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--lanes")]
    unknown = [w for w in wanted if w not in binaries]
    if unknown:
        print(f"no test file {' '.join(unknown)}: give some of {' '.join(sorted(binaries))}")
        return 2
    if wanted:
        binaries = {n: b for n, b in binaries.items() if n in wanted}
    known = durations()
    order, expected = simulate(list(binaries), lanes, known, tags_of)
    print(f"{lanes} at a time, each file begun when a lane frees and its group allows it; if each")
    print(f"took its last measured time (about {expected:.0f} s in all), they would begin:")
    for at, name in order:
        group = ", ".join(sorted(tags_of(name)))
        print(f"  {at:5.0f} s  {name}{f' ({group})' if group else ''}")
    sys.stdout.flush()
    if "--list" in args:
        return 0
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    logs = target / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    runner = Runner(binaries, logs)
    began, cpu_began = time.monotonic(), cpu_use.machine()
    nodes = cpu_use.Nodes()
    nodes.start()
    pending = sorted(binaries, key=lambda n: -known.get(n, UNKNOWN_S))
    running = set()
    ended = queue.Queue()

    def run_then_say(name):
        try:
            runner.run(name)
        finally:
            ended.put(name)

    def begin(name):
        running.add(name)
        threading.Thread(target=run_then_say, args=(name,)).start()

    while pending or running:
        begin_what_fits(pending, running, lanes, tags_of, begin)
        assert running, f"no file of {pending} may begin on an idle machine"  # fits() allows any
        running.discard(ended.get())
    measured = target / "test-durations.tsv"
    merged = {**known, **runner.took}
    measured.write_text(
        "# seconds each test file took in its last run (scripts/lanes.py orders by these)\n"
        + "".join(f"{n}\t{s:.0f}\n" for n, s in sorted(merged.items()))
    )
    print(f"\n{len(runner.took)} test files in {time.monotonic() - began:.0f} s; durations in {measured}")
    print(f"the machine's {os.cpu_count()} cores were {cpu_use.busy_since(cpu_began):.0%} busy meanwhile")
    print("where the CPU went (scripts/cpu_use.py; also in target/test-cpu.txt):")
    lines = cpu_use.table(runner.took, runner.cpu, nodes.by_file())
    print("\n".join(lines))
    (target / "test-cpu.txt").write_text("\n".join(lines) + "\n")
    if not runner.failed:
        return 0
    print(f"failed the first time: {' '.join(sorted(runner.failed))}; their failed tests run again, alone")
    again = [name for name in sorted(runner.failed) if not runner.retry(name)]
    passed = sorted(set(runner.failed) - set(again))
    if passed:
        print(f"\nPASSED ALONE after failing beside another file (their first output is above): {' '.join(passed)}")
    if again:
        print(f"FAILED (twice): {' '.join(again)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
