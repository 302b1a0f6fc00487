//! `caplab node` against real Cassandra nodes: provisioning, configuration, lifecycle,
//! clusters, and the errors users see (three nodes forming one cluster: tests/faults_cluster.rs,
//! on its shared cluster).

mod common;

use common::{Lab, count_rows, fails, jvm_lock, ok, result_json, runtime, stderr, stdout};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use std::net::TcpListener;

async fn connect(addr: &str) -> Session {
    SessionBuilder::new()
        .known_node(addr)
        .build()
        .await
        .expect("connect to the node")
}

async fn count(s: &Session, table: &str) -> i64 {
    let r = s
        .query_unpaged(format!("SELECT count(*) FROM {table}"), ())
        .await
        .unwrap();
    r.into_rows_result().unwrap().single_row::<(i64,)>().unwrap().0
}

fn state_file(lab: &Lab, node: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(lab.home.join("nodes").join(node).join("state.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// E1's server setup: trie memtable with 64 shards, off-heap objects, 8 flush writers, big format.
const E1_SETTINGS: &[&str] = &[
    "--set",
    "memtable.configurations.trie.class_name=TrieMemtable",
    "--set",
    "memtable.configurations.trie.parameters.shards=64",
    "--set",
    "memtable.configurations.default.inherits=trie",
    "--set",
    "memtable_allocation_type=offheap_objects",
    "--set",
    "memtable_flush_writers=8",
    "--set",
    "sstable.selected_format=big",
];

#[test]
fn single_node_lifecycle_keeps_data_and_applies_overrides() {
    let _jvm = jvm_lock();
    let lab = Lab::new("lifecycle");
    let started = ok(lab.start(E1_SETTINGS));
    let out = stdout(&started);
    assert!(
        out.contains(&lab.cql()) && out.contains("Cassandra 5.0.9") && out.contains("pid "),
        "{out}"
    );
    let first_pid = state_file(&lab, "node1")["pid"]
        .as_u64()
        .expect("running node has a pid");
    // The tests' timer slack (CAPLAB_TIMER_SLACK) reached the node and its state.
    let slack = std::fs::read_to_string(format!("/proc/{first_pid}/timerslack_ns")).unwrap();
    assert_eq!(slack.trim(), "1000000");
    assert_eq!(state_file(&lab, "node1")["spec"]["timer_slack_ns"], 1_000_000);
    // And the tests' JIT (CAPLAB_JIT=c1): C1 alone, in its state, its command line and its JVM.
    assert_eq!(state_file(&lab, "node1")["spec"]["jit"], "c1");
    let cmdline = std::fs::read_to_string(format!("/proc/{first_pid}/cmdline")).unwrap();
    assert!(cmdline.split('\0').any(|a| a == "-XX:TieredStopAtLevel=1"), "{cmdline}");
    assert!(out.contains("  GC g1  JIT c1  heap 1G"), "{out}");

    let rt = runtime();
    rt.block_on(async {
        let s = connect(&lab.cql()).await;
        s.query_unpaged(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            (),
        )
        .await
        .unwrap();
        s.query_unpaged("CREATE TABLE ks.t (pk int PRIMARY KEY, v text)", ())
            .await
            .unwrap();
        let insert = s.prepare("INSERT INTO ks.t (pk, v) VALUES (?, ?)").await.unwrap();
        for i in 0..100i32 {
            s.execute_unpaged(&insert, (i, format!("value {i}"))).await.unwrap();
        }
        assert_eq!(count(&s, "ks.t").await, 100);
        let r = s.query_unpaged("SELECT v FROM ks.t WHERE pk = 42", ()).await.unwrap();
        assert_eq!(
            r.into_rows_result().unwrap().single_row::<(String,)>().unwrap().0,
            "value 42"
        );
        // The --set overrides reached the server.
        for (name, want) in [
            ("memtable_flush_writers", "8"),
            ("memtable_allocation_type", "offheap_objects"),
        ] {
            let r = s
                .query_unpaged("SELECT value FROM system_views.settings WHERE name = ?", (name,))
                .await
                .unwrap();
            assert_eq!(
                r.into_rows_result().unwrap().single_row::<(String,)>().unwrap().0,
                want,
                "{name}"
            );
        }
    });

    // The same configuration again reuses the running node.
    let again = ok(lab.start(E1_SETTINGS));
    assert!(stderr(&again).contains("reusing"), "{}", stderr(&again));
    assert_eq!(state_file(&lab, "node1")["pid"].as_u64(), Some(first_pid));
    // A different configuration is refused while it runs, naming the difference.
    let refused = fails(lab.start(&["--heap", "2G"]));
    assert!(
        refused.contains("different configuration") && refused.contains("heap") && refused.contains("--restart"),
        "{refused}"
    );

    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    assert!(
        status.contains("node1") && status.contains("running") && status.contains(&first_pid.to_string()),
        "{status}"
    );

    // The node keeps its logs where the state file says.
    let st = state_file(&lab, "node1");
    for key in ["system_log", "gc_log"] {
        let path = st[key].as_str().unwrap();
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{key} {path} is empty or missing");
    }
    let gc = std::fs::read_to_string(st["gc_log"].as_str().unwrap()).unwrap();
    assert!(gc.contains("Using G1"), "the GC log names the collector");

    ok(lab.caplab(&["node", "stop"]));
    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    assert!(status.contains("stopped"), "{status}");
    assert!(
        !std::path::Path::new(&format!("/proc/{first_pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{first_pid}/cmdline"))
                .map(|c| !c.contains("CassandraDaemon"))
                .unwrap_or(true)
    );

    // Restarting keeps the data.
    ok(lab.start(E1_SETTINGS));
    rt.block_on(async {
        let s = connect(&lab.cql()).await;
        assert_eq!(count(&s, "ks.t").await, 100);
    });

    // Wipe refuses a running node, and with --force removes everything.
    assert!(fails(lab.caplab(&["node", "wipe"])).contains("--force"));
    ok(lab.caplab(&["node", "wipe", "--force"]));
    assert!(!lab.home.join("nodes/node1").exists());
}

#[test]
fn bad_override_fails_with_cassandras_reason_and_log_path() {
    let _jvm = jvm_lock();
    let lab = Lab::new("bad-override");
    let err = fails(lab.start(&["--set", "no_such_setting=3"]));
    assert!(err.contains("exited during startup"), "{err}");
    assert!(err.contains("no_such_setting"), "names the bad key: {err}");
    assert!(
        err.contains(&lab.home.join("nodes/node1/logs/system.log").display().to_string()),
        "gives the log path: {err}"
    );
    assert!(stdout(&ok(lab.caplab(&["node", "status"]))).contains("stopped"));
}

#[test]
fn a_taken_port_is_refused_before_starting_java() {
    let _jvm = jvm_lock();
    let lab = Lab::new("port-in-use");
    let _holder = TcpListener::bind(lab.cql()).unwrap();
    let err = fails(lab.start(&[]));
    assert!(
        err.contains(&format!("{} is in use", lab.cql())) && err.contains("--address"),
        "{err}"
    );
}

#[test]
fn cassandra_6_0_alpha2_starts_on_the_machines_jdk() {
    let _jvm = jvm_lock();
    let lab = Lab::new("six-oh");
    ok(lab.start(&["--version", "6.0-alpha2"]));
    runtime().block_on(async {
        let s = connect(&lab.cql()).await;
        let r = s
            .query_unpaged("SELECT release_version FROM system.local", ())
            .await
            .unwrap();
        let v = r.into_rows_result().unwrap().single_row::<(String,)>().unwrap().0;
        assert!(v.starts_with("6.0"), "release_version {v}");
    });
}

/// `caplab run` without --hosts names its local node: a running node of another configuration
/// is refused, `--restart` restarts it with the setting (on its own address and heap), `--wipe`
/// starts a fresh one. This is what `caplab bisect -- run --version {} --wipe` relies on.
#[test]
fn a_run_names_its_local_node_and_starts_it_anew_when_asked() {
    let _jvm = jvm_lock();
    let lab = Lab::new("run-local-node");
    ok(lab.start(&[]));
    let first_pid = state_file(&lab, "node1")["pid"].as_u64().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let n = if extra.contains(&"--wipe") { "1000" } else { "2000" };
        let mut args = vec!["run", "-q", "--no-history", "--warmup", "0s", "-n", n, "--out"];
        let dir = lab.dir(out);
        args.push(&dir);
        args.extend_from_slice(extra);
        lab.caplab(&args)
    };
    let asked = ["--set", "concurrent_writes=48"];

    let refused = fails(run("refused", &asked));
    assert!(
        refused.contains("different configuration")
            && refused.contains("concurrent_writes")
            && refused.contains("--wipe"),
        "{refused}"
    );
    assert_eq!(
        state_file(&lab, "node1")["pid"].as_u64(),
        Some(first_pid),
        "left running as it was"
    );

    let restarted = ok(run("restarted", &[&asked[..], &["--restart"]].concat()));
    let doc = result_json(&lab.home.join("restarted"));
    let spec = &doc["environment"]["local_nodes"][0]["spec"];
    assert!(
        spec["overrides"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "concurrent_writes=48"),
        "{spec}"
    );
    assert_eq!(spec["address"], lab.address.as_str(), "the node's own address is kept");
    let second_pid = state_file(&lab, "node1")["pid"].as_u64().unwrap();
    assert_ne!(second_pid, first_pid, "{}", stderr(&restarted));
    runtime().block_on(async {
        let s = connect(&lab.cql()).await;
        let r = s
            .query_unpaged(
                "SELECT value FROM system_views.settings WHERE name = 'concurrent_writes'",
                (),
            )
            .await
            .unwrap();
        assert_eq!(r.into_rows_result().unwrap().single_row::<(String,)>().unwrap().0, "48");
    });
    assert_eq!(count_rows(&lab.cql(), "caplab.e1_insert"), 2000);

    // The same configuration again: the running node is used as it is.
    ok(run("again", &asked));
    assert_eq!(state_file(&lab, "node1")["pid"].as_u64(), Some(second_pid));

    // --wipe: a new node with empty data (the table holds this run's 1,000 rows, not the 2,000
    // written before under the same keys).
    let wiped = ok(run("wiped", &[&asked[..], &["--wipe"]].concat()));
    assert!(
        stderr(&wiped).contains("--wipe: removing the local nodes"),
        "{}",
        stderr(&wiped)
    );
    assert_ne!(state_file(&lab, "node1")["pid"].as_u64(), Some(second_pid));
    assert_eq!(count_rows(&lab.cql(), "caplab.e1_insert"), 1000);
    ok(lab.caplab(&["node", "wipe", "--force"]));
}

/// A user's own build runs as any release does: a Cassandra source tree as `ant jar` leaves it
/// (the main jar under build/, the libraries under lib/; here 5.0.9's jars laid out so) is
/// gathered into one folder and run by `caplab run --jars TREE --wipe`, the release read from
/// the main jar's name. A folder without Cassandra is refused, naming what to give.
#[test]
fn a_node_runs_from_jars_a_user_built() {
    let _jvm = jvm_lock();
    let lab = Lab::new("own-jars");
    ok(lab.start(&[]));
    let lib = std::path::PathBuf::from(state_file(&lab, "node1")["classpath"].as_str().unwrap());
    let tree = lab.home.join("cassandra-src");
    for d in ["build", "lib"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    for jar in std::fs::read_dir(&lib).unwrap().map(|e| e.unwrap().path()) {
        let name = jar.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jar") {
            continue;
        }
        let to = match name.starts_with("cassandra-all-") {
            true => tree.join("build/apache-cassandra-5.0.9-SNAPSHOT.jar"),
            false => tree.join("lib").join(&name),
        };
        std::os::unix::fs::symlink(&jar, to).unwrap();
    }
    let out = lab.dir("own");
    let tree_arg = tree.to_str().unwrap();
    let args = [
        "run",
        "-q",
        "--no-history",
        "--warmup",
        "0s",
        "-n",
        "2000",
        "--jars",
        tree_arg,
        "--wipe",
        "--out",
        &out,
    ];
    let ran = ok(lab.caplab(&args));
    let doc = result_json(std::path::Path::new(&out));
    let env = &doc["environment"];
    assert_eq!(env["cassandra_release_version"], "5.0.9", "{}", stderr(&ran));
    let spec = &env["local_nodes"][0]["spec"];
    assert_eq!(
        spec["version"], "5.0.9-SNAPSHOT",
        "the release the main jar's name says"
    );
    assert_eq!(spec["jars"], std::fs::canonicalize(&tree).unwrap().to_str().unwrap());
    let classpath = state_file(&lab, "node1")["classpath"].as_str().unwrap().to_string();
    assert!(
        classpath.contains("/cassandra/built-"),
        "gathered under the cache: {classpath}"
    );
    assert_eq!(count_rows(&lab.cql(), "caplab.e1_insert"), 2000);

    let refused = fails(lab.caplab(&["node", "start", "--jars", "/no/such/build", "--address", &lab.address]));
    assert!(
        refused.contains("no Cassandra jars there") && refused.contains("ant jar"),
        "{refused}"
    );
    ok(lab.caplab(&["node", "wipe", "--force"]));
}
