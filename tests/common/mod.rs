//! Helpers for integration tests: each test gets its own caplab home, loopback address and
//! JMX ports, drives the real `caplab` binary, and stops its nodes when it ends (even on a
//! failed assertion). Tests that start JVMs take a lock so two never boot at once on a
//! 2-core machine.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

static JVM_LOCK: Mutex<()> = Mutex::new(());

/// Serialises tests that start Cassandra nodes.
pub fn jvm_lock() -> MutexGuard<'static, ()> {
    JVM_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct Lab {
    pub home: PathBuf,
    pub address: String,
    pub jmx_port: u16,
}

impl Lab {
    /// A fresh home for test `name`; nodes listen from `address` with JMX from `jmx_port`.
    pub fn new(name: &str, address: &str, jmx_port: u16) -> Lab {
        let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("caplab-tests")
            .join(name);
        let lab = Lab {
            home,
            address: address.into(),
            jmx_port,
        };
        // Left over from an aborted earlier run: stop and remove.
        if lab.home.exists() {
            lab.caplab(&["node", "wipe", "--force"]);
            let _ = std::fs::remove_dir_all(&lab.home);
        }
        lab
    }

    pub fn caplab(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_caplab"))
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
pub fn result_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("result.json")).expect("valid JSON")
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
    Command::new(env!("CARGO_BIN_EXE_caplab"))
        .args(args)
        .current_dir(cwd.unwrap_or(&lab.home))
        .env("CAPLAB_HOME", &lab.home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run caplab")
}

/// Waits until the run writing into `dir` has closed `seconds` intervals (CSV rows).
pub fn wait_for_seconds(dir: &std::path::Path, seconds: usize) {
    let begin = std::time::Instant::now();
    while std::fs::read_to_string(dir.join("latency.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
        < seconds
    {
        assert!(
            begin.elapsed() < std::time::Duration::from_secs(90),
            "the run did not get to {seconds}s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
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
