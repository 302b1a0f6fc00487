//! The performance history against real results: runs on a real node record themselves (labels
//! and figures as result.json has them, one series per configuration), importing the same
//! results again adds nothing, two writers at once and a writer killed mid-import lose and
//! double nothing, a newer schema is refused naming the versions, an older one is migrated
//! forward with its rows, a run's own interval is kept and drawn, a CI check fails at a real
//! regression (every operation 100 ms later) and confirms it by rerunning, and
//! the same history lives in a real PostgreSQL server this test starts (Debian's package) on
//! loopback. The gate's tests that need the machine to itself (a canary, a slowdown of the
//! machine confirmed and a noisy night not) are in tests/history_gate.rs.

mod common;

use common::{Lab, Shared, fails, history_json, jvm_lock, ok, result_json, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `caplab history --history DB import DIR…`, which must succeed; what it printed.
fn import(lab: &Lab, db: &str, dirs: &[&str]) -> String {
    let mut args = vec!["history", "--history", db, "import"];
    args.extend_from_slice(dirs);
    stdout(&ok(lab.caplab(&args)))
}

fn rows(db: &Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).unwrap()
}

/// The records in `db` as another process sees them now; 0 when it has no table yet (a
/// writer killed while creating the schema leaves none: that transaction never committed).
fn rows_so_far(db: &Path) -> i64 {
    // A writer stopped while it holds a lock (switching a new file to WAL) answers busy at
    // once: 0 so far, rather than waiting on a process that is not running.
    rusqlite::Connection::open(db)
        .and_then(|c| {
            c.busy_timeout(Duration::ZERO)?;
            c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        })
        .unwrap_or(0)
}

/// `n` copies of the run in `from`, each started a millisecond apart (a different result to
/// the history), under `under`.
fn copies(from: &Path, under: &Path, n: usize) -> Vec<PathBuf> {
    let doc = result_json(from);
    let started = doc["started_at"].as_str().unwrap().to_string();
    (0..n)
        .map(|i| {
            let dir = under.join(format!("copy-{i:03}"));
            std::fs::create_dir_all(&dir).unwrap();
            let mut d = doc.clone();
            d["started_at"] = format!("{}-{i:03}", started).into();
            std::fs::write(dir.join("result.json"), serde_json::to_vec(&d).unwrap()).unwrap();
            dir
        })
        .collect()
}

static LAB: Shared<String> = Shared::new();

/// The file's node and three runs recorded in the lab's own history: two of one configuration
/// (labels differ), one at another rate, so two series. The first is long enough (10 whole
/// seconds) for its own interval by sectioning. Returns the first run's stderr.
fn lab() -> &'static Lab {
    &shared().0
}

fn shared() -> &'static (Lab, String) {
    LAB.get("history", |lab| {
        ok(lab.start(&[]));
        let a = ok(lab.run(
            "base/run-a",
            &["--rate", "1000", "--duration", "10s", "--label", "commit=aaa"],
        ));
        ok(lab.run(
            "base/run-b",
            &["--rate", "1000", "--duration", "10s", "--label", "commit=bbb"],
        ));
        ok(lab.run("base/run-c", &["--rate", "500", "--duration", "3s"]));
        stderr(&a)
    })
}

#[test]
fn a_run_says_where_it_was_recorded_with_its_series() {
    let _jvm = jvm_lock();
    let (lab, err) = shared();
    let db = lab.home.join("history.db");
    assert!(
        err.contains(&format!("History: recorded in {} (series ", db.display())),
        "{err}"
    );
}

/// A PostgreSQL server of the test's own (initdb, trust on loopback), stopped when dropped.
struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

impl Postgres {
    fn start(dir: &Path) -> Option<Postgres> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("initdb").exists())?;
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            // initdb refuses to run as root: the server runs as Debian's postgres user.
            Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir)
                .status()
                .unwrap();
        }
        let pg = Postgres {
            dir: dir.to_path_buf(),
            bin,
            port: 54_000 + (std::process::id() % 1000) as u16,
        };
        let data = dir.join("data");
        pg.as_server(&[
            pg.bin.join("initdb").to_str().unwrap(),
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "--auth=trust",
        ]);
        let opts = format!("-p {} -k {} -c listen_addresses=127.0.0.1", pg.port, dir.display());
        pg.as_server(&[
            pg.bin.join("pg_ctl").to_str().unwrap(),
            "-D",
            data.to_str().unwrap(),
            "-o",
            &opts,
            "-l",
            dir.join("log").to_str().unwrap(),
            "-w",
            "start",
        ]);
        Some(pg)
    }

    fn as_server(&self, args: &[&str]) {
        assert!(
            self.try_as_server(args),
            "{args:?} failed: see {}",
            self.dir.join("log").display()
        );
    }

    fn try_as_server(&self, args: &[&str]) -> bool {
        let root = unsafe { libc::geteuid() } == 0;
        let status = if root {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .args(args)
                .status()
        } else {
            Command::new(args[0]).args(&args[1..]).status()
        };
        status.is_ok_and(|s| s.success())
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        self.try_as_server(&[
            self.bin.join("pg_ctl").to_str().unwrap(),
            "-D",
            data.to_str().unwrap(),
            "-m",
            "fast",
            "stop",
        ]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn one_series_per_configuration() {
    let _jvm = jvm_lock();
    let lab = lab();
    let list = history_json(lab, &[]);
    let series = list.as_array().unwrap();
    assert_eq!(series.len(), 2, "{list:#}");
    let at_1000 = series
        .iter()
        .find(|x| x["key"]["rate"] == 1000.0)
        .expect("the 1,000 op/s series");
    assert_eq!(at_1000["records"], 2);
    let id = at_1000["series"].as_str().unwrap();
    let one = history_json(lab, &[&id[..6]]);
    let recs = one["records"].as_array().unwrap();
    let labels: Vec<&str> = recs.iter().map(|r| r["labels"]["commit"].as_str().unwrap()).collect();
    assert_eq!(labels, ["aaa", "bbb"], "oldest first");
    let doc = result_json(&lab.home.join("base/run-a"));
    let total = &doc["summary"]["total"];
    let f = &recs[0]["figures"];
    assert_eq!(f["throughput"], total["op_rate"]);
    assert_eq!(f["p99_ms"], total["response"]["p99_ms"]);
    assert_eq!(f["p999_ms"], total["response"]["p999_ms"]);
    assert_eq!(f["errors"], total["error_total"]);
    assert_eq!(recs[0]["is_steady"], doc["steady_state"]["steady"]);
    // The run's own 95 % interval by sectioning: around its figure (as wide as its ten
    // sections differ, which they always do a little).
    for (figure, value) in [
        ("throughput", &total["op_rate"]),
        ("p99_ms", &total["response"]["p99_ms"]),
    ] {
        let b = &recs[0]["intervals"][figure];
        let (lo, hi, v) = (b[0].as_f64().unwrap(), b[1].as_f64().unwrap(), value.as_f64().unwrap());
        assert!(lo < v && v < hi, "{figure}: {v} in [{lo}, {hi}]");
    }
    assert_eq!(doc["labels"]["commit"], "aaa", "result.json keeps the labels");
    assert_eq!(one["key"]["version"], doc["environment"]["cassandra_release_version"]);
    let text = stdout(&ok(lab.caplab(&["history", &id[..8]])));
    assert!(text.contains("commit=aaa") && text.contains("commit=bbb"), "{text}");
}

#[test]
fn importing_again_adds_nothing() {
    let _jvm = jvm_lock();
    let lab = lab();
    let again = stdout(&ok(lab.caplab(&["history", "import", &lab.dir("base/run-a")])));
    assert!(again.contains("0 added, 1 already there"), "{again}");
    let other = lab.new_file("other.db");
    // The folder above the three runs the file's setup made (other tests add their own).
    let first = import(lab, &other, &[&lab.dir("base")]);
    assert!(first.contains("3 added, 0 already there, 0 unreadable"), "{first}");
    let second = import(lab, &other, &[&lab.dir("base")]);
    assert!(second.contains("0 added, 3 already there"), "{second}");
}

#[test]
fn two_writers_at_once() {
    let _jvm = jvm_lock();
    let lab = lab();
    let many = copies(&lab.home.join("base/run-a"), &lab.home.join("copies"), 60);
    let shared = lab.new_file("shared.db");
    let spawn = || {
        let mut c = common::caplab_command();
        c.args(["history", "--history", &shared, "import"]).args(&many);
        c.output().unwrap()
    };
    let (x, y) = std::thread::scope(|t| {
        let x = t.spawn(spawn);
        let y = t.spawn(spawn);
        (x.join().unwrap(), y.join().unwrap())
    });
    ok(x);
    ok(y);
    assert_eq!(rows(Path::new(&shared)), 60);
}

#[test]
fn a_killed_writer_leaves_whole_records() {
    let _jvm = jvm_lock();
    let lab = lab();
    let many = copies(&lab.home.join("base/run-a"), &lab.home.join("more"), 400);
    let killed = lab.new_file("killed.db");
    let mut child = common::caplab_command()
        .args(["history", "--history", &killed, "import"])
        .args(&many)
        .spawn()
        .unwrap();
    // Let it run in slices of 200 µs, stopped between them, until some records are there; then
    // kill it while it is stopped: it never finishes first (each record is a committed
    // transaction, far longer than a slice apart), and it is killed mid-import every time.
    // Killed while it created the schema, it would leave no table at all (a clean-clone CI
    // did): whole, but not what this scenario is about, so it is not killed before a record.
    let pid = child.id() as i32;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    loop {
        assert!(std::time::Instant::now() < deadline, "no record written in 60 s");
        unsafe { libc::kill(pid, libc::SIGCONT) };
        std::thread::sleep(Duration::from_micros(200));
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import finished between two looks"
        );
        if rows_so_far(Path::new(&killed)) > 0 {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = rows_so_far(Path::new(&killed));
    assert!((1..400).contains(&before), "killed mid-import: {before} of 400 records");
    let rest = import(lab, &killed, &[&lab.dir("more")]);
    assert!(
        rest.contains(&format!("{} added, {before} already there", 400 - before)),
        "{rest}"
    );
    assert_eq!(rows(Path::new(&killed)), 400);
}

#[test]
fn a_newer_schema_is_refused() {
    let _jvm = jvm_lock();
    let lab = lab();
    let newer = lab.new_file("newer.db");
    import(lab, &newer, &[&lab.dir("base/run-c")]);
    let c = rusqlite::Connection::open(&newer).unwrap();
    c.execute("UPDATE caplab_meta SET value = '99' WHERE key = 'schema_version'", [])
        .unwrap();
    c.execute("UPDATE caplab_meta SET value = '9.9.9' WHERE key = 'written_by'", [])
        .unwrap();
    drop(c);
    let err = fails(lab.caplab(&["history", "--history", &newer]));
    assert!(err.contains("schema version 99, written by caplab 9.9.9"), "{err}");
    assert!(err.contains("knows versions up to 6"), "{err}");
    // A run still succeeds, its results on disk, the history's refusal a warning.
    lab.fresh("run-d");
    let run = ok(lab.run("run-d", &["--rate", "500", "--duration", "2s", "--history", &newer]));
    assert!(
        stderr(&run).contains("warning: not recorded in the history"),
        "{}",
        stderr(&run)
    );
}

/// A history as caplab wrote it at schema 1 (no intervals, sittings, events or spreads): caplab
/// takes it forward, keeping every row; a run recorded then gets its intervals when imported
/// again.
#[test]
fn an_older_schema_is_migrated() {
    let _jvm = jvm_lock();
    let lab = lab();
    let old = lab.new_file("old.db");
    import(lab, &old, &[&lab.dir("base/run-a"), &lab.dir("base/run-c")]);
    let c = rusqlite::Connection::open(&old).unwrap();
    for f in ["throughput", "p50_ms", "p99_ms", "p999_ms", "capacity"] {
        for end in ["lo", "hi"] {
            c.execute(&format!("ALTER TABLE runs DROP COLUMN {f}_{end}"), [])
                .unwrap();
        }
    }
    c.execute("ALTER TABLE runs DROP COLUMN sitting", []).unwrap();
    c.execute("ALTER TABLE runs DROP COLUMN other_cpu_cores", []).unwrap();
    c.execute("ALTER TABLE runs DROP COLUMN steal_cores", []).unwrap();
    c.execute("DROP TABLE events", []).unwrap();
    c.execute("DROP TABLE spreads", []).unwrap();
    c.execute("UPDATE caplab_meta SET value = '1' WHERE key = 'schema_version'", [])
        .unwrap();
    drop(c);
    let list = history_json(lab, &["--history", &old]);
    assert_eq!(list.as_array().unwrap().len(), 2, "both series kept: {list:#}");
    let version: String = rusqlite::Connection::open(&old)
        .unwrap()
        .query_row("SELECT value FROM caplab_meta WHERE key = 'schema_version'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(version, "6");
    assert_eq!(rows(Path::new(&old)), 2);
    let id = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["key"]["rate"] == 1000.0)
        .unwrap()["series"]
        .as_str()
        .unwrap()[..8]
        .to_string();
    let one = history_json(lab, &["--history", &old, &id]);
    assert_eq!(one["records"][0]["intervals"], serde_json::json!({}), "none before");
    // A row from before sittings were kept is read as its host's sitting on its day.
    let doc = result_json(&lab.home.join("base/run-a"));
    let day = &doc["started_at"].as_str().unwrap()[..10];
    let host = doc["environment"]["client_host"].as_str().unwrap();
    assert_eq!(one["records"][0]["sitting"], format!("{host} {day}"), "{one:#}");
    let again = import(lab, &old, &[&lab.dir("base/run-a")]);
    assert!(again.contains("0 added, 1 already there"), "{again}");
    let one = history_json(lab, &["--history", &old, &id]);
    assert!(one["records"][0]["intervals"]["throughput"].is_array(), "{one:#}");
    assert_eq!(rows(Path::new(&old)), 2);
    let page = lab.home.join("old-history.html");
    ok(lab.caplab(&["history", "--history", &old, "page", "--out", page.to_str().unwrap()]));
    let seen = common::browse(&page);
    seen.assert_clean();
    assert_eq!(
        seen.check["intervals"][format!("chart-{id}-throughput")],
        1,
        "{}",
        seen.check
    );
}

/// Two busy loops beside a run take the cores it runs on: result.json says what other processes
/// used of them and calls the run disturbed, the history keeps it, and a nightly check whose
/// latest run was disturbed does not judge the night: it exits 3 naming the other load, and
/// `--include-disturbed` judges it anyway (three runs: nothing can be found yet, exit 0). The
/// loops take at least half a core whatever else the suite runs beside them, against a threshold
/// of a quarter: the run is disturbed on any machine of two cores or more.
#[test]
fn a_night_beside_busy_loops_is_not_judged() {
    let _jvm = jvm_lock();
    let lab = lab();
    let db = lab.new_file("disturbed.db");
    let run = |name: &str| {
        lab.fresh(name);
        ok(lab.run(name, &["--rate", "500", "--duration", "3s", "--history", &db]));
        result_json(&lab.home.join(name))
    };
    run("night-1");
    run("night-2");
    struct Loops(Vec<std::process::Child>);
    impl Drop for Loops {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let loops = Loops(
        (0..2)
            .map(|_| Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap())
            .collect(),
    );
    let busy = run("night-3");
    drop(loops);
    let machine = &busy["server"]["machine"];
    assert!(machine["other_cpu_cores"].as_f64().unwrap() >= 0.25, "{machine}");
    assert!(
        machine["disturbed"].as_str().unwrap().contains("other processes used"),
        "{machine}"
    );
    let checked = lab.caplab(&["history", "--history", &db, "check"]);
    let text = stdout(&checked);
    assert_eq!(checked.status.code(), Some(3), "{text}");
    assert!(
        text.contains("DISTURBED") && text.contains("other processes used") && text.contains("NOT JUDGED"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&lab.caplab(&["history", "--history", &db, "check", "--json"]))).unwrap();
    assert!(
        json["disturbed"][0]["load"]["other_cpu_cores"].as_f64().unwrap() >= 0.25,
        "{json:#}"
    );
    let anyway = lab.caplab(&["history", "--history", &db, "--include-disturbed", "check"]);
    assert_eq!(anyway.status.code(), Some(0), "{}", stdout(&anyway));
}

#[test]
fn a_ci_check_fails_at_a_real_regression() {
    let _jvm = jvm_lock();
    let lab = lab();
    let db = lab.new_file("ci.db");
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec!["--rate", "500", "--duration", "3s", "--history", &db];
        args.extend_from_slice(extra);
        // Empty, as the history is: a retried test runs again rather than being refused.
        lab.fresh(name);
        ok(lab.run(name, &args));
    };
    for i in 0..5 {
        run(&format!("ci-good{i}"), &["--label", &format!("commit=good{i}")]);
    }
    // This file shares the machine with other test files, so its runs are disturbed (other
    // processes on their cores): the check is told to judge them all the same, as a series that
    // always runs beside other work is (a_night_beside_busy_loops_is_not_judged checks the
    // default).
    let check = |extra: &[&str]| {
        let mut args = vec!["history", "--history", &db, "--include-disturbed", "check"];
        args.extend_from_slice(extra);
        lab.caplab(&args)
    };
    // Five runs cannot hold a change of at least three runs each side: the check passes and
    // says that its passing means nothing yet.
    let passed = stdout(&ok(check(&[])));
    assert!(
        passed.contains("1 of 1 series have fewer than 6 runs: no change can be found in them yet"),
        "{passed}"
    );
    // The known change: every operation 100 ms later, through the fault proxy, from the sixth
    // run on. This file shares the machine with other test files, whose load moves the runs'
    // p50 by tens of milliseconds on a slow sitting, enough to hide a 2 or 20 ms change
    // (bench/results/test-margins.md, history-known-change). The gate and the confirmation
    // compare logs: the delay is what makes the change large beside the load's noise (log 100/5
    // = 3, against log 20/5 = 1.4), and half the rate halves what the runs ask of the shared
    // cores.
    for i in 0..3 {
        run(
            &format!("ci-bad{i}"),
            &[
                "--label",
                &format!("commit=bad{i}"),
                "--fault",
                "delay node1 at 0s for 3s by 100ms",
            ],
        );
    }
    let failed = check(&[]);
    assert_eq!(failed.status.code(), Some(1), "{}", stdout(&failed));
    let text = stdout(&failed);
    assert!(
        text.contains("REGRESSION p50_ms") && text.contains("commit=bad0"),
        "{text}"
    );
    // The eight runs are one sitting (one host, boot and day): the change is found among its
    // runs.
    assert!(
        text.contains("over 5 runs")
            && text.contains("over 3 runs, levels at 95 %;")
            && text.contains("within its sitting"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&check(&["--json"]))).unwrap();
    let p50 = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["figure"] == "p50_ms")
        .unwrap()
        .clone();
    assert_eq!(p50["labels"]["commit"], "bad0");
    assert_eq!(p50["kind"], "regression");
    assert!(p50["ratio"].as_f64().unwrap() > 2.0, "{p50}");
    // An improvement-only check, or one that never fails, passes.
    ok(check(&["--fail-on", "never"]));

    // The page, in a real browser: one chart per figure measured, every run a point, the
    // change drawn where the check found it, each point's run page linked.
    let page = lab.home.join("ci-history.html");
    ok(lab.caplab(&[
        "history",
        "--history",
        &db,
        "--include-disturbed",
        "page",
        "--out",
        page.to_str().unwrap(),
    ]));
    let seen = common::browse(&page);
    seen.assert_clean();
    let id = &p50["series"].as_str().unwrap()[..8];
    let chart = format!("chart-{id}-p50_ms");
    assert_eq!(seen.points(&chart), Some(8), "{}", seen.check);
    assert_eq!(seen.check["changes"][&chart], 1, "{}", seen.check);
    assert!(seen.dom.contains("REGRESSION p50_ms"), "the change is listed");
    assert!(seen.dom.contains("ci-bad0/report.html"), "points link their run pages");

    // The runs after the change ran another command (the fault) than those before: `check
    // --confirm` reruns both, paired by round in a random order, and finds the change is the
    // configuration's (p50 several times; the first look, after 2 rounds, needs t > 19). Every
    // failing figure of the series is read from the same reruns.
    let confirmed = check(&["--confirm", "--confirm-runs", "4"]);
    let text = stdout(&confirmed);
    assert_eq!(confirmed.status.code(), Some(1), "{text}\n{}", stderr(&confirmed));
    assert!(
        text.contains("CONFIRMED after") && text.contains("paired by round") && text.contains("both were rerun"),
        "{text}"
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(lab.home.join("confirm"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one confirmation a series: {dirs:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dirs[0].join("confirmation.json")).unwrap()).unwrap();
    let done = match doc.as_array() {
        Some(all) => all.clone(),
        None => vec![doc.clone()],
    };
    let failing = text.matches("REGRESSION ").count();
    assert_eq!(done.len(), failing, "{text}");
    let p50 = done.iter().find(|c| c["figure"] == "p50_ms").expect("p50 confirmed");
    assert_eq!(
        (&p50["design"], &p50["verdict"]),
        (&"paired".into(), &"confirmed".into()),
        "{p50:#}"
    );
    assert!(p50["looks"][0]["to_before"].as_f64().unwrap() > 2.0, "{p50:#}");
    assert!(p50["differs"].to_string().contains("--fault"), "{p50:#}");
    let runs: std::collections::BTreeSet<String> = done
        .iter()
        .flat_map(|c| {
            c["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_string())
        })
        .collect();
    let before = runs.iter().filter(|r| r.ends_with("-before")).count();
    assert!(
        before >= 2 && runs.len() == 2 * before && before <= 4,
        "one pair a round, shared by the {failing} figures: {runs:?}"
    );
}

#[test]
fn in_postgresql() {
    let _jvm = jvm_lock();
    let lab = lab();
    // Under /tmp: the server's user must reach its directory, which a home under /root hides.
    let Some(pg) = Postgres::start(&std::env::temp_dir().join(format!("caplab-history-pg-{}", std::process::id())))
    else {
        panic!("PostgreSQL's server is not installed: scripts/setup.sh --test installs it (Debian's postgresql)");
    };
    let url = pg.url();
    lab.fresh("run-pg");
    let run = ok(lab.run(
        "run-pg",
        &[
            "--rate",
            "500",
            "--duration",
            "3s",
            "--label",
            "commit=ccc",
            "--history",
            &url,
        ],
    ));
    assert!(
        stderr(&run).contains("History: recorded in postgres://"),
        "{}",
        stderr(&run)
    );
    let imported = import(lab, &url, &[&lab.dir("base/run-c"), &lab.dir("run-pg")]);
    assert!(imported.contains("1 added, 1 already there"), "{imported}");
    let list = history_json(lab, &["--history", &url]);
    let series = list.as_array().unwrap();
    assert_eq!(series.len(), 1, "{list:#}");
    assert_eq!(series[0]["records"], 2);
    let doc = result_json(&lab.home.join("run-pg"));
    let last = &series[0]["last"];
    assert_eq!(last["labels"]["commit"], "ccc");
    assert_eq!(last["figures"]["throughput"], doc["summary"]["total"]["op_rate"]);
}
