#!/usr/bin/env bash
# What TLS adds to the per-second JMX reader (src/telemetry/CaplabJmx.java): its CPU to start
# and per second, plain JMX against JMX over TLS with a password and a client certificate, two
# rounds ABAB of 40 s each, on an idle fresh node whose JVM serves both (Cassandra's own JMX on
# loopback, and the JVM's agent over TLS started with jcmd, as tests/telemetry.rs does). Run from
# the project's root, alone:
#
#   CAPLAB_HOME=/tmp/jmx-tls-cost bench/jmx-tls-cost.sh
#
# bench/results/compaction.md ("Server facts over JMX, once a second") has its numbers.
set -euo pipefail
export CAPLAB_HOME=${CAPLAB_HOME:-/tmp/caplab-jmx-tls-cost}
. bench/fresh-node.sh
PORT=7355 TLS_PORT=7356
fresh_node --heap 1G --jmx-port "$PORT"
PID=$(pgrep -f "$CAPLAB_HOME/nodes/node1" | head -1)
JDK=$(dirname "$(readlink -f "$(command -v java)")")
D=$(mktemp -d) && chmod 700 "$D"
trap '"$CAPLAB" node stop --no-drain >/dev/null 2>&1 || true; rm -rf "$D"' EXIT
kt() { "$JDK/keytool" -noprompt "$@" >/dev/null 2>&1; }
for who in node:node.p12:trust.p12 caplab:client.p12:node-trust.p12; do
  IFS=: read -r alias store trust <<<"$who"
  kt -genkeypair -keyalg RSA -keysize 2048 -validity 1 -storetype PKCS12 -alias "$alias" \
    -dname "CN=$alias" -ext SAN=ip:127.0.0.1 -keystore "$D/$store" -storepass secret
  kt -exportcert -alias "$alias" -keystore "$D/$store" -storepass secret -file "$D/$alias.crt"
  kt -importcert -alias "$alias" -file "$D/$alias.crt" -keystore "$D/$trust" -storetype PKCS12 -storepass secret
done
printf 'caplab s3cret\n' >"$D/password"; printf 'caplab readonly\n' >"$D/access"
printf 'javax.net.ssl.keyStore=%s\njavax.net.ssl.keyStorePassword=secret\njavax.net.ssl.trustStore=%s\njavax.net.ssl.trustStorePassword=secret\n' \
  "$D/node.p12" "$D/node-trust.p12" >"$D/ssl.properties"
chmod 600 "$D"/password "$D"/access "$D"/ssl.properties
"$JDK/jcmd" "$PID" ManagementAgent.start jmxremote.port=$TLS_PORT jmxremote.rmi.port=$TLS_PORT \
  jmxremote.host=127.0.0.1 jmxremote.ssl=true jmxremote.registry.ssl=true jmxremote.ssl.need.client.auth=true \
  "jmxremote.ssl.config.file=$D/ssl.properties" jmxremote.authenticate=true \
  "jmxremote.password.file=$D/password" "jmxremote.access.file=$D/access" >/dev/null
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
for round in 1 2; do
  for mode in plain tls; do
    if [ $mode = plain ]; then input='\n\n\n' endpoint=127.0.0.1:$PORT
    else input="caplab\ns3cret\ntls\n$D/trust.p12\nsecret\n$D/client.p12\nsecret\n" endpoint=127.0.0.1:$TLS_PORT; fi
    (printf "$input"; sleep 50) | java -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      src/telemetry/CaplabJmx.java "$endpoint" >/dev/null &
    sleep 6
    R=$(pgrep -f "CaplabJmx.java $endpoint" | head -1)
    a=$(cpu "$R"); c=$(cpu "$PID"); sleep 40; b=$(cpu "$R"); d=$(cpu "$PID")
    echo "round $round $mode: reader $(echo "scale=2; $a/$TCK" | bc) CPU-s to start," \
      "$(echo "scale=4; ($b-$a)/$TCK/40" | bc) cores after; Cassandra $(echo "scale=4; ($d-$c)/$TCK/40" | bc) cores"
    wait
  done
done
