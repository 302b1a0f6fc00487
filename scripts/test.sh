#!/usr/bin/env bash
# README's test command: installs what the tests need and the machine lacks (scripts/setup.sh
# --test, cargo-nextest among them), then runs the whole suite with cargo-nextest, `cargo nextest
# run --profile ci` (.config/nextest.toml: four tests at a time, a test group per file that starts
# nodes, a failed test tried once more and reported as flaky, JUnit in target/nextest/ci/).
# With arguments, `cargo nextest run ARGS` instead (e.g. `-E 'binary(run)'`, or
# `-E 'binary(faults_cluster) & test(pause_at_quorum)'`).
# The tests start and stop real Cassandra nodes; whatever happens, none outlives this script.
#
#   scripts/test.sh --fast   the fast loop: the layout, link, notebook and test-rule checks and
#                            every test that needs no Cassandra node (the unit tests and the test
#                            files that never take common::jvm_lock: today refusals, gclog,
#                            hot_path_alloc, k8s), about a minute after the build.
#                            The full suite stays the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
# Where pip puts cargo-nextest (scripts/setup.sh --test).
export PATH="$PATH:$HOME/.local/bin"

# What the tests need and the machine lacks, installed once (a couple of seconds after that).
scripts/setup.sh --test

if [ "${1:-}" = "--fast" ]; then
  shift
  python3 scripts/check-layout.py
  python3 scripts/check-links.py
  python3 scripts/check-notebook.py
  python3 scripts/check-tests.py
  python3 scripts/build-only-crates.py
  # The rule (scripts/check-tests.py): every test of a file that starts a Cassandra node takes
  # common::jvm_lock, so the files that never name it are the ones that need no node.
  fast=()
  for f in tests/*.rs; do
    grep -q jvm_lock "$f" || fast+=(--test "$(basename "$f" .rs)")
  done
  exec cargo nextest run --workspace --lib --bins "${fast[@]}" "$@"
fi

# Test nodes live under the target directory's tmp/, wherever CARGO_TARGET_DIR puts it.
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
cleanup() {
  pkill -KILL -f "$target/tmp/caplab-tests" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
if [ $# -eq 0 ]; then
  status=0
  cargo nextest run --workspace --profile ci || status=$?
  # Where the time went, file by file (from the JUnit file nextest wrote).
  python3 scripts/suite-timeline.py || true
  exit $status
else
  cargo nextest run --workspace "$@"
fi
