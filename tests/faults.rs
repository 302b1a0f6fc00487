//! Results that can be trusted under faults, against real nodes: the schema recorded is the
//! server's (a keyspace left with other settings is refused or recreated), SIGTERM keeps the
//! run, runs started in the same second never share a directory, secrets are never written, a
//! full disk leaves whole files and a printed summary. Every scenario is a test of its own on one
//! shared node; the faults of a three-node cluster are in tests/faults_cluster.rs.

mod common;

use common::{Args, Lab, Shared, fails, jvm_lock, ok, result_json, signal, stderr, stdout, wait_for_seconds};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// Histograms in an interval log, every line read by the `hdrhistogram` crate's reader.
fn hlog_histograms(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    IntervalLogIterator::new(&bytes)
        .map(|e| e.unwrap_or_else(|e| panic!("{} has a line the reader rejects: {e:?}", path.display())))
        .filter(|e| matches!(e, LogEntry::Interval(_)))
        .count()
}

/// A tmpfs of `kib` KiB at `dir`, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: PathBuf, kib: u32) -> SmallDisk {
        std::fs::create_dir_all(&dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .output()
            .expect("mount");
        assert!(
            o.status.success(),
            "this test fills a small tmpfs and needs to mount one (run as root): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        SmallDisk(dir)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

/// `caplab run` against the lab's node into the lab's `out`, on keyspace faults, with `extra`.
fn run(lab: &Lab, out: &str, extra: &[&str]) -> Output {
    let mut args = lab.run_args(out, &["--keyspace", "faults"]);
    args.push(extra);
    lab.caplab(&args.refs())
}

static ONE: Shared<()> = Shared::new();

/// One node, shared by the single-node tests; each uses a keyspace (or directory) of its own, so
/// none depends on what another left.
fn one() -> &'static Lab {
    &ONE.get("faults", |lab| {
        ok(lab.start(&[]));
    })
    .0
}

/// A keyspace left with RF 1 is not silently run on when RF 3 is asked for.
#[test]
fn a_schema_unlike_the_one_asked_for_is_refused() {
    let _jvm = jvm_lock();
    let lab = one();
    ok(run(lab, "rf1", &["-n", "100"]));
    let err = fails(run(lab, "rf3-refused", &["-n", "100", "--replication-factor", "3"]));
    assert!(
        err.contains("keyspace faults exists with replication")
            && err.contains("'replication_factor': '1'")
            && err.contains("--recreate"),
        "{err}"
    );
    assert!(
        !lab.home.join("rf3-refused").exists(),
        "a refused run leaves no directory"
    );
    let err = fails(run(lab, "compaction-refused", &["-n", "100", "--compaction"]));
    assert!(
        err.contains("compaction is off, not on") && err.contains("--recreate"),
        "{err}"
    );
    ok(run(
        lab,
        "rf3",
        &["-n", "100", "--replication-factor", "3", "--recreate"],
    ));
    let doc = result_json(&lab.home.join("rf3"));
    let schema = doc["schema"].as_array().unwrap()[0].as_str().unwrap().to_string();
    assert!(
        schema.contains("CREATE KEYSPACE faults") && schema.contains("'replication_factor': '3'"),
        "result.json records the server's schema: {schema}"
    );
}

/// SIGTERM is a Ctrl-C: in-flight operations finish, everything is written, exit 143.
#[test]
fn sigterm_is_a_ctrl_c() {
    let _jvm = jvm_lock();
    let lab = one();
    let term = lab.home.join("sigterm");
    let child = lab.spawn(&lab.run_args("sigterm", &["--rate", "1000", "--duration", "60s"]));
    wait_for_seconds(&term, 3);
    signal(&child, "TERM");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Op rate"),
        "the summary is printed"
    );
    let doc = result_json(&term);
    assert_eq!(
        (doc["status"].as_str(), doc["interrupted_by"].as_str()),
        (Some("interrupted"), Some("SIGTERM"))
    );
    let ops = doc["summary"]["total"]["ops"].as_u64().unwrap();
    assert!(ops >= 3_000, "{ops}");
    assert!(doc["histograms"]["insert.response"].is_string());
    assert!(
        hlog_histograms(&term.join("latency.hlog")) >= 3 * 5,
        "the last seconds are in the log"
    );
}

/// Two loaders started in the same second each get their own directory; an --out that
/// holds results is refused unless --force.
#[test]
fn loaders_get_their_own_directories_and_results_are_not_overwritten() {
    let _jvm = jvm_lock();
    let lab = one();
    let loaders: Vec<Child> = ["1/2", "2/2"]
        .iter()
        .map(|slice| {
            // No --out: each picks its own default directory.
            lab.spawn(&Args::new(&[
                "run",
                "--warmup",
                "0s",
                "--hosts",
                &lab.cql(),
                "--rate",
                "200",
                "--duration",
                "2s",
                "--loader",
                slice,
                "-q",
            ]))
        })
        .collect();
    for child in loaders {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(lab.home.join("caplab-results"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let mut slices: Vec<String> = dirs
        .iter()
        .map(|d| {
            assert!(hlog_histograms(&d.join("latency.hlog")) >= 2);
            result_json(d)["config"]["engine"]["loader"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    slices.sort();
    assert_eq!(slices, ["1/2", "2/2"]);
    ok(lab.run("dirs", &["-n", "10"]));
    let err = fails(lab.run("dirs", &["-n", "10"]));
    assert!(
        err.contains("already holds results") && err.contains("--force"),
        "{err}"
    );
    ok(lab.run("dirs", &["-n", "10", "--force"]));
}

/// Passwords never reach a file: not in result.json's command, not in a JMX password file.
#[test]
fn passwords_never_reach_a_file() {
    let _jvm = jvm_lock();
    let lab = one();
    let secret_out = lab.home.join("secrets");
    let jmx = format!("127.0.0.1:{}", lab.jmx_port);
    // Its own temporary directory: what caplab leaves there is its alone (another test file's
    // NodeTool may hold a password file in the machine's /tmp meanwhile).
    let tmp = lab.home.join("secrets-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let args = lab.run_args(
        "secrets",
        &[
            "--keyspace",
            "secrets",
            "-n",
            "200",
            "--replication-factor",
            "3",
            "--user",
            "cassandra",
            "--password",
            "hunter2-client",
            "--jmx",
            &jmx,
            "--jmx-user",
            "monitor",
            "--jmx-password=hunter2-jmx",
        ],
    );
    let o = common::caplab_command()
        .args(args.refs())
        .env("CAPLAB_HOME", &lab.home)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = result_json(&secret_out);
    assert!(doc["command"].as_array().unwrap().iter().any(|a| a == "***"));
    for f in common::files_under(&secret_out) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_string();
        assert!(!text.contains("hunter2"), "a secret in {}", f.display());
    }
    // Nothing is left there: no password file, nor NodeTool's working directory.
    let leftovers: Vec<PathBuf> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

/// A disk that fills up during the run: measuring goes on, the summary is printed, the
/// interval log and CSV keep every whole second written, no temporary file is left, and
/// the run says what is incomplete and exits 1.
#[test]
fn a_full_disk_keeps_every_whole_second() {
    let _jvm = jvm_lock();
    let lab = one();
    let disk = SmallDisk::mount(lab.home.join("small-disk"), 64);
    let full = disk.0.join("r");
    let o = lab.run("small-disk/r", &["--rate", "1000", "--duration", "25s"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Op rate") && out.contains("INCOMPLETE: latency.hlog"),
        "{out}"
    );
    assert!(
        stderr(&o).contains("latency.hlog cannot be written any more"),
        "{}",
        stderr(&o)
    );
    assert!(
        hlog_histograms(&full.join("latency.hlog")) > 0,
        "the log holds whole lines only"
    );
    let csv = std::fs::read_to_string(full.join("latency.csv")).unwrap();
    assert!(csv.lines().all(|l| l.split(',').count() == 14), "whole CSV rows only");
    assert!(!full.join("result.json.tmp").exists(), "no temporary file is left");
    drop(disk);
}
