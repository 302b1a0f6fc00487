#!/usr/bin/env bash
# README's test command: installs what the tests need and the machine lacks (scripts/setup.sh
# --test), then runs the whole suite, four test files at a time (scripts/lanes.py); with
# arguments, `cargo test ARGS` instead (e.g. `--test run`, or `--test faults pause_at_quorum`).
# The tests start and stop real Cassandra nodes; whatever happens, none outlives this script.
#
#   scripts/test.sh --fast   the fast loop: every test that needs no Cassandra node (the unit
#                            tests, the layout, link and notebook checks, and the test files that never take
#                            common::jvm_lock: today refusals, gclog, hot_path_alloc, k8s),
#                            about a minute after the build.
#                            The full suite stays the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"

# What the tests need and the machine lacks, installed once (a couple of seconds after that).
scripts/setup.sh --test

if [ "${1:-}" = "--fast" ]; then
  shift
  python3 scripts/check-layout.py
  python3 scripts/check-links.py
  python3 scripts/check-notebook.py
  python3 scripts/build-only-crates.py
  # The rule: every test that starts a Cassandra node takes common::jvm_lock, so the files
  # that never name it are the ones that need no node.
  fast=()
  for f in tests/*.rs; do
    grep -q jvm_lock "$f" || fast+=(--test "$(basename "$f" .rs)")
  done
  exec cargo test --lib --bins "${fast[@]}" "$@"
fi

# Test nodes live under the target directory's tmp/, wherever CARGO_TARGET_DIR puts it.
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
cleanup() {
  pkill -KILL -f "$target/tmp/caplab-tests" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
if [ $# -eq 0 ]; then
  # The whole suite: every test binary built once, the files run four at a time, longest first
  # (scripts/lanes.py says why and how they are grouped).
  python3 scripts/lanes.py
else
  cargo test "$@"
fi
