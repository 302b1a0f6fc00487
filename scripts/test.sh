#!/usr/bin/env bash
# README's test command: installs what the tests need and the machine lacks (scripts/setup.sh
# --test), then runs the whole suite, `cargo test` (arguments are passed on, e.g. `--test run`).
# The tests start and stop real Cassandra nodes; whatever happens, none outlives this script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/setup.sh --test
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
cleanup() {
  pkill -KILL -f "$root/target/tmp/caplab-tests" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
cargo test "$@"
