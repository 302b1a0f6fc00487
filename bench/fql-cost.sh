#!/bin/bash
# FQL's cost on the node: E1 inserts at a fixed rate, full query log off (A) and on (B), ABAB.
set -e
export CAPLAB_HOME=/tmp/fqlcost; rm -rf $CAPLAB_HOME
C=${CAPLAB:-target/release/caplab}
$C node start --address 127.0.96.1 --jmx-port 7960 --heap 2G 2>&1 | tail -1
CP=$(python3 -c "import json;print(json.load(open('$CAPLAB_HOME/nodes/node1/state.json'))['classpath'])")
JAVA=$(python3 -c "import json;print(json.load(open('$CAPLAB_HOME/nodes/node1/state.json'))['spec']['jdk']['java'])")
FL=$(python3 -c "import json;s=json.load(open('$CAPLAB_HOME/nodes/node1/state.json'));print(' '.join(a for a in s['command'] if a.startswith('--add')))")
echo '<configuration><root level="OFF"/></configuration>' > /tmp/quiet.xml
nt() { $JAVA $FL -Xmx256m -Dlogback.configurationFile=/tmp/quiet.xml -Duser.home=$CAPLAB_HOME -cp "$CP/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p 7960 "$@"; }
$C run --hosts 127.0.96.1:9042 --rate 2000 --duration 60s --warmup 0s -q --no-history --out $CAPLAB_HOME/warm > /dev/null
for i in 1 2 3; do
  for v in off on; do
    if [ $v = on ]; then rm -rf $CAPLAB_HOME/fql; mkdir -p $CAPLAB_HOME/fql; nt enablefullquerylog --path $CAPLAB_HOME/fql; fi
    $C run --hosts 127.0.96.1:9042 --rate 2000 --duration 30s --warmup 5s -q --no-history --out $CAPLAB_HOME/$v-$i > /dev/null
    if [ $v = on ]; then nt disablefullquerylog; du -sh $CAPLAB_HOME/fql | cut -f1; fi
  done
done
$C node stop --no-drain > /dev/null
# Server CPU per operation and p99, off and on, and each round's ratio.
python3 - "$CAPLAB_HOME" <<'PY'
import json, math, sys
home = sys.argv[1]
def figures(name):
    d = json.load(open(f"{home}/{name}/result.json"))
    ops = d["summary"]["total"]["ops"]
    return d["server"]["server_cpu_cores"] / (ops / 30.0) * 1e6, d["summary"]["total"]["response"]["p99_ms"]
ratios = []
for i in (1, 2, 3):
    (a, pa), (b, pb) = figures(f"off-{i}"), figures(f"on-{i}")
    ratios.append(b / a)
    print(f"round {i}: CPU/op {a:.1f} -> {b:.1f} us (x{b / a:.3f}), p99 {pa:.2f} -> {pb:.2f} ms")
print(f"geometric mean x{math.exp(sum(map(math.log, ratios)) / 3):.3f}")
PY
