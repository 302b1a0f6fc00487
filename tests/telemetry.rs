//! Server telemetry in a run's results: the node's GC pauses in the measured window (equal to
//! what its GC log says for that window), its CPU (within 5 % of /proc), flushes, and a clear
//! statement when the target is not a node caplab can watch; the same node read over JMX as a
//! cluster caplab does not run, plainly and over TLS with a password and client certificate;
//! and a run watched live by a real Prometheus, scraping and receiving remote write. The tests
//! share one node, started once, and take turns on it.

mod common;

use common::prometheus::{Prometheus, http_get};
use common::{Lab, Shared, jvm_lock, ok, result_json, stderr, stdout};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// utime + stime ticks of a process.
fn cpu_ticks(pid: u64) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Epoch ms of a unified-log line, from its `[2026-…+0000]` decoration, by the shell's `date`.
fn line_ms(line: &str) -> Option<u64> {
    let stamp = line.strip_prefix('[')?.split(']').next()?;
    let out = std::process::Command::new("date")
        .args(["-d", stamp, "+%s%3N"])
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

static NODE: Shared<()> = Shared::new();

/// The node every test here reads: a small heap, so a short flat-out run collects often, and
/// small memtables, so it flushes.
fn node() -> &'static Lab {
    &NODE
        .get("telemetry", |lab| {
            ok(lab.start(&["--heap", "512M", "--set", "memtable_heap_space=16MiB"]));
        })
        .0
}

#[test]
fn a_run_reports_the_servers_gc_and_cpu_for_its_window() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = lab.cql();
    let out = lab.out("r");
    let run = |extra: &[&str]| {
        // One results directory, replaced by each run (--force), read after each.
        let base = [
            "run",
            "--warmup",
            "0s",
            "--hosts",
            &hosts,
            "-q",
            "--force",
            "--out",
            out.to_str().unwrap(),
        ];
        lab.caplab(&[&base[..], extra].concat())
    };
    ok(run(&["-n", "100"])); // the schema exists before the measured run
    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    let mut lines = status.lines();
    let column = lines
        .next()
        .unwrap()
        .split_whitespace()
        .position(|h| h == "PID")
        .unwrap();
    let pid: u64 = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(column)
        .unwrap()
        .parse()
        .unwrap();

    let before = cpu_ticks(pid);
    let o = ok(run(&["--duration", "15s"]));
    let after = cpu_ticks(pid);
    let doc = result_json(&out);
    let server = &doc["server"];
    assert!(server["not_collected"].is_null(), "{server}");

    // GC: the pauses counted are the log's pause lines inside the measured window.
    let (from, to) = (
        server["window_from_ms"].as_u64().unwrap(),
        server["window_to_ms"].as_u64().unwrap(),
    );
    let gc_log = std::fs::read_to_string(lab.home.join("nodes/node1/logs/gc.log")).unwrap();
    let in_log = gc_log
        .lines()
        .filter(|l| {
            l.contains("][gc")
                && !l.contains("gc,start")
                && l.contains("GC(")
                && l.contains(" Pause ")
                && l.ends_with("ms")
        })
        .filter(|l| line_ms(l).is_some_and(|t| t >= from && t < to))
        .count();
    let count = server["gc_count"].as_u64().unwrap() as usize;
    assert!(count > 0, "a 512M heap under 15 s of inserts collects: {server}");
    assert_eq!(count, in_log, "pauses in the window");
    assert!(server["gc_max_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(server["nodes"][0]["gc"]["collector"], "G1");

    // CPU: the window's server CPU against /proc around the whole run.
    let tck = 100.0; // USER_HZ
    let proc_s = (after - before) as f64 / tck;
    let window_s = server["window_s"].as_f64().unwrap();
    let reported_s = server["server_cpu_cores"].as_f64().unwrap() * window_s;
    assert!(
        (reported_s - proc_s).abs() <= 0.05 * proc_s,
        "server CPU {reported_s:.2}s in the window vs {proc_s:.2}s from /proc around the run"
    );
    assert!(server["client_cpu_cores"].as_f64().unwrap() > 0.0);
    let node = &server["nodes"][0];
    let split = node["cpu_user_seconds"].as_f64().unwrap() + node["cpu_system_seconds"].as_f64().unwrap();
    assert!(
        (split - node["cpu_seconds"].as_f64().unwrap()).abs() < 0.02,
        "user + system = total: {node}"
    );
    let timeline = server["timeline"].as_array().unwrap();
    assert!(timeline.len() >= 15, "one sample per second");
    let summary = stdout(&o);
    for line in [
        "Total GC count",
        "Total GC memory",
        "Total GC time",
        "Avg GC time",
        "StdDev GC time",
        "Max GC pause",
        "Server CPU",
        "Client CPU",
        "µs flush CPU per flushed op",
    ] {
        assert!(summary.contains(line), "{line}: {summary}");
    }

    flushes_in_the_window(lab, node, from, to);
    // The CSV carries each second's pause time and CPU.
    let csv = std::fs::read_to_string(out.join("latency.csv")).unwrap();
    let gc_ms: f64 = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(10)?.parse::<f64>().ok())
        .sum();
    assert!(gc_ms > 0.0, "{csv}");
}

/// A run watched live: a real Prometheus (Debian's) scrapes `--metrics-listen` every second and
/// receives `--metrics-push`; what it holds afterwards agrees with result.json: the operation
/// count exactly, through both paths (the last scrape waited for, the last push made at the end),
/// and the p99 from the buckets within one bucket (21 %) of the exact one, from the pushed native
/// histogram within 9 %. The exposition passes
/// `promtool check metrics`.
#[test]
fn live_metrics_reach_a_real_prometheus() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let endpoint = format!("{}:9500", lab.address);
    let prom = Prometheus::start(&lab.home.join("prometheus"), &lab.address, &[&endpoint]);
    let push = format!("http://{}/api/v1/write", prom.addr);
    let out = lab.out("live");
    let mut child = lab.spawn(&common::Args::new(&[
        "run",
        "--hosts",
        hosts,
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--rate",
        "400",
        "--warmup",
        "3s",
        "--duration",
        "15s",
        "--metrics-listen",
        &endpoint,
        "--metrics-push",
        &push,
        "--metrics-push-interval",
        "2s",
        "--metrics-native-histograms",
        "--label",
        "build.kind=nightly",
    ]));
    let mut text = String::new();
    common::wait_until("the endpoint says measuring", Duration::from_secs(120), || {
        text = http_get(&endpoint, "/metrics").map(|(_, t)| t).unwrap_or_default();
        text.contains(
            r#"caplab_phase{build_kind="nightly",loader="0",phase="measuring",run="live",workload="insert"} 1"#,
        )
    });
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}\n{text}",
        stdout(&checked),
        stderr(&checked)
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "caplab run with live metrics: {status}");

    let doc = result_json(&out);
    let ops = doc["summary"]["per_op"][0]["ops"].as_u64().unwrap();
    let p99_ms = doc["summary"]["per_op"][0]["response"]["p99_ms"].as_f64().unwrap();
    assert!(ops >= 5000, "15 s at 400 op/s: {ops}");
    // Series end when the loader goes (stale): the range takes the last value each path saw.
    let last = |q: &str| format!("max_over_time({q}[10m])");
    for (path, job) in [("scrape", "caplab"), ("remote write", "")] {
        let count = prom.value(&last(&format!(
            r#"caplab_operations_total{{job="{job}",outcome="ok",run="live"}}"#
        )));
        assert_eq!(count as u64, ops, "{path}: the operations result.json counts");
        let q = format!(
            "histogram_quantile(0.99, sum by (le) ({}))",
            last(&format!(
                r#"caplab_response_time_seconds_bucket{{job="{job}",run="live"}}"#
            ))
        );
        let p99 = prom.value(&q) * 1e3;
        assert!(
            p99 / p99_ms < 1.22 && p99_ms / p99 < 1.22,
            "{path}: p99 {p99:.3} ms from the buckets, {p99_ms:.3} ms in result.json"
        );
    }
    // The native histogram (remote write only): within one of its buckets, 9 %.
    let native = prom.value(r#"histogram_quantile(0.99, sum(caplab_response_time_seconds{job="",run="live"}))"#) * 1e3;
    assert!(
        native / p99_ms < 1.091 && p99_ms / native < 1.091,
        "p99 {native:.3} ms from the native histogram, {p99_ms:.3} ms in result.json"
    );
    let cpu = prom.value(&last(r#"caplab_server_cpu_seconds_total{job="caplab"}"#));
    assert!(cpu > 1.0, "the node's CPU over the run: {cpu}");
    assert_eq!(
        prom.value(r#"max_over_time(caplab_target_rate_operations_per_second{job=""}[10m])"#),
        400.0
    );
    the_dashboards_queries_read_what_the_endpoint_serves(&prom, "live");
}

/// Every query of deploy/grafana/caplab.json (panels and annotations), with its variables set,
/// is valid PromQL to the real Prometheus, and every caplab metric it names has series of the
/// run there; the panels a run always fills (throughput, response time, loaders, server CPU)
/// have points.
fn the_dashboards_queries_read_what_the_endpoint_serves(prom: &Prometheus, run: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/caplab.json");
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut queries: Vec<(String, String)> = Vec::new();
    for p in dashboard["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let title = format!(
                "{} / {}",
                p["title"].as_str().unwrap(),
                t["legendFormat"].as_str().unwrap()
            );
            queries.push((title, t["expr"].as_str().unwrap().to_string()));
        }
    }
    for a in dashboard["annotations"]["list"].as_array().unwrap() {
        let title = format!("annotation {}", a["name"].as_str().unwrap());
        queries.push((title, a["expr"].as_str().unwrap().to_string()));
    }
    assert!(queries.len() >= 12, "{queries:?}");
    let mut filled = std::collections::BTreeSet::new();
    for (title, expr) in &queries {
        let expr = expr.replace("$run", run).replace("$__rate_interval", "5s");
        let result = prom.range(&expr, 10);
        if result.iter().any(|(_, points)| *points > 0) {
            filled.insert(title.clone());
        }
        let names = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("caplab_"));
        for name in names {
            let series = prom.range(&format!(r#"{name}{{run="{run}"}}"#), 10);
            assert!(
                !series.is_empty(),
                "{title}: no series {name} of run {run} in Prometheus ({expr})"
            );
        }
    }
    for panel in [
        "Throughput / {{op}}",
        "Throughput / target",
        "Response time (from the buckets of every loader) / p99",
        "Loaders / measuring",
        "Server GC and CPU (nodes caplab runs) / server cores",
        "annotation Measuring",
    ] {
        assert!(filled.contains(panel), "{panel} has no points: {filled:?}");
    }
}

/// Flushes: those system.log says completed inside the window, with the flush writers' CPU per
/// operation they flushed (E4's figure).
fn flushes_in_the_window(lab: &Lab, node: &serde_json::Value, from: u64, to: u64) {
    let system_log = std::fs::read_to_string(lab.home.join("nodes/node1/logs/system.log")).unwrap();
    let completed = system_log
        .lines()
        .filter(|l| l.contains("Completed flushing "))
        .filter(|l| {
            // "INFO  [Thread] 2026-11-25 05:46:02,445 File.java:1 - ..." (UTC)
            let stamp = l.split_once("] ").unwrap().1.get(..23).unwrap().replace(',', ".");
            line_ms(&format!("[{stamp} UTC]")).is_some_and(|t| t >= from && t < to)
        })
        .count();
    let flushes = &node["flushes"];
    assert!(
        completed >= 2,
        "16 MiB memtables flush within 15 s of inserts: {completed}"
    );
    assert_eq!(
        flushes["count"].as_u64(),
        Some(completed as u64),
        "flushes in the window: {flushes}"
    );
    let (ops, cpu) = (
        flushes["ops"].as_u64().unwrap(),
        node["flush_cpu_seconds"].as_f64().unwrap(),
    );
    assert!(
        ops > 0 && cpu > 0.0,
        "the flushes wrote operations and took CPU: {node}"
    );
    let per_op = node["flush_cpu_us_per_op"].as_f64().unwrap();
    assert!((per_op - cpu * 1e6 / ops as f64).abs() < 1e-6, "{node}");
    assert!((0.1..100.0).contains(&per_op), "µs per flushed insert: {per_op}");
}

/// Against a cluster caplab does not run here (another home), the run completes and says so;
/// with --jmx it reads GCInspector over JMX instead, and an endpoint that does not answer is
/// named, not fatal; an automatic warm-up reads the JIT over the same JMX.
#[test]
fn a_cluster_caplab_does_not_run_is_read_over_cql_and_jmx() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let out = &lab.home.join("elsewhere-r");
    let elsewhere = lab.home.join("elsewhere");
    let other = |extra: &[&str]| {
        let base = [
            "--home",
            elsewhere.to_str().unwrap(),
            "run",
            "--warmup",
            "0s",
            "--hosts",
            hosts,
            "-q",
            "--force",
        ];
        ok(lab.caplab(&[&base[..], &["--out", out.to_str().unwrap()], extra].concat()))
    };
    let o = other(&["--rate", "2000", "--duration", "6s"]);
    assert!(
        stdout(&o)
            .contains("Server GC and CPU             : not collected (no node caplab runs on this machine is watched"),
        "{}",
        stdout(&o)
    );
    let doc = result_json(out);
    assert!(doc["server"]["not_collected"].as_str().unwrap().contains("--jmx"));
    // What the cluster itself says over CQL is read all the same: every second's thread pools,
    // which the page draws beside the latency.
    let pools = &doc["server"]["pools"];
    let readings = pools["timeline"].as_array().unwrap();
    assert!((5..=7).contains(&readings.len()), "one reading a second: {pools}");
    assert!(readings.iter().all(|r| r["nodes"] == 1), "{pools}");
    let completed: f64 = readings.iter().filter_map(|r| r["completed_per_s"].as_f64()).sum();
    assert!(completed >= 2000.0, "the node's stages completed the writes: {pools}");
    assert!(stdout(&o).contains("Thread pools, most pending    :"), "{}", stdout(&o));
    let page = common::browse(&out.join("report.html"));
    page.assert_clean();
    assert_eq!(
        page.check["charts"]["chart-pools"].as_u64(),
        Some(readings.len() as u64),
        "{}",
        page.check
    );
    // Turned off, nothing is read.
    other(&["-n", "2000", "--server-facts", "none"]);
    assert!(result_json(out)["server"]["pools"].is_null());
    let endpoint = format!("127.0.0.1:{}", lab.jmx_port);
    let o = other(&["-n", "2000", "--jmx", &format!("{endpoint},127.0.0.1:1")]);
    let jmx = &result_json(out)["server"]["jmx"];
    assert_eq!(jmx[0]["endpoint"], endpoint.as_str());
    assert!(jmx[0]["gc"]["interval_ms"].as_u64().unwrap() > 0, "{jmx}");
    assert!(
        jmx[1]["gc"].is_null() && jmx[1]["error"].as_str().unwrap().contains("127.0.0.1:1"),
        "{jmx}"
    );
    assert!(
        stdout(&o).contains(&format!("GCInspector {endpoint}")),
        "{}",
        stdout(&o)
    );
    // An endpoint that does not answer (or a run over before the first reading) leaves no
    // per-second figures, and says why.
    let why = result_json(out)["server"]["not_collected"].clone();
    assert!(why.as_str().unwrap().contains("read over JMX"), "{why}");
    // With the automatic warm-up, the servers' JIT is read over the same JMX (compilation time
    // over process CPU), as it is from /proc on nodes caplab runs, instead of the blind rule's
    // 30 s more; and once a second through the run, the server's CPU, GC, heap and compaction
    // make its timeline, as the GC log and /proc do for nodes caplab runs.
    let auto = [
        "--home",
        elsewhere.to_str().unwrap(),
        "run",
        "--hosts",
        hosts,
        "-q",
        "--force",
        "--out",
        out.to_str().unwrap(),
        "--rate",
        "2000",
        "--duration",
        "6s",
        "--warmup-max",
        "40s",
        "--jmx",
        &endpoint,
    ];
    let o = ok(lab.caplab(&auto));
    let doc = result_json(out);
    let warmup = &doc["warmup"];
    let check = warmup["check"].as_str().unwrap_or_default();
    assert!(
        check.contains("% of server CPU over JMX") && !check.contains("no JIT telemetry"),
        "{warmup}\n{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("cannot be read over JMX"), "{}", stderr(&o));
    let server = &doc["server"];
    assert!(server["not_collected"].is_null(), "{server}");
    assert!(
        server["sources"]["cpu"].as_str().unwrap().contains("over JMX"),
        "{server}"
    );
    let seconds = common::measured_seconds(server);
    // One reading a second; the first of the window may come before the JVM's first reading
    // of it (read half a second after each whole second), and a second whose reading came late
    // on a busy machine is left out (the next covers both): 4 of the 6 at least.
    assert!((4..=7).contains(&seconds.len()), "{server}");
    for s in &seconds {
        assert!(
            s["server_cpu_cores"].as_f64().unwrap() > 0.0,
            "2,000 writes a second: {s}"
        );
        assert!(s["heap_used_mb"].as_f64().unwrap() > 1.0, "{s}");
        assert!(s["pending_compactions"].as_f64().is_some(), "{s}");
    }
    // Its window's GC is what those seconds counted.
    let paused: u64 = seconds.iter().map(|s| s["gc_pauses"].as_u64().unwrap()).sum();
    assert_eq!(server["gc_count"].as_u64(), Some(paused), "{server}");
    // The slow operations are matched against those seconds' pauses: one named for GC says it
    // was read over JMX, and that where in each second they fell is not known is said.
    let slow = &doc["slow"];
    assert!(
        slow["not_watched"][0]
            .as_str()
            .unwrap()
            .starts_with("where in each second GC pauses fell"),
        "{slow}"
    );
    let gc_named = slow["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["cause"] == "gc_pause");
    assert!(
        gc_named
            .clone()
            .all(|o| o["detail"].as_str().unwrap().contains("over JMX")),
        "{slow}"
    );
    let page = common::browse(&out.join("report.html"));
    page.assert_clean();
    assert_eq!(
        page.check["charts"]["chart-cpu"].as_u64(),
        Some(seconds.len() as u64),
        "the CPU chart draws the JMX seconds: {}",
        page.check
    );
}

/// A JMX endpoint over TLS that asks for a password and a client certificate: the JVM's own
/// agent, started in the running node (`jcmd ManagementAgent.start`) with the settings a
/// cassandra-env.sh sets for remote JMX (`com.sun.management.jmxremote.ssl`, `registry.ssl`,
/// `ssl.need.client.auth`, `authenticate`, a password and an access file). Stopped when dropped.
struct TlsJmx {
    jdk: PathBuf,
    pid: u32,
    endpoint: String,
    dir: PathBuf,
}

impl TlsJmx {
    fn start(lab: &Lab, port: u16) -> TlsJmx {
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(lab.home.join("nodes/node1/state.json")).unwrap()).unwrap();
        let jdk = PathBuf::from(state["spec"]["jdk"]["java"].as_str().unwrap())
            .parent()
            .unwrap()
            .to_path_buf();
        let dir = lab.home.join("tls");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let tool = |name: &str, args: &[&str]| {
            let o = Command::new(jdk.join(name))
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(o.status.success(), "{name} {args:?}: {}", stderr(&o));
        };
        // The node's key and certificate, trusted by caplab; caplab's, trusted by the node.
        for (alias, store, pass, trust, trust_pass, name) in [
            (
                "node",
                "node.p12",
                "node-store",
                "trust.p12",
                "trust-store",
                "CN=127.0.0.1",
            ),
            (
                "caplab",
                "client.p12",
                "client-store",
                "node-trust.p12",
                "node-trust",
                "CN=caplab",
            ),
        ] {
            let keys = [
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-validity",
                "2",
                "-storetype",
                "PKCS12",
            ];
            let san = ["-ext", "SAN=ip:127.0.0.1"];
            let id = ["-alias", alias, "-keystore", store, "-storepass", pass, "-dname", name];
            tool(
                "keytool",
                &[&["-genkeypair", "-noprompt"][..], &keys, &san, &id].concat(),
            );
            let cert = format!("{alias}.crt");
            tool(
                "keytool",
                &[
                    "-exportcert",
                    "-alias",
                    alias,
                    "-keystore",
                    store,
                    "-storepass",
                    pass,
                    "-file",
                    &cert,
                ],
            );
            tool(
                "keytool",
                &[
                    "-importcert",
                    "-noprompt",
                    "-alias",
                    alias,
                    "-file",
                    &cert,
                    "-keystore",
                    trust,
                    "-storetype",
                    "PKCS12",
                    "-storepass",
                    trust_pass,
                ],
            );
        }
        let private = |name: &str, text: String| {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            path.display().to_string()
        };
        let passwords = private("jmx.password", "caplab s3cret-jmx\n".into());
        // Reading is all caplab does (GCInspector's reset too is an attribute's getter).
        let access = private("jmx.access", "caplab readonly\n".into());
        let d = dir.display();
        let ssl = private(
            "ssl.properties",
            format!(
                "javax.net.ssl.keyStore={d}/node.p12\njavax.net.ssl.keyStorePassword=node-store\n\
                 javax.net.ssl.trustStore={d}/node-trust.p12\njavax.net.ssl.trustStorePassword=node-trust\n"
            ),
        );
        let pid = common::node_pid(lab);
        tool(
            "jcmd",
            &[
                &pid.to_string(),
                "ManagementAgent.start",
                &format!("jmxremote.port={port}"),
                &format!("jmxremote.rmi.port={port}"),
                "jmxremote.host=127.0.0.1",
                "jmxremote.ssl=true",
                "jmxremote.registry.ssl=true",
                "jmxremote.ssl.need.client.auth=true",
                &format!("jmxremote.ssl.config.file={ssl}"),
                "jmxremote.authenticate=true",
                &format!("jmxremote.password.file={passwords}"),
                &format!("jmxremote.access.file={access}"),
            ],
        );
        TlsJmx {
            jdk,
            pid,
            endpoint: format!("127.0.0.1:{port}"),
            dir,
        }
    }
}

impl Drop for TlsJmx {
    fn drop(&mut self) {
        let _ = Command::new(self.jdk.join("jcmd"))
            .args([&self.pid.to_string(), "ManagementAgent.stop"])
            .output();
    }
}

/// The processes' command lines on this machine that hold `secret`.
fn processes_showing(secret: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(secret))
        .collect()
}

/// JMX over TLS with a password and a client certificate, on a cluster caplab does not run:
/// with --jmx-ssl's trust store, a key store and the password, caplab reads GCInspector
/// (NodeTool) and every second's CPU, heap and GC (its own reader) over it; no password given
/// in the environment shows in the process list or a file. Without TLS, with an untrusted certificate or with a wrong
/// password, the run goes on without the figures and its note names the fix.
#[test]
fn jmx_over_tls_with_a_password_and_a_client_certificate() {
    let _jvm = jvm_lock();
    let lab = node();
    let tls = TlsJmx::start(lab, lab.jmx_port + 5);
    let out = lab.out("tls-r");
    let store = |name: &str| tls.dir.join(name).display().to_string();
    let run = |length: &[&str], extra: &[&str]| {
        let mut cmd = common::caplab_command();
        cmd.args(["--home", lab.home.join("elsewhere").to_str().unwrap(), "run", "--hosts"])
            .args([&lab.cql(), "-q", "--force", "--no-history", "--rate", "1000"])
            .args(["--out", out.to_str().unwrap(), "--jmx", &tls.endpoint])
            .args(["--jmx-user", "caplab"])
            .args(length)
            .args(extra)
            .env("CAPLAB_JMX_TRUSTSTORE_PASSWORD", "trust-store")
            .env("CAPLAB_JMX_KEYSTORE_PASSWORD", "client-store")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };
    let trusted = [
        "--jmx-ssl",
        "--jmx-truststore",
        &store("trust.p12"),
        "--jmx-keystore",
        &store("client.p12"),
    ];
    // The automatic warm-up waits for the JIT read over the same TLS connection.
    let mut child = run(&["--duration", "6s", "--warmup-max", "40s"], &trusted)
        .env("CAPLAB_JMX_PASSWORD", "s3cret-jmx")
        .spawn()
        .unwrap();
    let mut shown = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for secret in ["s3cret-jmx", "trust-store", "client-store"] {
            shown.extend(processes_showing(secret));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = ok(child.wait_with_output().unwrap());
    assert!(shown.is_empty(), "a JMX secret in the process list: {shown:?}");
    assert!(!stderr(&o).contains("cannot be read over JMX"), "{}", stderr(&o));
    let doc = result_json(&out);
    let server = &doc["server"];
    assert!(server["jmx"][0]["gc"]["interval_ms"].as_u64().unwrap() > 0, "{server}");
    assert!(server["not_collected"].is_null(), "{server}");
    assert!(
        server["sources"]["cpu"].as_str().unwrap().contains("over JMX"),
        "{server}"
    );
    let check = doc["warmup"]["check"].as_str().unwrap_or_default();
    assert!(check.contains("% of server CPU over JMX"), "{}", doc["warmup"]);
    let seconds = common::measured_seconds(server);
    // As above: the first second, and one whose reading came late, may have none.
    assert!((4..=7).contains(&seconds.len()), "one reading a second: {server}");
    assert!(
        seconds.iter().all(|s| s["server_cpu_cores"].as_f64().unwrap() > 0.0),
        "{server}"
    );
    for f in common::files_under(&out) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_string();
        for secret in ["s3cret-jmx", "trust-store", "client-store"] {
            assert!(!text.contains(secret), "{secret} in {}", f.display());
        }
    }
    // Each wrong setting: the run completes without the JMX figures and names the fix.
    let password = ["--jmx-password", "s3cret-jmx"];
    let untrusted = ["--jmx-ssl", "--jmx-keystore", &store("client.p12")];
    let wrong = [&trusted[..], &["--jmx-password", "wrong"]].concat();
    for (extra, fix) in [
        (password.to_vec(), "add --jmx-ssl"),
        ([&untrusted[..], &password].concat(), "give --jmx-truststore"),
        (wrong, "check --jmx-user and --jmx-password"),
    ] {
        let o = ok(run(&["--duration", "3s", "--warmup", "0s"], &extra).output().unwrap());
        // NodeTool's reading, before and after the run, names the fix in result.json; the
        // per-second reader's note does where its JVM (up to 15 s to start beside another test
        // file) failed before the run ended.
        let gc = &result_json(&out)["server"]["jmx"][0];
        assert!(
            gc["gc"].is_null() && gc["error"].as_str().unwrap().contains(fix),
            "{extra:?}: {gc}"
        );
        let note = stderr(&o);
        if note.contains("cannot be read over JMX") {
            assert!(note.contains(fix), "{extra:?}: {note}");
        }
    }
}
