"""Where the test suite's CPU goes (scripts/lanes.py prints it after every run): each test
file's own processes (the test binary and every caplab it waited for, from wait4's rusage) and
its Cassandra nodes (each CassandraDaemon whose home lies under target/tmp/caplab-tests/FILE/,
sampled every 2 s from /proc: a node stopped between two samples loses at most 2 s of its
CPU), and the whole machine's busy share from /proc/stat. On two shared cores a suite whose
cores are busy all the time is shortened only by less work, never by more at once.

A node that caplab itself started and stopped (an experiment's, a bisection's) is its child, and
wait4 adds what it burned to caplab's, so to its test file's own column too: the experiment
files' own CPU is mostly their nodes' again (run alone, tests/experiment.rs's own 186 s held 22 s
of caplab's; the machine was busy 156 s in all). The machine's busy share is the total to trust."""

import os
import re
import threading
import time
from pathlib import Path

HOME = re.compile(rb"/caplab-tests/([A-Za-z0-9_]+)/")


def machine():
    """(busy, all) jiffies of the whole machine, from /proc/stat (None off Linux)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def busy_since(began):
    """The machine's busy share of its cores since `machine()` gave `began`."""
    now = machine()
    if not began or not now or now[1] == began[1]:
        return float("nan")
    return (now[0] - began[0]) / (now[1] - began[1])


class Nodes(threading.Thread):
    """Samples the CPU seconds of every test node, by test file, until the process ends."""

    def __init__(self):
        super().__init__(daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK")
        self.lock = threading.Lock()
        self.last = {}  # (pid, start time) -> (file, CPU seconds)

    def run(self):
        while True:
            self.sample()
            time.sleep(2)

    def sample(self):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                home = HOME.search(cmd) if b"CassandraDaemon" in cmd else None
                if not home:
                    continue
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            cpu = (int(fields[11]) + int(fields[12])) / self.tick
            with self.lock:
                self.last[(pid, fields[19])] = (home.group(1).decode(), cpu)

    def by_file(self):
        """{test file: CPU seconds of its nodes}."""
        self.sample()
        out = {}
        with self.lock:
            for name, cpu in self.last.values():
                out[name] = out.get(name, 0.0) + cpu
        return out


def table(took, own, nodes):
    """Lines of the files' wall and CPU seconds, the most CPU first."""
    rows = sorted(took, key=lambda n: -(own.get(n, 0) + nodes.get(n, 0)))
    lines = [f"{'file':<20} {'wall s':>7} {'CPU s':>7} {'tests+caplab':>13} {'nodes':>7}"]
    for n in rows:
        o, c = own.get(n, 0.0), nodes.get(n, 0.0)
        lines.append(f"{n:<20} {took[n]:7.0f} {o + c:7.0f} {o:13.0f} {c:7.0f}")
    total_own, total_nodes = sum(own.values()), sum(nodes.values())
    lines.append(f"{'all':<20} {sum(took.values()):7.0f} {total_own + total_nodes:7.0f} {total_own:13.0f} {total_nodes:7.0f}")
    return lines
