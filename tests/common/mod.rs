//! Helpers for integration tests: each test gets its own caplab home, loopback address and
//! JMX ports (from one allocator, `Lab::new`), drives the real `caplab` binary, and stops its
//! nodes when it ends (even on a failed assertion). Tests that start JVMs take a lock so two
//! never boot at once on a 2-core machine. The tests of a file that can share a cluster share
//! one (`Shared`), each scenario a test of its own; shared.rs keeps all this true when each test
//! runs in a process of its own, as under cargo-nextest.

#![allow(dead_code)]

pub mod duckdb;
pub mod prometheus;
mod shared;
pub mod upgrade;
pub mod verdict;

#[allow(unused_imports)]
pub use shared::{Shared, jvm_lock, jvm_lock_apart};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Lab {
    pub home: PathBuf,
    /// The first node's address; node i listens on the same address with the last byte i.
    pub address: String,
    /// The first node's JMX port; node i takes the port i − 1 above it.
    pub jmx_port: u16,
}

impl Lab {
    /// A fresh home for test `name`, with an address and JMX ports no other lab of this test
    /// file has.
    pub fn new(name: &str) -> Lab {
        let lab = Lab::at(name);
        // Left over from an aborted earlier run: stop and remove.
        if lab.home.exists() {
            lab.caplab(&["node", "wipe", "--force"]);
            let _ = std::fs::remove_dir_all(&lab.home);
        }
        lab
    }

    /// Test `name`'s lab as it is: its home, and the address and ports its name has in this run
    /// of the suite (`shared::slot_of`).
    fn at(name: &str) -> Lab {
        let slot = shared::slot_of(name);
        Lab {
            home: Lab::home_of(name),
            address: format!("127.0.{slot}.1"),
            jmx_port: 7400 + 10 * (u16::from(slot) - 10),
        }
    }

    /// A home for a test that never starts a node (a refusal): no address or ports of its own,
    /// so a file of many such tests is not bound by the labs' address slots.
    pub fn offline(name: &str) -> Lab {
        let home = Lab::home_of(name);
        let _ = std::fs::remove_dir_all(&home);
        Lab {
            home,
            address: "127.0.0.1".into(),
            jmx_port: 7199,
        }
    }

    /// Where test `name`'s lab lives: under the target directory's tmp/, where scripts/test.sh
    /// looks for nodes left behind, in a folder named after the test file.
    fn home_of(name: &str) -> PathBuf {
        shared::file_dir().join(name)
    }

    pub fn caplab(&self, args: &[&str]) -> Output {
        caplab_command()
            .args(args)
            .env("CAPLAB_HOME", &self.home)
            .output()
            .expect("run caplab")
    }

    /// `caplab node start` on this lab's address and ports with a small heap, plus `extra`.
    pub fn start(&self, extra: &[&str]) -> Output {
        let jmx = self.jmx_port.to_string();
        let mut args = vec!["node", "start", "--address", &self.address, "--jmx-port", &jmx];
        if !extra.contains(&"--heap") {
            args.extend(["--heap", "1G"]);
        }
        args.extend_from_slice(extra);
        self.caplab(&args)
    }

    pub fn cql(&self) -> String {
        format!("{}:9042", self.address)
    }

    /// Node `i`'s address (from 1).
    pub fn node_address(&self, i: u8) -> String {
        let (net, _) = self.address.rsplit_once('.').unwrap();
        format!("{net}.{i}")
    }

    /// A CQL address of this lab's where nothing listens (for refusals).
    pub fn nowhere(&self) -> String {
        format!("{}:9042", self.node_address(99))
    }

    /// A folder `name` in the lab's home for one test's own files, emptied first, as a flag's
    /// value: a retried test starts from nothing rather than from what its failed try left (a
    /// results directory caplab refuses to overwrite, a history holding the first try's runs).
    pub fn fresh(&self, name: &str) -> String {
        let dir = self.home.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.to_str().unwrap().to_string()
    }

    /// An empty directory `name` in the lab's home, for a run's `--out`: a retried test finds
    /// none of its first try's results there (which a run would refuse to replace).
    pub fn out(&self, name: &str) -> std::path::PathBuf {
        std::path::PathBuf::from(self.fresh(name))
    }

    /// The path of `name` in the lab's home, as a flag's value.
    pub fn dir(&self, name: &str) -> String {
        self.home.join(name).to_str().unwrap().to_string()
    }

    /// The path of file `name` in the lab's home, with nothing there yet: a retried test (the
    /// lab outlives it) starts from an empty history, not from its first try's.
    pub fn new_file(&self, name: &str) -> String {
        let path = self.dir(name);
        let _ = std::fs::remove_file(&path);
        path
    }

    /// `caplab run` against the lab's first node, quiet, into the lab's directory `out`, with no
    /// warm-up unless `extra` gives one.
    pub fn run(&self, out: &str, extra: &[&str]) -> Output {
        self.caplab(&self.run_args(out, extra).refs())
    }

    /// The arguments of `run` (to spawn it, or add to them).
    pub fn run_args(&self, out: &str, extra: &[&str]) -> Args {
        let mut args = Args::new(&["run", "--hosts", &self.cql(), "-q", "--out", &self.dir(out)]);
        if !extra.iter().any(|a| a.starts_with("--warmup")) {
            args.push(&["--warmup", "0s"]);
        }
        args.push(extra);
        args
    }

    /// Starts caplab with `args` in the lab's home, its output collected.
    pub fn spawn(&self, args: &Args) -> Child {
        caplab_command()
            .args(&args.0)
            .current_dir(&self.home)
            .env("CAPLAB_HOME", &self.home)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run caplab")
    }
}

/// A command line being built.
#[derive(Debug, Clone, Default)]
pub struct Args(pub Vec<String>);

impl Args {
    pub fn new(args: &[&str]) -> Args {
        Args(args.iter().map(|a| a.to_string()).collect())
    }

    pub fn push(&mut self, args: &[&str]) -> &mut Args {
        self.0.extend(args.iter().map(|a| a.to_string()));
        self
    }

    pub fn refs(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}

/// Sends `signal` (`TERM`, `INT`, `KILL`…) to a caplab started with `spawn`.
pub fn signal(child: &Child, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {} failed", child.id());
}

/// Waits until `ready` holds, polling every 20 ms; fails naming `what` after `limit`.
#[track_caller]
pub fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let begin = Instant::now();
    while !ready() {
        assert!(begin.elapsed() < limit, "{what}: not after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Which try of this test this is: 1, or 2 for nextest's retry (`NEXTEST_ATTEMPT`).
pub fn attempt() -> u32 {
    std::env::var("NEXTEST_ATTEMPT")
        .ok()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1)
}

/// The timer slack of every node the tests start (`CAPLAB_TIMER_SLACK`). Cassandra's idle
/// request workers sleep 10 µs to 1 ms at a time while they wait for work: at Linux's default
/// slack (50 µs) that cost a 5.0 node 0.31-0.54 cores from 30 to 1,000 op/s, and the suite is
/// bound by its two cores. With 1 ms a node spent 0.17-0.23 cores and p50 rose by 0.2-1 ms
/// (bench/results/provisioning.md, "What a node's idle workers cost"); what the tests check
/// holds either way.
pub const TIMER_SLACK: &str = "1ms";

/// How the JVM of every node the tests start compiles (`CAPLAB_JIT`), unless a test asks for
/// `--jit tiered` (tests/steady.rs, which checks how the JIT settles): C1 alone. A node the
/// tests start lives a few minutes, and C2 compiling was over a third of the nodes' CPU; with C1
/// alone the suite's nodes used about a third less (bench/results/provisioning.md, "C1 alone
/// (`--jit c1`)").
/// What the tests check is caplab's behaviour against a real node, which holds at either speed.
pub const JIT: &str = "c1";

/// The machine's last core (`--cpus`, `--client-cpus`): where tests that run beside one on the
/// first core keep their node and client.
pub fn last_core() -> String {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n - 1).to_string()
}

/// The caplab binary under test, its nodes started with the tests' timer slack and JIT.
pub fn caplab_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_caplab"));
    c.env("CAPLAB_TIMER_SLACK", TIMER_SLACK).env("CAPLAB_JIT", JIT);
    c
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.caplab(&["node", "stop", "--no-drain", "--timeout", "20"]);
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and shows caplab's output if not.
#[track_caller]
pub fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "caplab failed ({}):\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    o
}

/// Asserts failure (exit 1) and returns stderr.
#[track_caller]
pub fn fails(o: Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(1),
        "caplab should have failed:\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    stderr(&o)
}

/// A run's result.json.
/// A child process's output, collected on a thread.
pub trait OutputAsync {
    fn output_async(&mut self) -> std::thread::JoinHandle<std::process::Output>;
}

impl OutputAsync for Command {
    fn output_async(&mut self) -> std::thread::JoinHandle<std::process::Output> {
        let child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::spawn(move || child.wait_with_output().unwrap())
    }
}

/// A run's `summary.total` at `rate` op/s whose only failures are operations not sent by the
/// window's end, and at most as many as the mechanism allows. An operation is left unsent only
/// if, from when it fell due to the end, no worker came free: either the client lagged its
/// schedule (`max_lag_ms`), or every worker held an operation that outlasted that time (a server
/// stall at the end), so the backlog is at most the rate times the longer of the two: the
/// longest lag, or the longest service time. Returns how many.
#[track_caller]
pub fn only_not_sent(total: &serde_json::Value, rate: f64) -> u64 {
    let not_sent = total["errors"]["not_sent"].as_u64().unwrap_or(0);
    assert_eq!(total["error_total"].as_u64(), Some(not_sent), "{total}");
    let lag_ms = total["max_lag_ms"].as_f64().unwrap_or(0.0);
    let service_ms = total["service"]["max_ms"].as_f64().unwrap_or(0.0);
    assert!(
        not_sent as f64 <= lag_ms.max(service_ms) * rate / 1000.0 + 1.0,
        "{total}"
    );
    not_sent
}

pub fn history_json(lab: &Lab, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["history", "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&stdout(&ok(lab.caplab(&args)))).expect("history --json is JSON")
}

pub fn result_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result.json")).expect("valid JSON")
}

/// The seconds of a result's server timeline (`doc["server"]`) that lie in the measured window.
pub fn measured_seconds(server: &serde_json::Value) -> Vec<&serde_json::Value> {
    server["timeline"]
        .as_array()
        .expect("a server timeline")
        .iter()
        .filter(|s| s["measured"] == true)
        .collect()
}

/// An experiment directory's experiment.json.
pub fn experiment_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("experiment.json")).expect("experiment.json"))
        .expect("valid JSON")
}

/// The cell of `variant` in the row of `metric` of an experiment's first measurement's comparison.
pub fn cell<'a>(doc: &'a serde_json::Value, metric: &str, variant: &str) -> &'a serde_json::Value {
    let row = doc["comparison"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric}"));
    row["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["variant"] == variant)
        .unwrap_or_else(|| panic!("no variant {variant} in {metric}"))
}

/// (operations, rows, partitions) of one operation type in a run's summary.
#[track_caller]
pub fn op(doc: &serde_json::Value, name: &str) -> (u64, u64, u64) {
    let p = doc["summary"]["per_op"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no operation {name} in {}", doc["summary"]["per_op"]));
    let n = |k: &str| p[k].as_u64().unwrap();
    (n("ops"), n("rows"), n("partitions"))
}

/// Every file under `dir`, recursively (none when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The process id of the lab's first node (from caplab's own state file).
pub fn node_pid(lab: &Lab) -> u32 {
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(lab.home.join("nodes/node1/state.json")).unwrap()).unwrap();
    state["pid"].as_u64().unwrap() as u32
}

/// Rows in a table, counted through a fresh session.
pub fn count_rows(hosts: &str, table: &str) -> i64 {
    runtime().block_on(async {
        let s = scylla::client::session_builder::SessionBuilder::new()
            .known_node(hosts)
            .build()
            .await
            .unwrap();
        let r = s
            .query_unpaged(format!("SELECT COUNT(*) FROM {table}"), ())
            .await
            .unwrap();
        r.into_rows_result().unwrap().single_row::<(i64,)>().unwrap().0
    })
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Starts caplab in `cwd` (the lab's home when None) without waiting for it.
pub fn spawn(lab: &Lab, cwd: Option<&std::path::Path>, args: &[&str]) -> std::process::Child {
    caplab_command()
        .args(args)
        .current_dir(cwd.unwrap_or(&lab.home))
        .env("CAPLAB_HOME", &lab.home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run caplab")
}

/// Waits until the run writing into `dir` has closed `seconds` intervals (CSV rows).
#[track_caller]
pub fn wait_for_seconds(dir: &Path, seconds: usize) {
    wait_until(
        &format!("the run in {} closes {seconds} s", dir.display()),
        Duration::from_secs(90),
        || {
            std::fs::read_to_string(dir.join("latency.csv")).map_or(0, |t| t.lines().count().saturating_sub(1))
                >= seconds
        },
    );
}

/// A page as a real browser shows it: the DOM after its scripts ran, and the page's own check
/// (script errors, requests its policy blocked, points drawn per chart).
pub struct Browsed {
    pub dom: String,
    pub check: serde_json::Value,
}

/// Opens `page` in headless Chromium (Debian's `chromium`; `.ci/run` installs it) with no
/// network, and returns what it rendered.
pub fn browse(page: &std::path::Path) -> Browsed {
    let browser = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|b| std::path::Path::new(b).exists())
        .expect("no Chromium: install it (apt-get install chromium) to test report pages");
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=15000",
            "--window-size=1280,2000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success() && dom.contains("</html>"),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let check = dom
        .split("<pre id=\"selfcheck\" hidden=\"\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .map(|text| {
            text.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&amp;", "&")
        })
        .unwrap_or_else(|| panic!("the page wrote no self-check (its script did not finish):\n{dom}"));
    let check: serde_json::Value =
        serde_json::from_str(&check).unwrap_or_else(|e| panic!("self-check is not JSON ({e}): {check}"));
    Browsed { dom, check }
}

impl Browsed {
    /// Fails unless the page drew without a script error and asked for nothing on the network.
    pub fn assert_clean(&self) {
        assert_eq!(self.check["errors"], serde_json::json!([]), "script errors");
        assert_eq!(self.check["blocked"], serde_json::json!([]), "network requests");
    }

    /// Points drawn in the chart `id` (None: no such chart).
    pub fn points(&self, id: &str) -> Option<u64> {
        self.check["charts"][id].as_u64()
    }

    /// The text of the table cell marked `data-key="key"`.
    pub fn cell(&self, key: &str) -> String {
        let marker = format!("data-key=\"{key}\">");
        let rest = self
            .dom
            .split(&marker)
            .nth(1)
            .unwrap_or_else(|| panic!("no cell {key}"));
        rest.split('<').next().unwrap().trim().to_string()
    }
}
