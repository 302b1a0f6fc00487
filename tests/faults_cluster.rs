//! Faults on a three-node cluster (RF 3), against real nodes: the three form one cluster that
//! takes QUORUM writes on every replica; two of three nodes stopped by hand are reported as
//! Unavailable at QUORUM; `--fault` schedules (a pause at QUORUM, a kill and restart at ALL and
//! in a capacity search, Ctrl-C in the middle of a fault, a delay through the proxy) lose
//! nothing acknowledged, and bad schedules are refused. Every scenario is a
//! test of its own on one shared cluster, which each test leaves with all three nodes up.
//! (Split from tests/faults.rs, whose tests share one node, so the two run at once.)
//!
//! Runs in the `cluster` test group (.config/nextest.toml): three nodes, never beside another
//! file's cluster.

mod common;

use common::{Args, Lab, Shared, fails, jvm_lock, ok, result_json, signal, stderr, stdout, wait_for_seconds};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// A node's process state letter from /proc (`T` stopped by a signal), or None when it has no
/// process.
fn proc_state(lab: &Lab, node: &str) -> Option<char> {
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lab.home.join("nodes").join(node).join("state.json")).unwrap())
            .unwrap();
    let pid = state["pid"].as_u64()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim().chars().next()
}

static THREE: Shared<()> = Shared::new();

/// 3 nodes and a keyspace rf3 with RF 3, shared by the tests of faults on schedule (a pause at
/// QUORUM, a kill and restart at ALL, Ctrl-C in the middle of a fault, bad schedules refused, a
/// delay through the proxy) and of two nodes stopped by hand; each leaves all three up.
fn three() -> &'static Lab {
    &THREE
        .get("faults-three", |lab| {
            ok(lab.start(&["--nodes", "3"]));
            ok(lab.run(
                "create",
                &["--replication-factor", "3", "--keyspace", "rf3", "-n", "100"],
            ));
        })
        .0
}

/// The shared cluster is one: its nodes listed by `node status`, each seen by node1 and the
/// driver, and QUORUM writes in a keyspace of RF 3 on every replica (on the file's cluster,
/// rather than three nodes started for this alone, which took minutes).
#[test]
fn three_nodes_form_one_cluster_that_takes_quorum_writes() {
    use scylla::client::session_builder::SessionBuilder;
    use scylla::statement::{Consistency, Statement};
    let _jvm = jvm_lock();
    let lab = three();
    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    for i in 1..=3 {
        assert!(status.contains(&lab.node_address(i)), "{status}");
    }
    common::runtime().block_on(async {
        let s = SessionBuilder::new().known_node(lab.cql()).build().await.unwrap();
        let r = s.query_unpaged("SELECT peer FROM system.peers_v2", ()).await.unwrap();
        assert_eq!(r.into_rows_result().unwrap().rows_num(), 2, "node1 sees two peers");
        assert_eq!(
            s.get_cluster_state().get_nodes_info().len(),
            3,
            "the driver sees three nodes"
        );
        for ddl in [
            "CREATE KEYSPACE IF NOT EXISTS quorum3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
            "DROP TABLE IF EXISTS quorum3.t",
            "CREATE TABLE quorum3.t (pk int PRIMARY KEY, v int)",
        ] {
            s.query_unpaged(ddl, ()).await.unwrap();
        }
        for i in 0..50i32 {
            let mut st = Statement::new("INSERT INTO quorum3.t (pk, v) VALUES (?, ?)");
            st.set_consistency(Consistency::Quorum);
            s.query_unpaged(st, (i, i)).await.unwrap();
        }
        let mut all = Statement::new("SELECT count(*) FROM quorum3.t");
        all.set_consistency(Consistency::All);
        let r = s.query_unpaged(all, ()).await.unwrap();
        let n = r.into_rows_result().unwrap().single_row::<(i64,)>().unwrap().0;
        assert_eq!(n, 50, "every replica has every row");
    });
}

/// Two of three nodes stopped by hand: QUORUM reports Unavailable, not timeouts or
/// connection errors.
#[test]
fn unavailable_at_quorum() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    ok(lab.caplab(&["node", "stop", "node2", "node3", "--no-drain", "--timeout", "20"]));
    let _whole = StartAgain(lab);
    // Until node1's failure detector marks them down, writes time out instead: asks node1
    // until it answers a QUORUM write with Unavailable.
    let began = std::time::Instant::now();
    let mut last = quorum_write_error(hosts);
    while !last.as_deref().is_some_and(|e| e.contains("Unavailable")) {
        assert!(
            began.elapsed() < Duration::from_secs(90),
            "node1 did not answer a QUORUM write with Unavailable within 90 s; its last answer: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
        last = quorum_write_error(hosts);
    }
    let o = lab.run(
        "quorum",
        &[
            "--keyspace",
            "rf3",
            "--replication-factor",
            "3",
            "--consistency",
            "quorum",
            "--rate",
            "200",
            "--duration",
            "5s",
            "--timeout",
            "3s",
        ],
    );
    let doc = result_json(&lab.home.join("quorum"));
    let errors = &doc["summary"]["total"]["errors"];
    assert_eq!(doc["retries"], 0, "no retries by default");
    assert!(
        errors["connection"].is_null(),
        "not connection errors: {errors} ({})",
        stderr(&o)
    );
    assert!(
        errors["unavailable"].as_u64().unwrap_or(0) >= 900,
        "the coordinator said Unavailable: {errors}"
    );
}

/// Starts the stopped nodes again when dropped (`node start` starts only those), so the other
/// tests find all three up even when this one fails.
struct StartAgain<'a>(&'a Lab);

impl Drop for StartAgain<'_> {
    fn drop(&mut self) {
        let o = self.0.start(&["--nodes", "3"]);
        assert!(o.status.success() || std::thread::panicking(), "{}", stderr(&o));
    }
}

/// A run on the 3 nodes, RF 3, in keyspace rf3 unless `extra` names another (a fresh one, for
/// reading back exactly this run's writes).
fn fault_run(lab: &Lab, hosts: &str, name: &str, extra: &[&str]) -> Output {
    // A run that names its keyspace gets one of its own per process, so a retry (a new process)
    // starts from empty tables, as the first try did, without a TRUNCATE before it.
    let mut extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    let keyspace = match extra.iter().position(|a| a == "--keyspace") {
        Some(i) => {
            extra[i + 1] = format!("{}_{}", extra[i + 1], std::process::id());
            [].as_slice()
        }
        None => ["--keyspace", "rf3"].as_slice(),
    };
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let base = [
        "run",
        "--hosts",
        hosts,
        "--replication-factor",
        "3",
        "--warmup",
        "10s",
        "--timeout",
        "2s",
        "-q",
    ];
    // A retry starts from an empty results directory, as the first try did.
    let out = lab.home.join(name);
    let _ = std::fs::remove_dir_all(&out);
    let o = out.to_str().unwrap().to_string();
    lab.caplab(&[&base[..], keyspace, &["--out", o.as_str()], &extra].concat())
}

/// The error of one QUORUM write to rf3 coordinated by the node at `hosts` (None: it succeeded).
fn quorum_write_error(hosts: &str) -> Option<String> {
    use scylla::client::session_builder::SessionBuilder;
    use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
    use scylla::statement::{Consistency, Statement};
    common::runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.ok()?;
        let mut st = Statement::new("INSERT INTO rf3.e1_insert (pk, ck, v1) VALUES ('probe', 'probe', 'x')");
        st.set_consistency(Consistency::Quorum);
        // Sent to node1 itself (the others are stopped): what comes back is node1's answer.
        st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::NodeAddress(hosts.parse().ok()?),
            None,
        )));
        st.set_request_timeout(Some(Duration::from_secs(3)));
        s.query_unpaged(st, ()).await.err().map(|e| format!("{e:?}"))
    })
}

#[test]
fn refused_schedules() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    let run = |name: &str, extra: &[&str]| fault_run(lab, hosts, name, extra);
    // Bad schedules are refused before anything runs, naming the fix.
    for (fault, why) in [
        ("pause node9 at 5s for 3s", "no node 'node9'"),
        ("pause node2 at 18s for 5s", "ends after the measured window"),
    ] {
        let e = fails(run("refused", &["--duration", "20s", "--fault", fault]));
        assert!(e.contains(why), "{fault}: {e}");
    }
    let e = fails(run(
        "refused",
        &[
            "--duration",
            "20s",
            "--fault",
            "pause node2 at 5s for 5s",
            "--fault",
            "kill node2 at 8s",
        ],
    ));
    assert!(e.contains("overlap on node2"), "{e}");
    // A cluster caplab does not run here (another home): process faults are refused.
    let elsewhere = lab.home.join("elsewhere");
    let o = lab.caplab(&[
        "--home",
        elsewhere.to_str().unwrap(),
        "run",
        "--hosts",
        hosts,
        "--duration",
        "20s",
        "--fault",
        "pause node2 at 5s for 3s",
    ]);
    assert!(fails(o).contains("only on nodes caplab runs"));
    assert!(!lab.home.join("refused/result.json").exists());
}

#[test]
fn pause_at_quorum() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    let run = |name: &str, extra: &[&str]| fault_run(lab, hosts, name, extra);
    // A pause at QUORUM: operations coordinated by the paused node wait or time out; the
    // client sees it at once, and recovers after the node resumes. 300 op/s: three nodes on
    // these 2 shared cores are saturated at 1,500 op/s before any fault (median 480 ms).
    // Recovery is 5 in-band seconds in a row, and single seconds leave the band (p99 over the
    // baseline's highest) now and then, so recovery can take several times 5 s
    // (bench/results/test-margins.md, faults-pause-recovery). The window leaves 32 s after the
    // pause.
    let o = ok(run(
        "pause",
        &[
            "--consistency",
            "quorum",
            "--rate",
            "300",
            "--duration",
            "45s",
            "--fault",
            "pause node2 at 8s for 5s",
            "--keyspace",
            "rf3_pause",
            "--validate",
        ],
    ));
    let doc = result_json(&lab.home.join("pause"));
    // Reached through node1 alone, the cluster is three nodes, in its history series too.
    assert_eq!(doc["environment"]["cluster_nodes"], 3, "{}", doc["environment"]);
    let series = common::history_json(lab, &[]);
    let named = |s: &serde_json::Value| s["name"].as_str().unwrap_or_default().to_string();
    let paused = series
        .as_array()
        .unwrap()
        .iter()
        .map(named)
        .find(|n| n.contains("at 300 op/s"));
    assert!(paused.as_ref().is_some_and(|n| n.contains(", 3 nodes, ")), "{series}");
    // The negative control of --validate: a pause at QUORUM loses no acknowledged write, read
    // back at QUORUM once node2 is back.
    lost_nothing(&doc, "Quorum");
    let f = &doc["faults"][0];
    let secs = |k: &str| f[k].as_f64();
    assert!((7.5..9.5).contains(&secs("start_s").unwrap()), "{f}");
    assert!((12.5..14.5).contains(&secs("end_s").unwrap()), "{f}");
    assert!(secs("detect_s").unwrap() <= 2.0, "seen within 2 s: {f}");
    // Five in-band seconds in a row began within the 32 s after the pause.
    assert!(secs("recover_s").is_some(), "recovered within the window: {f}");
    // Detected means some second while it was paused had operations delayed past the band
    // (p99 over twice the baseline's) or failing.
    assert!(f["band"]["baseline_seconds"].as_u64().unwrap() >= 5, "{f}");
    assert!(
        stdout(&o).contains("Fault 'pause node2 at 8s for 5s'"),
        "{}",
        stdout(&o)
    );
    // What waited on node2 while it was stopped is what is over p99, and is named for it.
    assert_top_cause(&doc, "fault", "pause node2", 0.8);
    assert_ne!(proc_state(lab, "node2"), Some('T'), "node2 is not left stopped");
    assert!(proc_state(lab, "node2").is_some());
    let page = common::browse(&lab.home.join("pause/report.html"));
    page.assert_clean();
    assert_eq!(page.check["faults"].as_u64(), Some(1), "{}", page.check);
    // The slowest operations over p99 are marked on the latency timeline, as result.json lists them.
    let listed = doc["slow"]["slowest"].as_array().unwrap().len() as u64;
    assert!(
        listed > 0 && page.check["slow"].as_u64() == Some(listed),
        "{}",
        page.check
    );
}

/// Every acknowledged write of the run in `doc` was read back as written at `consistency`;
/// those not acknowledged are counted apart.
fn lost_nothing(doc: &serde_json::Value, consistency: &str) {
    let v = &doc["validation"];
    assert_eq!(v["consistency"], consistency, "{v}");
    assert!(v["operations"].as_u64().unwrap() > 1000, "{v}");
    assert_eq!((v["missing"].as_u64(), v["wrong"].as_u64()), (Some(0), Some(0)), "{v}");
    assert_eq!(v["found"], v["rows"], "{v}");
    assert_eq!(v["unreadable"], serde_json::json!({}), "{v}");
    assert_eq!(v["table_had_rows"], false, "a fresh keyspace: {v}");
}

#[test]
fn kill_at_all() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    let run = |name: &str, extra: &[&str]| fault_run(lab, hosts, name, extra);
    // A kill at ALL, restarted after 5 s: until node3 is back every write fails, as unavailable
    // or a timeout, never as anything else (nothing succeeds for longer than the default 10 s
    // --give-up-after, so it is raised). A restart takes about 15 s alone and four times that
    // beside other files (bench/results/test-margins.md, faults-kill-at-all): the window lasts
    // 90 s, 80 s after the kill's end.
    ok(run(
        "kill",
        &[
            "--consistency",
            "all",
            "--give-up-after",
            "2m",
            "--rate",
            "200",
            "--duration",
            "90s",
            "--fault",
            "kill node3 at 5s for 5s",
            "--keyspace",
            "rf3_kill",
            "--validate",
        ],
    ));
    let doc = result_json(&lab.home.join("kill"));
    // A kill -9 at ALL, and restart: every write acknowledged by all three is read back.
    lost_nothing(&doc, "All");
    let f = &doc["faults"][0];
    assert!(f["back_s"].as_f64().is_some(), "node3 came back within the window: {f}");
    let errors = f["during"]["errors"].as_object().unwrap();
    assert!(!errors.is_empty(), "{f}");
    let timeouts_or_unavailable = [
        "unavailable",
        "server_timeout",
        "client_timeout",
        "not_sent",
        "connection",
    ];
    assert!(
        errors.keys().all(|k| timeouts_or_unavailable.contains(&k.as_str())),
        "{f}"
    );
    assert!(f["during"]["availability"].as_f64().unwrap() < 0.5, "{f}");
    assert!(doc["availability"].as_f64().unwrap() < 1.0);
    assert!(proc_state(lab, "node3").is_some_and(|s| s != 'T'), "node3 runs again");
}

#[test]
fn kill_at_one_in_a_capacity_search() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    // A capacity search whose every step carries a kill: at ONE, with the token-aware client,
    // every row has two more replicas and the driver sends to them, so only what was in flight
    // on node3 when it died fails.
    let out = lab.out("capacity-kill");
    let o = lab.caplab(&[
        "capacity",
        "--hosts",
        hosts,
        "--keyspace",
        "rf3",
        "--replication-factor",
        "3",
        "--consistency",
        "one",
        "--rates",
        "300",
        "--measure",
        "20s",
        "--warmup",
        "5s",
        "--timeout",
        "2s",
        "--sla",
        "p99<500ms/5s",
        "--fault",
        "kill node3 at 5s for 5s",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(report["faults"][0], "kill node3 at 5s for 5s", "{report}");
    let step = &report["steps"][0];
    // Over the whole step, what the kill costs at ONE is the coordinator's share for about a
    // second; beside other test files three nodes also time out for a while: above 0.9
    // (bench/results/test-margins.md, faults-cluster-availability).
    let availability = step["availability"].as_f64().expect("the step's availability");
    assert!(availability > 0.9, "{step}");
    assert!(stdout(&o).contains("availability"), "{}", stdout(&o));
    let run = result_json(&out.join(step["dir"].as_str().unwrap()));
    let f = &run["faults"][0];
    eprintln!("kill at ONE in a capacity step: {f}");
    // The other replicas answer while node3 is down; what fails is what the driver still sent
    // to node3 as coordinator until it saw it gone: with the ring evenly shared a third of the
    // load, for one or two seconds of the 5 (bench/results/test-margins.md, faults-kill-at-quorum).
    // What the mechanism promises is the other two coordinators' share: above 0.6, every failure
    // a connection error or a request to node3 that timed out.
    let during = f["during"]["availability"].as_f64().unwrap();
    assert!(during > 0.6, "the other replicas answer while node3 is down: {f}");
    let errors = &f["during"]["errors"];
    let (connection, timeouts) = (
        errors["connection"].as_u64().unwrap_or(0),
        errors["client_timeout"].as_u64().unwrap_or(0),
    );
    assert_eq!(f["during"]["failed"].as_u64(), Some(connection + timeouts), "{f}");
    assert!(f["start_s"].as_f64().is_some_and(|s| (4.5..6.5).contains(&s)), "{f}");
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains("<th>availability</th>"),
        "the capacity page has the availability column"
    );
    assert!(proc_state(lab, "node3").is_some_and(|s| s != 'T'), "node3 runs again");
}

#[test]
fn interrupted_in_a_fault() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    // Ctrl-C in the middle of a pause: the run stops and the node is resumed.
    let mut child = lab.spawn(&Args::new(&[
        "run",
        "--hosts",
        hosts,
        "--keyspace",
        "rf3",
        "--replication-factor",
        "3",
        "--warmup",
        "1s",
        "--rate",
        "300",
        "--duration",
        "30s",
        "--fault",
        "pause node2 at 2s for 20s",
        "-q",
        "--out",
        &lab.dir("interrupted"),
    ]));
    wait_for_seconds(&lab.home.join("interrupted"), 4);
    assert_eq!(proc_state(lab, "node2"), Some('T'), "paused by now");
    signal(&child, "INT");
    child.wait().unwrap();
    assert_ne!(proc_state(lab, "node2"), Some('T'), "resumed on Ctrl-C");
    let doc = result_json(&lab.home.join("interrupted"));
    assert_eq!(doc["status"], "interrupted");
    assert!(doc["faults"][0]["start_s"].as_f64().is_some(), "{}", doc["faults"]);
}

#[test]
fn delay_through_the_proxy() {
    let _jvm = jvm_lock();
    let lab = three();
    let hosts = &lab.cql();
    let run = |name: &str, extra: &[&str]| fault_run(lab, hosts, name, extra);
    // 200 ms on node2's responses, through a proxy, at ONE: the operations node2 coordinates
    // (a third: every node is a replica of every row) take 200 ms more, and the others do not.
    // (50 ms was hidden on a slow day, when a fifth of operations took that long before any
    // delay: bench/results/test-margins.md, faults-delay-size.)
    ok(run(
        "delay",
        &[
            "--consistency",
            "one",
            "--rate",
            "300",
            "--duration",
            "20s",
            "--fault",
            "delay node2 at 5s for 10s by 200ms",
            "--trace-slow",
            "10%,150ms",
        ],
    ));
    let doc = result_json(&lab.home.join("delay"));
    let f = &doc["faults"][0];
    let warm = doc["warmup"]["length_s"].as_f64().unwrap();
    let (from, to) = (f["start_s"].as_f64().unwrap(), f["end_s"].as_f64().unwrap());
    let log = lab.home.join("delay/latency.hlog");
    let during = service_ms(&log, warm + from + 1.0, warm + to - 1.0);
    let mut before = service_ms(&log, warm, warm + from - 1.0);
    let share = |v: &[f64], p: &dyn Fn(f64) -> bool| v.iter().filter(|x| p(**x)).count() as f64 / v.len() as f64;
    let (slow, slow_before) = (share(&during, &|x| x >= 195.0), share(&before, &|x| x >= 195.0));
    // The others are as fast as operations were before the delay: under what 9 in 10 took then
    // (20 ms at least, 150 at most: well under the delay), about 0.9 of two thirds are (0.6) if
    // they are not delayed, none if they are. Not a fixed 20 ms: beside another file's three
    // nodes undelayed operations took more than that (bench/results/test-margins.md,
    // faults-delay-share).
    before.sort_by(f64::total_cmp);
    let typical = before[before.len() * 9 / 10].clamp(20.0, 150.0);
    let fast = share(&during, &|x| x < typical);
    eprintln!(
        "delay through the proxy: {slow:.3} of operations at 195 ms or more during it ({slow_before:.3} before), \
         {fast:.3} under {typical:.1} ms (9 in 10 before it)"
    );
    assert!(
        (0.15..0.6).contains(&(slow - slow_before)),
        "a third more delayed by 200 ms: {slow:.3} during, {slow_before:.3} before"
    );
    assert!(fast > 0.35, "the others are not: {fast:.3} under {typical:.1} ms");
    // The operations over p99 are named for the delay: they are the delayed ones, and a GC
    // pause would have to cover 100 ms of one to take its place. Beside the suite's other files
    // the loaded machine's own stalls over 200 ms take some of the 60 or so places over p99
    // (91.5 % the delay's on the Intel Xeon kind, 76.7 % on the AMD EPYC kind:
    // bench/results/test-margins.md, faults-delay-share), so 70 %, where a delay named for none
    // of them would read about 0.
    assert_top_cause(&doc, "fault", "delay node2", 0.7);
    delay_is_outside_the_server_in_traces(&doc, &lab.node_address(2));
}

/// The traces of the delayed operations (a tenth of operations sent traced, kept over 150 ms:
/// about 100 of the 1,000 delayed) say where the 200 ms went: outside the server, whose
/// session on node2 was short, the answer held by the proxy; and their cause is the delay. At
/// least 80 % of the traces read, of 10 or more (the 20 slowest are read).
fn delay_is_outside_the_server_in_traces(doc: &serde_json::Value, node2: &str) {
    let tr = &doc["traces"];
    let read: Vec<&serde_json::Value> = tr["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["told"] != "unread")
        .collect();
    let outside = read
        .iter()
        .filter(|o| o["told"] == "outside" && o["coordinator"] == node2)
        .filter(|o| o["cause"].as_str().unwrap().contains("delay node2"))
        .count();
    eprintln!(
        "traces: {outside} of {} read told outside the server, coordinated by node2, named for the delay",
        read.len()
    );
    assert!(read.len() >= 10, "{tr:#}");
    assert!(outside as f64 >= 0.8 * read.len() as f64, "{tr:#}");
}

/// At least `least` of the run's operations over p99 were named for `cause` (issue 75's proof
/// of a planted cause asks 80 %), and the slowest listed include its operations, each in words
/// that name `detail`. Not that the very slowest is its: a stall before the fault on a loaded
/// machine can outlast a 200 ms delay (bench/results/test-margins.md, faults-slowest-listed).
fn assert_top_cause(doc: &serde_json::Value, cause: &str, detail: &str, least: f64) {
    let slow = &doc["slow"];
    let share = slow["by_cause"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == cause)
        .map_or(0.0, |c| c["share"].as_f64().unwrap());
    eprintln!("{cause}: {share:.3} of the operations over p99 ({})", slow["by_cause"]);
    assert!(share >= least, "{slow:#}");
    let listed = slow["slowest"].as_array().unwrap();
    let named: Vec<&serde_json::Value> = listed.iter().filter(|o| o["cause"] == cause).collect();
    assert!(!named.is_empty(), "{slow:#}");
    assert!(
        named.iter().all(|o| o["detail"].as_str().unwrap().contains(detail)),
        "{slow:#}"
    );
}

/// Every operation's service time (ms, as recorded) in the intervals of `log` that start in
/// `[from, to)` seconds after its start.
fn service_ms(log: &Path, from: f64, to: f64) -> Vec<f64> {
    use base64::Engine;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::Deserializer;
    let bytes = std::fs::read(log).unwrap();
    let mut out = Vec::new();
    for e in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(h) = e.unwrap() else { continue };
        let at = h.start_timestamp().as_secs_f64();
        if h.tag().map(|t| t.as_str()) != Some("insert.service") || at < from || at >= to {
            continue;
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(h.encoded_histogram())
            .unwrap();
        let h: Histogram<u64> = Deserializer::new().deserialize(&mut raw.as_slice()).unwrap();
        for v in h.iter_recorded() {
            out.extend(std::iter::repeat_n(
                v.value_iterated_to() as f64 / 1e6,
                v.count_at_value() as usize,
            ));
        }
    }
    assert!(out.len() > 500, "{} operations in {from}..{to} s", out.len());
    out
}
