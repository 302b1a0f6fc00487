//! Server facts read over JMX once a second, for the whole run: the JIT's compilation time,
//! the process's CPU, the heap in use, GC pauses, and Cassandra's compaction figures (pending
//! compactions, bytes compacted, SSTables touched per read). On clusters caplab does not run
//! (`--jmx`) they are the run's server timeline, and the automatic warm-up waits for their JIT
//! as it does on nodes it runs; on nodes it runs, whose GC log and /proc say the rest, they add
//! the compaction figures when the run's tables compact.
//!
//! One small JVM (`CaplabJmx.java`, run by the JDK's single-file launcher with the `java` that
//! runs NodeTool, or the machine's first JDK with a compiler when that one has none: `cluster::java::source_launcher`)
//! reads every endpoint half a second after each wall-clock second, so that each
//! interval caplab closes on a whole second finds one new reading (one that comes late leaves
//! its interval without figures, and the next covers both, by the reader's clock). Compilation
//! time is the compilers' elapsed time, so on a busy server, where they wait for a core, the
//! JIT's share reads higher than their CPU would: the warm-up errs towards waiting longer. A
//! watch that cannot start or read (no JDK compiler, JMX unreachable or refused) says why once;
//! the run goes on without these figures (and the warm-up falls back to the blind rule).

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::cluster::nodetool::{JmxTarget, jmx_hint};

const SOURCE: &str = include_str!("CaplabJmx.java");

/// One endpoint's reading: running totals, except the heap, the pending compactions and the
/// mean SSTables per read; None where the endpoint has no such figure (not a Cassandra).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Reading {
    compile_ms: f64,
    cpu_ns: f64,
    heap_bytes: f64,
    gc_pauses: f64,
    gc_ms: f64,
    pending: Option<f64>,
    compacted_bytes: Option<f64>,
    per_read_mean: Option<f64>,
    reads: Option<f64>,
    /// When the reader read the endpoint (ms since the epoch, the reader's clock).
    at_ms: f64,
}

/// The latest reading of every endpoint (written by the reader thread, read once an interval).
#[derive(Default)]
struct Shared {
    latest: Mutex<Vec<Option<Reading>>>,
    failure: OnceLock<String>,
    /// Set when caplab stops the JVM itself, whose end is then no failure.
    stopping: AtomicBool,
}

/// What the endpoints did between their previous reading and their latest, summed over them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JmxSecond {
    /// How long that was, by the reader's clock: about a second, more when a reading came late
    /// (the rates below are per second of it).
    pub length_s: f64,
    /// Compilation and process CPU, in seconds.
    pub jit_s: f64,
    pub cpu_s: f64,
    pub gc_pauses: f64,
    pub gc_ms: f64,
    pub heap_used_mb: f64,
    /// Compactions the nodes estimate they still have to do (a level, not a sum over time).
    pub pending_compactions: Option<f64>,
    pub compacted_mb: Option<f64>,
    /// SSTables touched per read: Cassandra's histogram's mean (a decaying reservoir, so a
    /// recent mean rather than this second's alone), weighted by each node's reads.
    pub sstables_per_read: Option<f64>,
}

/// The running watch; dropping it stops its JVM.
pub struct JmxWatch {
    child: Child,
    /// Held open: the JVM ends when it closes.
    _stdin: ChildStdin,
    shared: Arc<Shared>,
    last: Option<Vec<Reading>>,
}

impl JmxWatch {
    /// Starts reading `targets` (a run's endpoints, which share a JDK and credentials).
    pub fn start(targets: &[JmxTarget]) -> Result<JmxWatch> {
        let first = targets.first().context("no JMX endpoint to watch")?;
        std::fs::create_dir_all(&first.workdir)?;
        let source = first.workdir.join("CaplabJmx.java");
        std::fs::write(&source, SOURCE).with_context(|| format!("cannot write {}", source.display()))?;
        let endpoints: Vec<String> = targets.iter().map(|t| format!("{}:{}", t.host, t.port)).collect();
        let java = crate::cluster::java::source_launcher(&first.java);
        let mut child = Command::new(&java)
            .args(["-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg(&source)
            .args(&endpoints)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", java.display()))?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        stdin.write_all(secret_lines(first).as_bytes())?;
        stdin.flush()?;
        let shared = Arc::new(Shared {
            latest: Mutex::new(vec![None; endpoints.len()]),
            ..Shared::default()
        });
        let stdout = child.stdout.take().context("no stdout")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let s = shared.clone();
        let target = first.clone();
        std::thread::Builder::new()
            .name("caplab-jmx".into())
            .spawn(move || read_lines(BufReader::new(stdout), stderr, &endpoints, &target, &s))?;
        Ok(JmxWatch {
            child,
            _stdin: stdin,
            shared,
            last: None,
        })
    }

    /// What happened since the previous call; None until every endpoint has been read twice
    /// (the first reading is the baseline), once the watch has failed, and when some endpoint
    /// has no reading newer than the last call's (the reader came late on a busy machine): then
    /// the next call covers both intervals, rather than this one reading as no work at all.
    pub fn tick(&mut self) -> Option<JmxSecond> {
        if self.shared.failure.get().is_some() {
            return None;
        }
        let now: Vec<Reading> = {
            let latest = self.shared.latest.lock().unwrap_or_else(|p| p.into_inner());
            latest.iter().copied().collect::<Option<_>>()?
        };
        next_second(&mut self.last, now)
    }
}

/// The figures between `last` and `now`, which becomes `last`; None without a baseline, or while
/// an endpoint's reading is the one `last` holds (no new reading for it yet).
fn next_second(last: &mut Option<Vec<Reading>>, now: Vec<Reading>) -> Option<JmxSecond> {
    if let Some(before) = last
        && before.iter().zip(&now).any(|(a, b)| b.at_ms <= a.at_ms)
    {
        return None;
    }
    let before = last.replace(now.clone())?;
    Some(since(&before, &now))
}

/// What the reader reads on its standard input: the credentials, then the TLS settings (see
/// CaplabJmx.java), one a line, empty where none.
fn secret_lines(t: &JmxTarget) -> String {
    let mut lines = vec![
        t.user.clone().unwrap_or_default(),
        t.password.clone().unwrap_or_default(),
    ];
    if let Some(tls) = &t.tls {
        lines.push("tls".into());
        lines.extend(tls.values().map(Option::unwrap_or_default));
    } else {
        lines.push(String::new());
    }
    lines.iter().map(|l| format!("{}\n", l.replace('\n', ""))).collect()
}

/// The endpoints' figures between two readings of each.
fn since(before: &[Reading], now: &[Reading]) -> JmxSecond {
    let delta = |a: f64, b: f64| (b - a).max(0.0);
    let mut s = JmxSecond::default();
    let (mut weighted, mut reads) = (0.0, 0.0);
    for (a, b) in before.iter().zip(now) {
        s.length_s = s.length_s.max(delta(a.at_ms, b.at_ms) / 1e3);
        s.jit_s += delta(a.compile_ms, b.compile_ms) / 1e3;
        s.cpu_s += delta(a.cpu_ns, b.cpu_ns) / 1e9;
        s.gc_pauses += delta(a.gc_pauses, b.gc_pauses);
        s.gc_ms += delta(a.gc_ms, b.gc_ms);
        s.heap_used_mb += b.heap_bytes / 1_048_576.0;
        if let Some(p) = b.pending {
            *s.pending_compactions.get_or_insert(0.0) += p;
        }
        if let (Some(x), Some(y)) = (a.compacted_bytes, b.compacted_bytes) {
            *s.compacted_mb.get_or_insert(0.0) += delta(x, y) / 1_048_576.0;
        }
        if let (Some(mean), Some(x), Some(y)) = (b.per_read_mean, a.reads, b.reads) {
            weighted += mean * delta(x, y);
            reads += delta(x, y);
        }
    }
    s.sstables_per_read = (reads > 0.0).then(|| weighted / reads);
    s
}

impl Drop for JmxWatch {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the JVM's lines into `shared` until it ends; an error line, or an end without one,
/// is the watch's failure (with the JVM's last words on stderr, e.g. a JRE without a compiler).
fn read_lines(
    out: impl BufRead,
    mut err: impl std::io::Read,
    endpoints: &[String],
    target: &JmxTarget,
    shared: &Shared,
) {
    for line in out.lines() {
        let Ok(line) = line else { break };
        match parse(&line) {
            Some(Line::Values(i, r)) if i < endpoints.len() => {
                shared.latest.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            }
            Some(Line::Error(i, why)) => {
                let at = endpoints.get(i).map_or("?", String::as_str);
                fail(shared, format!("JMX {at}: {why}{}", jmx_hint(&why, target)));
                return;
            }
            _ => {}
        }
    }
    let mut text = String::new();
    let _ = err.read_to_string(&mut text);
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("it ended");
    fail(shared, format!("the JMX reader ended: {last}"));
}

fn fail(shared: &Shared, why: String) {
    if shared.stopping.load(Ordering::Acquire) {
        return;
    }
    if shared.failure.set(why.clone()).is_ok() {
        unwatched(&why);
    }
}

/// Says, once per run, that the servers are not read over JMX and what that leaves out.
pub fn unwatched(why: &str) {
    eprintln!(
        "note: the servers cannot be read over JMX ({why}): no per-second GC, CPU, JIT or compaction figures from \
         it, and an automatic warm-up holds its rule longer instead (as for clusters without --jmx)"
    );
}

#[derive(Debug, PartialEq)]
enum Line {
    Values(usize, Reading),
    Error(usize, String),
}

/// `0 1234 5678901234 …` (eleven numbers, -1 for a figure the endpoint lacks) or
/// `ERROR 0 java.net.ConnectException: Connection refused`.
fn parse(line: &str) -> Option<Line> {
    if let Some(rest) = line.strip_prefix("ERROR ") {
        let (i, why) = rest.split_once(' ').unwrap_or((rest, ""));
        return Some(Line::Error(i.parse().ok()?, why.to_string()));
    }
    let mut words = line.split_whitespace();
    let index: usize = words.next()?.parse().ok()?;
    let n: Vec<f64> = words.map(|w| w.parse().ok()).collect::<Option<_>>()?;
    let [
        compile_ms,
        cpu_ns,
        heap_bytes,
        gc_pauses,
        gc_ms,
        pending,
        compacted,
        mean,
        reads,
        at_ms,
    ] = n[..]
    else {
        return None;
    };
    let known = |v: f64| (v >= 0.0 && v.is_finite()).then_some(v);
    Some(Line::Values(
        index,
        Reading {
            compile_ms,
            cpu_ns,
            heap_bytes,
            gc_pauses,
            gc_ms,
            pending: known(pending),
            compacted_bytes: known(compacted),
            per_read_mean: known(mean),
            reads: known(reads),
            at_ms,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> JmxTarget {
        JmxTarget {
            java: "java".into(),
            classpath: "lib".into(),
            host: "h".into(),
            port: 7199,
            user: None,
            password: None,
            tls: None,
            workdir: "w".into(),
        }
    }

    #[test]
    fn credentials_and_tls_settings_go_on_standard_input_one_a_line() {
        let mut t = target();
        assert_eq!(secret_lines(&t), "\n\n\n");
        t.user = Some("monitor".into());
        t.password = Some("two\nlines".into());
        t.tls = Some(crate::cluster::nodetool::JmxTls {
            truststore: Some("/t.p12".into()),
            truststore_password: Some("tp".into()),
            keystore: None,
            keystore_password: None,
        });
        // Seven lines, as CaplabJmx.java reads them; a line break inside a value cannot shift them.
        assert_eq!(secret_lines(&t), "monitor\ntwolines\ntls\n/t.p12\ntp\n\n\n");
    }

    fn shared(n: usize) -> Shared {
        Shared {
            latest: Mutex::new(vec![None; n]),
            ..Shared::default()
        }
    }

    #[test]
    fn lines_are_readings_or_an_endpoints_error() {
        let Some(Line::Values(1, r)) = parse("1 2500 9000000000 104857600 3 40 2 1048576 1.5 10 1764650000500") else {
            panic!("a reading");
        };
        assert_eq!((r.compile_ms, r.gc_pauses, r.pending), (2500.0, 3.0, Some(2.0)));
        assert_eq!(
            (r.per_read_mean, r.reads, r.at_ms),
            (Some(1.5), Some(10.0), 1764650000500.0)
        );
        let Some(Line::Values(0, r)) = parse("0 1 2 3 4 5 -1 -1 -1 -1 6") else {
            panic!("a JVM that is no Cassandra");
        };
        assert_eq!((r.pending, r.compacted_bytes, r.per_read_mean), (None, None, None));
        assert_eq!(
            parse("ERROR 0 java.net.ConnectException: Connection refused"),
            Some(Line::Error(0, "java.net.ConnectException: Connection refused".into()))
        );
        assert_eq!(parse("Picked up JAVA_TOOL_OPTIONS: -Xss1m"), None);
        assert_eq!(parse("1 2 3 4"), None, "too few figures");
        assert_eq!(parse("0 1 2 3 4 5 -1 -1 -1 -1"), None, "no time of reading");
    }

    #[test]
    fn a_second_sums_the_endpoints_changes_and_weights_sstables_per_read_by_reads() {
        let r = |compile_ms: f64, cpu_ns, compacted, mean, reads| Reading {
            compile_ms,
            cpu_ns,
            heap_bytes: 512.0 * 1_048_576.0,
            gc_pauses: compile_ms / 100.0,
            gc_ms: compile_ms / 10.0,
            pending: Some(1.0),
            compacted_bytes: Some(compacted),
            per_read_mean: Some(mean),
            reads: Some(reads),
            at_ms: if reads > 0.0 { 2000.0 } else { 1000.0 },
        };
        let before = [r(100.0, 1e9, 0.0, 1.0, 0.0), r(200.0, 2e9, 0.0, 1.0, 0.0)];
        // Node a read 300 times at 1 SSTable a read, node b 100 times at 3: 1.5 in all.
        let now = [
            r(400.0, 2e9, 2.0 * 1_048_576.0, 1.0, 300.0),
            r(300.0, 2.5e9, 1_048_576.0, 3.0, 100.0),
        ];
        let s = since(&before, &now);
        assert!((s.jit_s - 0.4).abs() < 1e-9 && (s.cpu_s - 1.5).abs() < 1e-9, "{s:?}");
        assert_eq!(s.length_s, 1.0);
        assert!(
            (s.gc_pauses - 4.0).abs() < 1e-9 && (s.gc_ms - 40.0).abs() < 1e-9,
            "{s:?}"
        );
        assert_eq!(
            (s.heap_used_mb, s.pending_compactions, s.compacted_mb),
            (1024.0, Some(2.0), Some(3.0))
        );
        assert!((s.sstables_per_read.unwrap() - 1.5).abs() < 1e-9, "{s:?}");
        // No reads in the second: no figure, rather than a stale mean.
        assert_eq!(since(&now, &now).sstables_per_read, None);
    }

    #[test]
    fn a_late_reading_is_no_second_of_its_own_and_the_next_covers_both() {
        // On a loaded machine a second's JMX reading can come after caplab closed the
        // interval, which then read 0.0 server cores (the same reading twice).
        let at = |ms: f64, cpu_ns: f64| Reading {
            cpu_ns,
            at_ms: ms,
            ..Reading::default()
        };
        let mut last = None;
        assert_eq!(
            next_second(&mut last, vec![at(500.0, 0.0), at(501.0, 0.0)]),
            None,
            "a baseline"
        );
        let s = next_second(&mut last, vec![at(1500.0, 1e9), at(1501.0, 2e9)]).unwrap();
        assert_eq!((s.length_s, s.cpu_s), (1.0, 3.0));
        // The next interval closes before the reading of 2,500 ms arrives: no figures, not zeros.
        assert_eq!(next_second(&mut last, vec![at(1500.0, 1e9), at(1501.0, 2e9)]), None);
        // Nor while only one endpoint has been read again.
        assert_eq!(next_second(&mut last, vec![at(2500.0, 2e9), at(1501.0, 2e9)]), None);
        // Then one second holds both seconds' work, over the two seconds they took.
        let s = next_second(&mut last, vec![at(3500.0, 3e9), at(3501.0, 6e9)]).unwrap();
        assert_eq!((s.length_s, s.cpu_s), (2.0, 6.0));
    }

    #[test]
    fn the_watch_reports_once_every_endpoint_is_read_and_fails_on_an_error_line() {
        let endpoints = ["a:7199".to_string(), "b:7199".to_string()];
        let s = shared(2);
        let out = "0 100 1000000000 0 0 0 -1 -1 -1 -1 500\n1 50 2000000000 0 0 0 -1 -1 -1 -1 501\n";
        read_lines(out.as_bytes(), "".as_bytes(), &endpoints, &target(), &s);
        let latest = s.latest.lock().unwrap();
        assert!(latest.iter().all(Option::is_some), "{latest:?}");
        assert!(s.failure.get().unwrap().contains("ended"), "the JVM's end is a failure");
        let s = shared(2);
        read_lines(
            "ERROR 1 Connection refused\n".as_bytes(),
            "".as_bytes(),
            &endpoints,
            &target(),
            &s,
        );
        assert_eq!(s.failure.get().unwrap(), "JMX b:7199: Connection refused");
    }
}
