//! Capturing what an application sends (`caplab capture`): Cassandra's full query log (FQL,
//! `nodetool enablefullquerylog`) turned on for a while on caplab's nodes, then its binlog read
//! into a trace: one JSON object a line per query or batch, with the node that coordinated it,
//! its start (milliseconds since the epoch, as Cassandra logs it), keyspace, statement or
//! statements, bound values (the driver's bytes, in hex), consistency, serial consistency, page
//! size and batch type, in start order across the nodes. The binlog is read by a small Java
//! program on the node's own jars (`CaplabFql.java`), so what Cassandra wrote is decoded by the
//! classes that wrote it. caplab sends the cluster nothing but the nodetool commands that turn
//! the log on and off; the raw log is kept beside the trace (`fqltool` reads it too).

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::node::NodeState;
use crate::cluster::{java, nodetool};

const READER: &str = include_str!("CaplabFql.java");
const QUIET_LOGBACK: &str = r#"<configuration><root level="OFF"/></configuration>"#;

/// What to capture, and where.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// How long the log stays on.
    pub length: Duration,
    /// The trace file (JSON lines); the raw logs go to a folder beside it (`raw_dir`).
    pub out: PathBuf,
    /// Keep the statements a driver sends about the cluster itself (system keyspaces), which a
    /// replay would not send as the application's traffic.
    pub keep_system: bool,
}

/// What a capture wrote.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub queries: usize,
    pub batches: usize,
    /// Entries left out as statements about the cluster itself.
    pub system: usize,
    /// Distinct statement texts among what was kept.
    pub statements: usize,
    pub seconds: f64,
    pub raw: PathBuf,
}

/// The folder the raw full query logs go to, one per node: `trace.jsonl` → `trace.fql/`.
pub fn raw_dir(out: &Path) -> PathBuf {
    out.with_extension("fql")
}

/// Turns the full query log on for every node, waits `opts.length` (or until `stop`), turns it
/// off on every node it was turned on for (whatever happened meanwhile), and writes the trace.
pub fn capture(
    nodes: &[NodeState],
    opts: &CaptureOptions,
    stop: &dyn Fn() -> bool,
    say: &mut dyn FnMut(&str),
) -> Result<Captured> {
    if nodes.is_empty() {
        bail!("no node to capture from: start caplab's nodes first (caplab node start)");
    }
    let raw = raw_dir(&opts.out);
    let _ = std::fs::remove_dir_all(&raw);
    let mut on = Vec::new();
    let began = Instant::now();
    let enabled = nodes.iter().try_for_each(|n| {
        let dir = raw.join(&n.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.to_string_lossy().into_owned();
        nodetool::run(n, &["enablefullquerylog", "--path", &path], Duration::from_secs(60))
            .with_context(|| format!("cannot turn the full query log on on {}", n.name))?;
        on.push(n);
        Ok::<_, anyhow::Error>(())
    });
    if enabled.is_ok() {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        say(&format!(
            "Capturing the full query log of {} for {} (Ctrl-C ends it early)",
            names.join(", "),
            humantime::format_duration(opts.length)
        ));
        while began.elapsed() < opts.length && !stop() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    let mut off = Ok(());
    for n in on {
        let done = nodetool::run(n, &["disablefullquerylog"], Duration::from_secs(60));
        if let Err(e) = done {
            off = Err(e.context(format!(
                "cannot turn the full query log off on {}: turn it off with nodetool disablefullquerylog",
                n.name
            )));
        }
    }
    enabled?;
    off?;
    let mut entries = Vec::new();
    for n in nodes {
        entries.extend(read_log(n, &raw.join(&n.name))?);
    }
    write_trace(entries, opts, seconds, raw)
}

/// Every entry of one node's full query log, each with the node's name.
fn read_log(node: &NodeState, dir: &Path) -> Result<Vec<Value>> {
    let source = dir.join("CaplabFql.java");
    std::fs::write(&source, READER)?;
    let logback = dir.join("logback-reader.xml");
    std::fs::write(&logback, QUIET_LOGBACK)?;
    let part = dir.join("entries.jsonl");
    // The node's own module flags: Chronicle Queue needs what Cassandra's JVM is given.
    let modules = node.command.iter().filter(|a| a.starts_with("--add-"));
    let out = Command::new(java::source_launcher(&node.spec.jdk.java))
        .args(modules)
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .arg(format!("-Dlogback.configurationFile={}", logback.display()))
        .arg("-cp")
        .arg(format!("{}/*", node.classpath.display()))
        .arg(&source)
        .arg(dir)
        .arg(&part)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run the full query log's reader for {}", node.name))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let why = reason(&err);
        bail!(
            "cannot read the full query log in {}: {why} (is it a full query log written by Cassandra {}?)",
            dir.display(),
            node.spec.version
        );
    }
    let text = std::fs::read_to_string(&part).with_context(|| format!("cannot read {}", part.display()))?;
    text.lines()
        .map(|line| {
            let mut v: Value = serde_json::from_str(line)
                .with_context(|| format!("{}: an entry that is not JSON: {line}", part.display()))?;
            v["node"] = Value::String(node.name.clone());
            Ok(v)
        })
        .collect()
}

/// The line of a failed JVM's stderr that says why: the last exception or error named in it
/// (a stack trace's innermost cause), else its last line.
fn reason(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| !l.starts_with("at ") && (l.contains("Exception") || l.contains("Error")))
        .or(lines.last())
        .copied()
        .unwrap_or("no reason given")
}

/// Whether an entry only asks about the cluster itself (a driver's metadata and monitoring
/// queries on the system keyspaces).
pub fn is_system(entry: &Value) -> bool {
    let keyspace = entry["keyspace"].as_str().unwrap_or("");
    let texts: Vec<&str> = match entry["queries"].as_array() {
        Some(q) => q.iter().filter_map(Value::as_str).collect(),
        None => entry["query"].as_str().into_iter().collect(),
    };
    keyspace.starts_with("system") || (!texts.is_empty() && texts.iter().all(|t| names_system_table(t)))
}

/// Whether a statement names a table of a system keyspace: `system.` or `system_NAME.` (quoted
/// or not) as a word of its own, so a column such as `system_id` is no system table.
fn names_system_table(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let bytes = t.as_bytes();
    t.match_indices("system").any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return false;
        }
        let rest = t[at + "system".len()..].trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        rest.trim_start_matches('"').starts_with('.')
    })
}

fn write_trace(mut entries: Vec<Value>, opts: &CaptureOptions, seconds: f64, raw: PathBuf) -> Result<Captured> {
    entries.sort_by_key(|e| e["start_ms"].as_i64().unwrap_or(0));
    let mut done = Captured {
        seconds,
        raw,
        ..Captured::default()
    };
    let mut statements = std::collections::BTreeSet::new();
    let mut text = String::new();
    for e in entries {
        if !opts.keep_system && is_system(&e) {
            done.system += 1;
            continue;
        }
        match e["queries"].as_array() {
            Some(q) => {
                done.batches += 1;
                statements.extend(q.iter().filter_map(Value::as_str).map(String::from));
            }
            None => {
                done.queries += 1;
                statements.extend(e["query"].as_str().map(String::from));
            }
        }
        text.push_str(&e.to_string());
        text.push('\n');
    }
    done.statements = statements.len();
    crate::files::write_atomic(&opts.out, text.as_bytes())?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_drivers_questions_about_the_cluster_are_system_and_the_applications_are_not() {
        let q = |ks: Option<&str>, query: &str| json!({"keyspace": ks, "query": query});
        assert!(is_system(&q(None, "SELECT * FROM system.peers")));
        assert!(is_system(&q(None, "SELECT keyspace_name FROM system_schema.tables")));
        assert!(is_system(&q(Some("system"), "SELECT * FROM local")));
        assert!(!is_system(&q(None, "INSERT INTO caplab.e1_insert (pk) VALUES (?)")));
        assert!(!is_system(&q(Some("shop"), "SELECT * FROM orders WHERE id = ?")));
        assert!(!is_system(&q(
            None,
            "SELECT system_id FROM app.machines WHERE system_id = ?"
        )));
        assert!(!is_system(&q(None, "SELECT * FROM app.mysystem_log")));
        assert!(is_system(&q(None, "SELECT * FROM \"system_views\".clients")));
        let batch = json!({"keyspace": null, "queries": ["INSERT INTO system_x.t (k) VALUES (?)", "INSERT INTO app.t (k) VALUES (?)"]});
        assert!(
            !is_system(&batch),
            "a batch that writes the application's table is the application's"
        );
    }

    #[test]
    fn a_failed_readers_reason_is_its_innermost_cause() {
        let trace = "Exception in thread \"main\" java.lang.IllegalStateException: bad queue\n\
                     \tat net.openhft.X.y(X.java:1)\n\
                     Caused by: java.io.IOException: not a queue file: /x/1.cq4\n\
                     \tat net.openhft.X.z(X.java:2)\n\
                     \t... 5 more\n";
        assert_eq!(
            reason(trace),
            "Caused by: java.io.IOException: not a queue file: /x/1.cq4"
        );
        assert_eq!(reason("error: compilation failed\n"), "error: compilation failed");
        assert_eq!(reason(""), "no reason given");
    }

    #[test]
    fn the_raw_logs_go_beside_the_trace() {
        assert_eq!(raw_dir(Path::new("/x/trace.jsonl")), PathBuf::from("/x/trace.fql"));
        assert_eq!(raw_dir(Path::new("trace")), PathBuf::from("trace.fql"));
    }
}
