#!/usr/bin/env bash
# README's test command: installs what the tests need and the machine lacks (scripts/setup.sh
# --test), then runs the whole suite, `cargo test` (arguments are passed on, e.g. `--test run`).
# The tests start and stop real Cassandra nodes; whatever happens, none outlives this script.
#
#   scripts/test.sh --fast   the fast loop: every test that needs no Cassandra node (the unit
#                            tests, the layout checks, tests/refusals.rs, gclog.rs,
#                            hot_path_alloc.rs, k8s.rs), about half a minute after the build.
#                            The full suite stays the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"

if [ "${1:-}" = "--fast" ]; then
  shift
  python3 scripts/check-layout.py
  exec cargo test --lib --bins --test refusals --test gclog --test hot_path_alloc --test k8s "$@"
fi

scripts/setup.sh --test
cleanup() {
  pkill -KILL -f "$root/target/tmp/caplab-tests" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
cargo test "$@"
