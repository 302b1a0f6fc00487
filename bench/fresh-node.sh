# Sourced by the bench scripts: CAPLAB (the release binary, built unless given), and
# `fresh_node ARGS...`, which stops and wipes whatever node CAPLAB_HOME holds, starts one with
# `caplab node start ARGS...`, and stops it when the script exits, however it exits.
if [ -z "${CAPLAB:-}" ]; then
  cargo build --release -q
  CAPLAB=$PWD/target/release/caplab
fi
fresh_node() {
  "$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true
  "$CAPLAB" node wipe --force >/dev/null 2>&1 || true
  "$CAPLAB" node start "$@" >/dev/null
  trap '"$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true' EXIT
}
