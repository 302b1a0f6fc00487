#!/usr/bin/env python3
"""The rules the suite's runner relies on, checked (run by .ci/run and `scripts/test.sh --fast`;
stdlib only). nextest runs every test in a process of its own, so what keeps a file's node tests
one at a time and stops its shared node is written down, not implied:

1. In a test file that starts Cassandra nodes (it names `jvm_lock`), every test takes
   `jvm_lock()`: the lock keeps the file's tests one at a time, and its release is how the file's
   last test is seen to end, which stops the node the file's tests shared (tests/common/shared.rs).
   A test whose node is its own may take `jvm_lock_apart()` instead, which lets such tests of a
   file run at once, as many as the file's test group allows.
2. Every such file is in a test group, or needs every thread, in .config/nextest.toml, so nextest
   runs its tests one at a time instead of holding a thread for each test waiting on the lock.
3. Every test file that makes a `Lab::new` is listed in tests/common/shared.rs's TEST_FILES,
   which gives each file its addresses.

`python3 scripts/check-tests.py --self-test` plants one break of each rule in a copy and checks
that each is caught, naming the file.
"""
import pathlib
import re
import shutil
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST = re.compile(r"^#\[test\]\s*\nfn (\w+)\(\)[^{]*\{", re.M)


def tests_without_lock(text):
    """The tests of a file whose body does not begin by taking `jvm_lock()` (within its first
    lines, before anything that could start a node)."""
    bad = []
    for m in TEST.finditer(text):
        head = text[m.end() : m.end() + 400]
        if not re.search(r"\bjvm_lock(_apart)?\(\)", head.split("\n}\n")[0]):
            bad.append(m.group(1))
    return bad


def grouped(config):
    """The binaries .config/nextest.toml gives a test group or every thread."""
    names = set()
    for block in config.split("[[profile.default.overrides]]")[1:]:
        if "test-group" in block or "threads-required = 'num-test-threads'" in block:
            names.update(re.findall(r"binary\((\w+)\)", block))
    return names


def check(root):
    tests = root / "tests"
    config = (root / ".config" / "nextest.toml").read_text()
    listed = (tests / "common" / "shared.rs").read_text()
    files = re.search(r"const TEST_FILES: &\[&str\] = &\[(.*?)\];", listed, re.S).group(1)
    in_list = set(re.findall(r'"(\w+)"', files))
    groups = grouped(config)
    bad = []
    for path in sorted(tests.glob("*.rs")):
        text, name = path.read_text(), path.stem
        if "jvm_lock" in text:
            for t in tests_without_lock(text):
                bad.append(f"tests/{name}.rs: test {t} does not take jvm_lock() (every test of a file that starts nodes does)")
            if name not in groups:
                bad.append(f"tests/{name}.rs starts nodes but has no test group in .config/nextest.toml")
        if "Lab::new(" in text and name not in in_list:
            bad.append(f"tests/{name}.rs makes labs but is not in TEST_FILES (tests/common/shared.rs)")
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        shutil.copytree(ROOT / "tests", copy / "tests")
        shutil.copytree(ROOT / ".config", copy / ".config")
        assert not check(copy), f"the tree must pass before anything is planted: {check(copy)}"
        # 1: a test that forgets the lock.
        f = copy / "tests" / "faults.rs"
        f.write_text(f.read_text() + "\n#[test]\nfn planted() {\n    let lab = one();\n    drop(lab);\n}\n")
        # 2: a file's group taken away.
        c = copy / ".config" / "nextest.toml"
        c.write_text(c.read_text().replace("filter = 'binary(stress)'", "filter = 'binary(nothing)'"))
        # 3: a file that makes labs, not listed.
        s = copy / "tests" / "common" / "shared.rs"
        s.write_text(s.read_text().replace('    "downgrade",\n', ""))
        found = check(copy)
        ok = True
        for what, want in (
            ("a test without the lock", "faults.rs: test planted"),
            ("a file without a group", "stress.rs starts nodes but has no test group"),
            ("a file not listed", "downgrade.rs makes labs but is not in TEST_FILES"),
        ):
            hit = [b for b in found if want in b]
            print(f"planted {what}: {'caught' if hit else 'MISSED'}: {hit[0] if hit else found}")
            ok &= bool(hit)
        if not ok:
            sys.exit(1)


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    bad = check(ROOT)
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print("tests: every node test takes jvm_lock, every node file has its group, every file its addresses")


if __name__ == "__main__":
    main()
