# The preamble every bench script sources (from the project's root): CAPLAB, the release
# binary (built unless CAPLAB names one: `CAPLAB=path/to/caplab bench/X.sh` measures another
# build), and `fresh_node ARGS...`, which stops and wipes whatever node CAPLAB_HOME holds,
# starts one with `caplab node start ARGS...`, and stops it when the script exits, however it
# exits (scripts that restart nodes between sittings, or keep a hog to kill, set their own trap).
if [ -z "${CAPLAB:-}" ]; then
  cargo build --release -q
  CAPLAB=$PWD/target/release/caplab
fi
fresh_node() {
  "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true
  "$CAPLAB" node wipe --force >/dev/null 2>&1 || true
  "$CAPLAB" node start "$@" >/dev/null || return
  trap '"$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
}
