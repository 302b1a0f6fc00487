//! What the tests of one file share, whether they run in one process (`cargo test`) or each in a
//! process of its own (`cargo nextest run`, the suite's runner): the lock that keeps the file's
//! node tests one at a time, the labs' addresses for a run of the suite, and a lab the file's
//! tests share, started once and stopped when the file's last test ends.
//!
//! The state between processes lives in the file's folder under the target directory's tmp/,
//! each piece stamped with the run it belongs to (nextest's run id, or the process under
//! `cargo test`), so a later run starts afresh.

use serde::{Serialize, de::DeserializeOwned};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::{Lab, caplab_command};

/// This file's folder of test state and labs: target/tmp/caplab-tests/FILE.
pub(super) fn file_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("caplab-tests")
        .join(env!("CARGO_CRATE_NAME"))
}

/// This run of the suite: nextest's run id, or this process under `cargo test` (which runs a
/// whole file in one).
fn run_id() -> String {
    std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| format!("pid-{}", std::process::id()))
}

/// A file locked (flock) for as long as this lives: a lock between the file's test processes.
struct Locked(#[allow(dead_code)] File);

fn lock(path: &Path) -> Locked {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open the lock {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    Locked(file)
}

/// The test files, in a fixed order: each gets eight labs' worth of addresses and ports of its
/// own. A new test file adds its name here (a file not listed fails at its first lab, saying so).
const TEST_FILES: &[&str] = &[
    "capacity",
    "experiment",
    "faults",
    "fidelity",
    "loaders",
    "node",
    "refusals",
    "report",
    "run",
    "server_profile",
    "steady",
    "stress",
    "telemetry",
    "workload_profiles",
    "history",
    "bisect",
    "experiment_nodes",
    "history_gate",
    "loaders_warmup",
    "faults_cluster",
    "compaction",
    "bank",
    "upgrade",
    "downgrade",
    "replay",
];

/// Labs per test file.
const LABS_PER_FILE: u8 = 8;

/// The slot of lab `name` in this test file: its nodes listen on 127.0.S.1, .2, … (S from 10) and
/// take JMX ports from 7400 + 10·(S − 10) up, one per node; Cassandra's own ports (7000, 9042)
/// are per address, so no two labs share one. A name takes the next free slot the first time it
/// is asked for in a run and keeps it for the run (a retried test gets its lab's again).
pub(super) fn slot_of(name: &str) -> u8 {
    let file = env!("CARGO_CRATE_NAME");
    let index = TEST_FILES
        .iter()
        .position(|f| *f == file)
        .unwrap_or_else(|| panic!("tests/common/shared.rs: add '{file}' to TEST_FILES, so its labs get addresses"));
    let dir = file_dir();
    let _locked = lock(&dir.join(".slots.lock"));
    let path = dir.join(".slots");
    let run = run_id();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut lines = text.lines();
    let mut names: Vec<&str> = match lines.next() {
        Some(r) if r == run => lines.collect(),
        _ => {
            forget_earlier_runs(&dir);
            Vec::new()
        }
    };
    let n = names.iter().position(|n| *n == name).unwrap_or_else(|| {
        names.push(name);
        names.len() - 1
    });
    assert!(
        n < usize::from(LABS_PER_FILE),
        "tests/{file}.rs has more than {LABS_PER_FILE} labs: raise LABS_PER_FILE"
    );
    std::fs::write(&path, format!("{run}\n{}\n", names.join("\n"))).unwrap();
    10 + index as u8 * LABS_PER_FILE + n as u8
}

/// Removes what earlier runs' tests left to say they had ended.
fn forget_earlier_runs(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(".done-") {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

static JVM_LOCK: Mutex<()> = Mutex::new(());

/// Held by a test that starts or uses Cassandra nodes, for as long as it runs: the file's node
/// tests run one at a time (in one process, or in several), so two never boot at once on a
/// 2-core machine, unless each has a node of its own and takes `jvm_lock_apart`. When the last
/// test of the file lets go, the lab the file's tests shared stops.
pub struct NodeTest {
    _across: Option<Locked>,
    _within: MutexGuard<'static, ()>,
}

/// Serialises the tests of a file that start or use Cassandra nodes. Every test of such a file
/// takes it (scripts/check-tests.py checks), and `scripts/test.sh --fast` runs the test files
/// that never name it.
pub fn jvm_lock() -> NodeTest {
    let within = JVM_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    NodeTest {
        _across: Some(lock(&file_dir().join(".jvm.lock"))),
        _within: within,
    }
}

/// `jvm_lock` for a test whose node is its own (a `Lab::new` of its own, no `Shared` lab): under
/// nextest, which runs each test in a process of its own, it may run beside the file's other
/// tests (as many at once as the file's test group in .config/nextest.toml lets); in one process
/// (`cargo test`) it still runs alone. The file's last test to end is seen as with `jvm_lock`.
pub fn jvm_lock_apart() -> NodeTest {
    NodeTest {
        _across: None,
        _within: JVM_LOCK.lock().unwrap_or_else(|p| p.into_inner()),
    }
}

impl Drop for NodeTest {
    fn drop(&mut self) {
        let Some(test) = this_test() else { return };
        let done = file_dir().join(format!(".done-{}", run_id()));
        if std::fs::create_dir_all(&done).is_err() || std::fs::write(done.join(&test), "").is_err() {
            return;
        }
        if tests_of_this_file().iter().all(|t| done.join(t).exists()) {
            stop_shared_labs();
        }
    }
}

/// The running test's name: libtest names the thread it runs a test on after the test.
fn this_test() -> Option<String> {
    let thread = std::thread::current();
    match thread.name() {
        Some(name) if name != "main" => Some(name.to_string()),
        _ => std::env::var("NEXTEST_TEST_NAME").ok(),
    }
}

/// Every test of this file, as the test binary lists them.
fn tests_of_this_file() -> &'static [String] {
    static TESTS: OnceLock<Vec<String>> = OnceLock::new();
    TESTS.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let out = Command::new(exe)
            .args(["--list", "--format", "terse"])
            .output()
            .expect("the test binary lists its tests");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(": test"))
            .map(String::from)
            .collect()
    })
}

/// Where the shared lab `name` says which run set it up and what its setup left.
fn marker(name: &str) -> PathBuf {
    file_dir().join(format!(".{name}.shared"))
}

/// A shared lab's marker, if this run of the suite wrote it.
fn this_runs(marker: &Path) -> Option<serde_json::Value> {
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(marker).ok()?).ok()?;
    (m["run"] == run_id().as_str()).then_some(m)
}

/// Stops the nodes of every lab of this file shared in this run, once its tests have all ended.
fn stop_shared_labs() {
    for entry in std::fs::read_dir(file_dir()).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_prefix('.').and_then(|f| f.strip_suffix(".shared")) else {
            continue;
        };
        let _locked = lock(&file_dir().join(format!(".{name}.lock")));
        if this_runs(&entry.path()).is_some() {
            let _ = std::fs::remove_file(entry.path());
            let _ = caplab_command()
                .args(["node", "stop", "--no-drain", "--timeout", "20"])
                .env("CAPLAB_HOME", Lab::home_of(name))
                .output();
        }
    }
}

/// A lab every test of a file shares, so each scenario is a test of its own (`cargo nextest run
/// -E 'test(NAME)'` runs one) and the node starts once: the first test to ask makes it (`setup`
/// starts its nodes and returns what the tests read, kept beside the lab for the file's later
/// test processes; a setup that fails is tried again by the next test), later ones get the same.
/// Its nodes stop when the file's last test ends, or else when the run does, however it ends (a
/// failed assertion, Ctrl-C, SIGKILL, a run of some of the tests). Tests that share it take
/// `jvm_lock` as every node test does, so they run one at a time; each leaves the cluster as it
/// found it.
pub struct Shared<T: 'static> {
    cell: OnceLock<(Lab, T)>,
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> Shared<T> {
    pub const fn new() -> Shared<T> {
        Shared { cell: OnceLock::new() }
    }

    pub fn get(&'static self, name: &str, setup: impl FnOnce(&Lab) -> T) -> &'static (Lab, T) {
        self.cell.get_or_init(|| {
            let _locked = lock(&file_dir().join(format!(".{name}.lock")));
            let run = run_id();
            let found = this_runs(&marker(name)).and_then(|m| serde_json::from_value::<T>(m["made"].clone()).ok());
            if let Some(made) = found {
                return (Lab::at(name), made);
            }
            let lab = Lab::new(name);
            stop_when_the_run_ends(&lab);
            let made = setup(&lab);
            let kept = serde_json::json!({ "run": run, "made": made });
            std::fs::write(marker(name), kept.to_string()).unwrap();
            (lab, made)
        })
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> Default for Shared<T> {
    fn default() -> Self {
        Shared::new()
    }
}

/// Starts a process, in a session of its own (so Ctrl-C to the tests does not reach it), that
/// waits for the run to end (nextest, which started this test process; or this process under
/// `cargo test`) and then stops the lab's nodes, if the file's last test has not.
fn stop_when_the_run_ends(lab: &Lab) {
    let run = if std::env::var_os("NEXTEST_RUN_ID").is_some() {
        std::os::unix::process::parent_id()
    } else {
        std::process::id()
    };
    let script =
        format!("while kill -0 {run} 2>/dev/null; do sleep 0.5; done; exec \"$0\" node stop --no-drain --timeout 20");
    let started = Command::new("setsid")
        .args(["-f", "sh", "-c", &script, env!("CARGO_BIN_EXE_caplab")])
        .env("CAPLAB_HOME", &lab.home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        started,
        "cannot start the watcher that stops the shared lab's nodes (setsid, sh)"
    );
}
