//! The JIT compilers' activity on clusters caplab does not run here, read over JMX (`--jmx`), so
//! that an automatic warm-up waits for their JIT as it does on nodes it runs, instead of the
//! longer blind rule.
//!
//! One small JVM (`CaplabJit.java`, run by the JDK's single-file launcher with the `java` that
//! runs NodeTool) reads two platform MXBeans of every endpoint once a second: the compilers'
//! total compilation time (java.lang:type=Compilation) and the process's CPU time
//! (java.lang:type=OperatingSystem). The JIT's share of the server's CPU over a window is then
//! the compilation time over the CPU time. Compilation time is the compilers' elapsed time, so
//! on a busy server, where they wait for a core, the share reads higher than their CPU would:
//! the rule errs towards waiting longer. One JVM, started once for the warm-up and stopped when
//! it ends (unlike NodeTool, a JVM per reading); its CPU has not been measured apart. A watch
//! that cannot start or read (no JDK compiler, JMX unreachable or refused) says why once, and
//! the warm-up falls back to the blind rule.

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::cluster::nodetool::JmxTarget;

const SOURCE: &str = include_str!("CaplabJit.java");

/// The latest readings, summed over every endpoint (written by the reader thread).
#[derive(Default)]
struct Totals {
    compile_ms: AtomicU64,
    cpu_ns: AtomicU64,
    /// Rounds in which every endpoint has been read at least once.
    complete: AtomicU64,
    failure: OnceLock<String>,
    /// Set when caplab stops the JVM itself, whose end is then no failure.
    stopping: AtomicBool,
}

/// The running watch; dropping it stops its JVM.
pub struct JitWatch {
    child: Child,
    /// Held open: the JVM ends when it closes.
    _stdin: ChildStdin,
    totals: Arc<Totals>,
    last: Option<(u64, u64)>,
}

impl JitWatch {
    /// Starts reading `targets` (one run's `--jmx` endpoints, which share a JDK and credentials).
    pub fn start(targets: &[JmxTarget]) -> Result<JitWatch> {
        let first = targets.first().context("no JMX endpoint to watch")?;
        std::fs::create_dir_all(&first.workdir)?;
        let source = first.workdir.join("CaplabJit.java");
        std::fs::write(&source, SOURCE).with_context(|| format!("cannot write {}", source.display()))?;
        let endpoints: Vec<String> = targets.iter().map(|t| format!("{}:{}", t.host, t.port)).collect();
        let mut child = Command::new(&first.java)
            .args(["-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg(&source)
            .args(&endpoints)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", first.java.display()))?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        let secret = format!(
            "{}\n{}\n",
            first.user.as_deref().unwrap_or(""),
            first.password.as_deref().unwrap_or("")
        );
        stdin.write_all(secret.as_bytes())?;
        stdin.flush()?;
        let totals = Arc::new(Totals::default());
        let stdout = child.stdout.take().context("no stdout")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let t = totals.clone();
        std::thread::Builder::new()
            .name("caplab-jit-jmx".into())
            .spawn(move || read_lines(BufReader::new(stdout), stderr, &endpoints, &t))?;
        Ok(JitWatch {
            child,
            _stdin: stdin,
            totals,
            last: None,
        })
    }

    /// The JIT's CPU and the server's since the previous call, in core-seconds, summed over
    /// the endpoints; None before the first complete reading and once the watch has failed.
    pub fn tick(&mut self) -> Option<(f64, f64)> {
        if self.totals.failure.get().is_some() || self.totals.complete.load(Ordering::Acquire) == 0 {
            return None;
        }
        let now = (
            self.totals.compile_ms.load(Ordering::Acquire),
            self.totals.cpu_ns.load(Ordering::Acquire),
        );
        let before = self.last.replace(now).unwrap_or(now);
        Some((
            now.0.saturating_sub(before.0) as f64 / 1e3,
            now.1.saturating_sub(before.1) as f64 / 1e9,
        ))
    }

    /// Why the watch stopped reading, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.totals.failure.get().map(String::as_str)
    }
}

impl Drop for JitWatch {
    fn drop(&mut self) {
        self.totals.stopping.store(true, Ordering::Release);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the JVM's lines into `totals` until it ends; an error line, or an end without one,
/// is the watch's failure (with the JVM's last words on stderr, e.g. a JRE without a compiler).
fn read_lines(out: impl BufRead, mut err: impl std::io::Read, endpoints: &[String], totals: &Totals) {
    let mut latest: Vec<Option<(u64, u64)>> = vec![None; endpoints.len()];
    for line in out.lines() {
        let Ok(line) = line else { break };
        match parse(&line) {
            Some(Reading::Values(i, ms, ns)) if i < latest.len() => {
                latest[i] = Some((ms, ns));
                if latest.iter().all(Option::is_some) {
                    let (ms, ns) = latest.iter().flatten().fold((0, 0), |a, r| (a.0 + r.0, a.1 + r.1));
                    totals.compile_ms.store(ms, Ordering::Release);
                    totals.cpu_ns.store(ns, Ordering::Release);
                    totals.complete.fetch_add(1, Ordering::AcqRel);
                }
            }
            Some(Reading::Error(i, why)) => {
                let at = endpoints.get(i).map_or("?", String::as_str);
                fail(totals, format!("JMX {at}: {why}"));
                return;
            }
            _ => {}
        }
    }
    let mut text = String::new();
    let _ = err.read_to_string(&mut text);
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("it ended");
    fail(totals, format!("the JMX reader ended: {last}"));
}

fn fail(totals: &Totals, why: String) {
    if totals.stopping.load(Ordering::Acquire) {
        return;
    }
    if totals.failure.set(why.clone()).is_ok() {
        unwatched(&why);
    }
}

/// Says, once per run, that the JIT is not watched and what the warm-up does instead.
pub fn unwatched(why: &str) {
    eprintln!(
        "note: the servers' JIT cannot be watched over JMX ({why}); the automatic warm-up holds its rule longer \
         instead (as for clusters without --jmx)"
    );
}

#[derive(Debug, PartialEq)]
enum Reading {
    Values(usize, u64, u64),
    Error(usize, String),
}

/// `0 1234 5678901234` or `ERROR 0 java.net.ConnectException: Connection refused`.
fn parse(line: &str) -> Option<Reading> {
    if let Some(rest) = line.strip_prefix("ERROR ") {
        let (i, why) = rest.split_once(' ').unwrap_or((rest, ""));
        return Some(Reading::Error(i.parse().ok()?, why.to_string()));
    }
    let mut parts = line.split_whitespace().map(|v| v.parse::<u64>().ok());
    match (parts.next()??, parts.next()??, parts.next()??, parts.next()) {
        (i, ms, ns, None) => Some(Reading::Values(i as usize, ms, ns)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_readings_or_an_endpoints_error() {
        assert_eq!(
            parse("1 2500 9000000000"),
            Some(Reading::Values(1, 2500, 9_000_000_000))
        );
        assert_eq!(
            parse("ERROR 0 java.net.ConnectException: Connection refused"),
            Some(Reading::Error(
                0,
                "java.net.ConnectException: Connection refused".into()
            ))
        );
        assert_eq!(parse("Picked up JAVA_TOOL_OPTIONS: -Xss1m"), None);
        assert_eq!(parse("1 2 3 4"), None);
    }

    #[test]
    fn totals_sum_the_endpoints_once_each_has_been_read() {
        let endpoints = ["a:7199".to_string(), "b:7199".to_string()];
        let totals = Totals::default();
        let out = "0 100 1000000000\n1 50 2000000000\n0 400 3000000000\n";
        read_lines(out.as_bytes(), "".as_bytes(), &endpoints, &totals);
        assert_eq!(totals.compile_ms.load(Ordering::Relaxed), 450);
        assert_eq!(totals.cpu_ns.load(Ordering::Relaxed), 5_000_000_000);
        assert_eq!(totals.complete.load(Ordering::Relaxed), 2);
        assert!(
            totals.failure.get().unwrap().contains("ended"),
            "the JVM's end is a failure"
        );
        let totals = Totals::default();
        read_lines(
            "ERROR 1 Connection refused\n".as_bytes(),
            "".as_bytes(),
            &endpoints,
            &totals,
        );
        assert_eq!(totals.failure.get().unwrap(), "JMX b:7199: Connection refused");
    }
}
