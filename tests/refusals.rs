//! Bad input is refused before anything runs, naming the fix: wrong flags, unreachable hosts,
//! malformed profiles and experiment files, versions Maven Central does not have, profiling a
//! cluster caplab does not run. None of these tests starts a Cassandra node, so they are part
//! of the fast loop (`scripts/test.sh --fast`).

mod common;

use common::{Lab, fails, stderr};
use std::time::{Duration, Instant};

// (capacity)
#[test]
fn capacity_mistakes_are_named_before_anything_runs() {
    let lab = Lab::new("capacity-flags");
    let nowhere = lab.nowhere();
    let err = fails(lab.caplab(&["capacity", "--hosts", &nowhere]));
    assert!(err.contains("add --sla"), "{err}");
    let err = fails(lab.caplab(&[
        "capacity",
        "--hosts",
        &nowhere,
        "--sla",
        "p99<10ms/10s",
        "--measure",
        "5s",
    ]));
    assert!(err.contains("shorter than the SLA's 10s window"), "{err}");
    let err = fails(lab.caplab(&["capacity", "--hosts", &nowhere, "--sla", "p99<10ms/2s", "--fresh-node"]));
    assert!(err.contains("cannot restart --hosts"), "{err}");
    let sla = ["capacity", "--hosts", &nowhere, "--sla", "p99<10ms/2s"];
    let err = fails(lab.caplab(&[&sla[..], &["--curve", "--no-probe"]].concat()));
    assert!(err.contains("give --rates, or drop --no-probe"), "{err}");
    let o = lab.caplab(&[&sla[..], &["--curve", "1"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 is not in 2..=100"), "{}", stderr(&o));
    let err = fails(lab.caplab(&["run", "--hosts", &nowhere, "--sla", "p99 10ms"]));
    assert!(err.contains("p99.9<100ms/10s"), "{err}");
    let o = lab.caplab(&[
        "capacity",
        "--hosts",
        &nowhere,
        "--sla",
        "p99<10ms/2s",
        "--rates",
        "fast",
    ]);
    assert!(stderr(&o).contains("from:to:step"), "{}", stderr(&o));
}

// (run)
#[test]
fn unreachable_hosts_fail_within_seconds() {
    let lab = Lab::new("run-unreachable");
    let hosts = lab.cql();
    let begin = Instant::now();
    let err = fails(lab.caplab(&[
        "run",
        "--warmup",
        "0s",
        "--hosts",
        &hosts,
        "--duration",
        "5s",
        "--out",
        lab.home.join("r").to_str().unwrap(),
    ]));
    // The connect timeout is 3 s: a client that waited for the request timeout (12 s) or for
    // ever would fail this.
    assert!(begin.elapsed() < Duration::from_secs(11), "took {:?}", begin.elapsed());
    assert!(
        err.contains(&format!("cannot connect to {hosts}")) && err.contains("caplab node start"),
        "{err}"
    );
}

// (run)
#[test]
fn bad_run_flags_are_refused() {
    let lab = Lab::new("run-flags");
    let bad = |args: &[&str]| {
        let o = lab.caplab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        stderr(&o)
    };
    assert!(bad(&["run", "--rate", "fast"]).contains("flat out"));
    assert!(bad(&["run", "--warmup", "a while"]).contains("write auto (until the run settles)"));
    assert!(bad(&["run", "--duration", "10s", "-n", "5"]).contains("cannot be used with"));
    // The local node's options choose the node caplab starts: not a cluster given by --hosts.
    for flag in [
        &["--version", "5.0.4"][..],
        &["--wipe"],
        &["--set", "concurrent_writes=8"],
        &["--jars", "/x"],
    ] {
        let said = bad(&[&["run", "--hosts", "x"][..], flag].concat());
        assert!(
            said.contains("cannot be used with") && said.contains("--hosts"),
            "{said}"
        );
    }
    assert!(fails(lab.caplab(&["run", "--hosts", "x", "--consistency", "most"])).contains("local_quorum"));
    assert!(fails(lab.caplab(&["run", "--hosts", "x", "--batch-size", "0"])).contains("--batch-size"));
    // A maximum only bounds an automatic warm-up.
    let max = fails(lab.caplab(&["run", "--hosts", "x", "--warmup", "30s", "--warmup-max", "2m"]));
    assert!(max.contains("give --warmup auto, or drop --warmup-max"), "{max}");
    // Live metrics: a malformed address or URL, https, and a port in use, before any node starts.
    assert!(bad(&["run", "--metrics-listen", "9500"]).contains("e.g. --metrics-listen 0.0.0.0:9500"));
    assert!(bad(&["run", "--metrics-push", "prometheus:9090"]).contains("e.g. --metrics-push http://"));
    assert!(bad(&["run", "--metrics-push", "https://p:9090/api/v1/write"]).contains("scrape --metrics-listen"));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let err = fails(lab.caplab(&["run", "--metrics-listen", &port]));
    assert!(err.contains("give --metrics-listen a free port"), "{err}");
    // An operations file nowhere it could be written.
    let ops = fails(lab.caplab(&["run", "--ops-parquet", "/no-such-dir/ops.parquet"]));
    assert!(
        ops.contains("the directory /no-such-dir does not exist: create it"),
        "{ops}"
    );
    let ops = fails(lab.caplab(&["run", "--ops-parquet", env!("CARGO_MANIFEST_DIR")]));
    assert!(ops.contains("is a directory: give a file name"), "{ops}");
    // Traces: a share that is not one, and a workload that cannot send traced operations.
    assert!(bad(&["run", "--trace-slow", "2"]).contains("like 1% or 0.01"));
    assert!(bad(&["run", "--trace-slow", "1%,later"]).contains("like 20ms"));
    let bank = fails(lab.caplab(&["run", "--hosts", "x", "--workload", "bank-paxos", "--trace-slow", "1%"]));
    assert!(
        bank.contains("cannot send its operations traced") && bank.contains("drop --trace-slow"),
        "{bank}"
    );
    assert!(!lab.home.join("nodes").exists(), "no node was started");
}

#[test]
fn rate_shapes_are_checked_before_anything_runs() {
    let lab = Lab::offline("rate-shapes");
    let bad = |args: &[&str]| {
        let o = lab.caplab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        stderr(&o)
    };
    assert!(bad(&["run", "--rate", "ramp:1k/5m"]).contains("ramp:1k..40k/5m"));
    assert!(bad(&["run", "--rate", "sine:1k±2k/10s"]).contains("cannot exceed its mean"));
    assert!(bad(&["run", "--rate", "1k", "--rate-file", "t.csv"]).contains("cannot be used with"));
    // A shape starts with the measured window, so its warm-up must have a known length; and it
    // runs for a time.
    let shaped = ["run", "--hosts", "x", "--rate", "steps:1k,2k/10s"];
    let auto = fails(lab.caplab(&shaped));
    assert!(auto.contains("give --warmup 30s (or --warmup 0)"), "{auto}");
    let count = fails(lab.caplab(&[&shaped[..], &["--warmup", "0", "-n", "100"]].concat()));
    assert!(count.contains("give --duration"), "{count}");
    let missing = lab.home.join("no-such-trace.csv");
    let trace = fails(lab.caplab(&["run", "--hosts", "x", "--rate-file", missing.to_str().unwrap()]));
    assert!(
        trace.contains("cannot read --rate-file") && trace.contains("no-such-trace.csv"),
        "{trace}"
    );
    std::fs::create_dir_all(&lab.home).unwrap();
    let bad_trace = lab.home.join("bad.csv");
    std::fs::write(&bad_trace, "second,rate\n0,100\n1,lots\n").unwrap();
    let said = fails(lab.caplab(&[
        "run",
        "--hosts",
        "x",
        "--warmup",
        "0",
        "--rate-file",
        bad_trace.to_str().unwrap(),
    ]));
    assert!(said.contains("bad.csv line 3") && said.contains("'1,lots'"), "{said}");
    assert!(!lab.home.join("nodes").exists(), "no node was started");
}

// (replay)
#[test]
fn replays_are_checked_before_anything_runs() {
    let lab = Lab::offline("replay-flags");
    std::fs::create_dir_all(&lab.home).unwrap();
    let trace = lab.home.join("trace.jsonl");
    let entry = |ms: u64| {
        format!(
            r#"{{"start_ms":{ms},"keyspace":"app","query":"INSERT INTO t (k) VALUES (?)","values":["00000001"],"consistency":"ONE","serial_consistency":"SERIAL","page_size":"-1","timestamp":-9223372036854775808}}"#
        )
    };
    std::fs::write(&trace, format!("{}\n{}\n", entry(1000), entry(3000))).unwrap();
    let t = trace.to_str().unwrap();
    let replay = |extra: &[&str]| fails(lab.caplab(&[&["run", "--hosts", "x", "--replay", t][..], extra].concat()));
    assert!(replay(&["--rate", "100"]).contains("drop --rate"));
    assert!(replay(&["-n", "10"]).contains("drop -n"));
    assert!(replay(&["--partitions", "10"]).contains("drop --partitions"));
    let long = replay(&["--duration", "5s"]);
    assert!(long.contains("the replay holds 2.0 s"), "{long}");
    let warm = replay(&["--warmup", "3s"]);
    assert!(warm.contains("nothing would be measured"), "{warm}");
    let o = lab.caplab(&["run", "--replay", t, "--speed", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a factor above 0"), "{}", stderr(&o));
    let o = lab.caplab(&["run", "--speed", "2"]);
    assert!(stderr(&o).contains("--replay"), "{}", stderr(&o));
    std::fs::write(&trace, format!("{}\nnot json\n", entry(1000))).unwrap();
    let broken = replay(&[]);
    assert!(broken.contains("trace.jsonl line 2: not a trace entry"), "{broken}");
    let missing = fails(lab.caplab(&["run", "--replay", "no-such.jsonl"]));
    assert!(missing.contains("caplab capture writes one"), "{missing}");
    assert!(!lab.home.join("nodes").exists(), "no node was started");
}

// (server_profile)
#[test]
fn profiling_needs_nodes_caplab_runs_and_says_how_otherwise() {
    let lab = Lab::new("profile-errors");
    let e = fails(lab.caplab(&[
        "run",
        "--hosts",
        &lab.nowhere(),
        "--duration",
        "1s",
        "--server-profile",
        "cpu",
    ]));
    assert!(e.contains("needs nodes caplab runs on this machine"), "{e}");
    assert!(e.contains("-agentpath:"), "says how to attach by hand: {e}");
    let o = lab.caplab(&["run", "--server-profile", "heap"]);
    assert_eq!(o.status.code(), Some(2), "a usage error");
    let e = common::stderr(&o);
    assert!(e.contains("use cpu, wall, alloc, lock"), "{e}");
}

// (workload_profiles)
#[test]
fn a_malformed_profile_is_refused_before_connecting() {
    let lab = Lab::new("profile-yaml");
    std::fs::create_dir_all(&lab.home).unwrap();
    let file = lab.home.join("typo.yaml");
    std::fs::write(&file, "schema:\n  - CREATE TABLE t (k int PRIMARY KEY)\noperations:\n  read: {cql: \"SELECT * FROM t WHERE k = ?\", wieght: 2}\n").unwrap();
    // Nothing listens there: the error must be about the file, found before any connection.
    let err = fails(lab.caplab(&[
        "run",
        "--hosts",
        &lab.nowhere(),
        "--profile",
        file.to_str().unwrap(),
        "-n",
        "1",
    ]));
    assert!(
        err.contains("typo.yaml:4:") && err.contains("unknown key 'wieght': did you mean 'weight'?"),
        "{err}"
    );
    assert!(fails(lab.caplab(&["run", "--hosts", &lab.nowhere(), "--workload", "nope"])).contains("keyvalue"));
    // A profile names its own tables; --tables spreads E1's.
    let err = fails(lab.caplab(&[
        "run",
        "--hosts",
        &lab.nowhere(),
        "--workload",
        "keyvalue",
        "--tables",
        "10",
    ]));
    assert!(err.contains("drop --tables, or use --workload insert"), "{err}");
    let err = fails(lab.caplab(&["run", "--hosts", &lab.nowhere(), "--tables", "0"]));
    assert!(err.contains("--tables must be between 1 and 10000"), "{err}");
}

// (node)
#[test]
fn an_unpublished_version_is_named_as_such() {
    let lab = Lab::new("unpublished");
    let err = fails(lab.start(&["--version", "5.0.99"]));
    assert!(
        err.contains("not published on Maven Central") && err.contains("5.0.99"),
        "{err}"
    );
}

// (node)
#[test]
fn flags_are_checked_before_anything_runs() {
    let lab = Lab::new("bad-flags");
    assert!(fails(lab.start(&["--heap", "lots"])).contains("not a heap size"));
    assert!(fails(lab.start(&["--set", "memtable_flush_writers"])).contains("key=value"));
    assert!(fails(lab.start(&["--java", "/nonexistent/jdk"])).contains("is not a JDK"));
    assert!(fails(lab.start(&["--gc", "zgc-generational", "--java", "17"])).contains("JDK 21"));
    let usage = lab.start(&["--gc", "cms"]);
    assert_eq!(usage.status.code(), Some(2), "clap usage errors exit 2");
    assert!(!lab.home.join("nodes").exists(), "nothing was created");
}

// (experiment)
#[test]
fn a_bad_file_is_refused_before_any_node_starts() {
    let lab = Lab::new("experiment-bad");
    std::fs::create_dir_all(&lab.home).unwrap();
    let file = lab.home.join("bad.yaml");
    std::fs::write(
        &file,
        "name: bad\nnode: {version: 5.0.9}\nrun: {sla: 'p99<10ms/5s'}\nvariants: [{name: a}]\n\
         measure:\n  - {name: sweep, capacity: true, rates: '1k,fast'}\n",
    )
    .unwrap();
    let out = lab.home.join("out");
    let began = Instant::now();
    let said = fails(lab.caplab(&["experiment", file.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    let took = began.elapsed();
    assert!(
        said.contains(&format!("{}: measurement 'sweep' of variant 'a'", file.display()))
            && said.contains("--rates")
            && said.contains("'1k,fast' is not a list of rates"),
        "the file, the measurement, the key and the fix: {said}"
    );
    // Refused while reading the file: no results directory, so no node (an experiment's nodes
    // live in it) and no jars fetched.
    assert!(!out.exists(), "refused after {took:?}, yet {} exists", out.display());
    eprintln!("a bad rates: refused in {took:?}");
}

/// The YAML blocks of docs/*.md and README.md, with where each is: (file:line, text).
fn yaml_in_docs() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.push(root.join("README.md"));
    let mut blocks = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut open: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            match &mut open {
                None if line.trim_start().starts_with("```yaml") => open = Some((i + 1, String::new())),
                None => {}
                Some((at, body)) if line.trim_start().starts_with("```") => {
                    blocks.push((format!("{}:{at}", path.display()), std::mem::take(body)));
                    open = None;
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    blocks
}

#[test]
fn every_experiment_in_the_docs_passes_check() {
    let lab = Lab::offline("docs-yaml");
    std::fs::create_dir_all(&lab.home).unwrap();
    let experiments: Vec<_> = yaml_in_docs()
        .into_iter()
        .filter(|(_, text)| text.contains("\nvariants:"))
        .collect();
    assert!(!experiments.is_empty(), "docs/experiment.md shows an experiment file");
    for (i, (at, text)) in experiments.iter().enumerate() {
        let file = lab.home.join(format!("doc{i}.yaml"));
        std::fs::write(&file, text).unwrap();
        let o = lab.caplab(&["experiment", "--check", file.to_str().unwrap()]);
        assert!(o.status.success(), "{at}: {}", stderr(&o));
    }
}

#[test]
fn a_typo_in_a_shared_run_block_is_refused_naming_the_key_meant() {
    let lab = Lab::offline("experiment-typo");
    std::fs::create_dir_all(&lab.home).unwrap();
    let file = lab.home.join("typo.yaml");
    // Each measurement takes the shared keys its command has: a key no command has would be
    // left out of every step, and the variants compared with nothing changed.
    std::fs::write(
        &file,
        "name: typo\nrun: {duraton: 30s}\nvariants: [{name: a}, {name: b, run: {concurrency: 512}}]\n\
         measure: [{name: insert, workload: insert}]\n",
    )
    .unwrap();
    let said = fails(lab.caplab(&["experiment", "--check", file.to_str().unwrap()]));
    assert!(
        said.contains("run: unknown key 'duraton': did you mean 'duration'?"),
        "{said}"
    );
    let said = fails(lab.caplab(&["compare", "--include-unsteady", "nowhere"]));
    assert!(said.contains("leave it out (--steady-only"), "{said}");
}

/// A capture needs a running node of caplab's, and says how to get one.
#[test]
fn a_capture_without_a_running_node_is_refused() {
    let lab = Lab::offline("capture-no-node");
    let err = fails(lab.caplab(&["capture", "--for", "1s"]));
    assert!(
        err.contains("no running node") && err.contains("caplab node start"),
        "{err}"
    );
}
