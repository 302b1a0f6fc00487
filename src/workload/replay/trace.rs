//! A captured trace read for replay (`caplab capture` writes it: docs/capture.md): each line a
//! query or a batch with its start, keyspace, statement or statements, bound values in hex,
//! consistency, serial consistency, page size and client timestamp. Everything is decoded once
//! here: statements and batch shapes are numbered by their first appearance, values held as the
//! bytes the application bound, so replaying an entry builds nothing.

use anyhow::{Context, Result, bail};
use scylla::statement::{Consistency, SerialConsistency};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// A statement's text as the application sent it, with the keyspace its session was in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Text {
    pub keyspace: Option<String>,
    pub cql: String,
}

/// What one entry sends: statement `n`, or batch shape `n` (its type and statements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Query(usize),
    Batch(usize),
}

/// A batch as the application built it: its type and its statements, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BatchShape {
    pub kind: String,
    pub statements: Vec<usize>,
}

/// One value as bound: the bytes the driver serialized, or null.
pub type Value = Option<Box<[u8]>>;

/// One query or batch of the trace.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Milliseconds since the trace's first entry.
    pub at_ms: u64,
    pub sent: Sent,
    /// One row of values per statement (a query has one).
    pub rows: Box<[Box<[Value]>]>,
    pub consistency: Consistency,
    pub serial: Option<SerialConsistency>,
    /// Rows per page asked (None: unpaged).
    pub page_size: Option<i32>,
    /// The client's timestamp in microseconds, when it gave one.
    pub timestamp: Option<i64>,
}

/// A whole trace, decoded.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub texts: Vec<Text>,
    pub batches: Vec<BatchShape>,
    pub entries: Vec<Entry>,
    /// Schema statements (CREATE, ALTER, DROP, TRUNCATE, USE, DESCRIBE …) left out: a replay sends the
    /// application's reads and writes into a schema made before it.
    pub schema_left_out: usize,
    /// Milliseconds since the epoch of the first entry.
    pub first_ms: i64,
}

#[derive(Deserialize)]
struct Line {
    start_ms: i64,
    keyspace: Option<String>,
    query: Option<String>,
    batch_type: Option<String>,
    queries: Option<Vec<String>>,
    values: serde_json::Value,
    consistency: String,
    serial_consistency: Option<String>,
    page_size: Option<String>,
    timestamp: Option<i64>,
}

/// Whether a statement changes the schema or the session rather than reading or writing data.
pub fn is_schema(cql: &str) -> bool {
    let first = cql.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
    matches!(
        first.as_str(),
        "CREATE" | "ALTER" | "DROP" | "TRUNCATE" | "USE" | "GRANT" | "REVOKE" | "LIST" | "DESCRIBE" | "DESC"
    )
}

fn hex(text: &str) -> Option<Box<[u8]>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn row(v: &serde_json::Value) -> Option<Box<[Value]>> {
    v.as_array()?
        .iter()
        .map(|x| match x {
            serde_json::Value::Null => Some(None),
            serde_json::Value::String(s) => hex(s).map(Some),
            _ => None,
        })
        .collect()
}

impl Trace {
    /// Reads a trace file; a line that is not a trace entry is named with its number.
    pub fn read(path: &Path) -> Result<Trace> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the trace {} (caplab capture writes one)", path.display()))?;
        Trace::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, name: &str) -> Result<Trace> {
        let mut t = Trace::default();
        let mut texts: HashMap<Text, usize> = HashMap::new();
        let mut shapes: HashMap<BatchShape, usize> = HashMap::new();
        let mut number = |t: &mut Trace, text: Text| {
            *texts.entry(text.clone()).or_insert_with(|| {
                t.texts.push(text);
                t.texts.len() - 1
            })
        };
        let mut first = None;
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let bad = |why: &str| anyhow::anyhow!("{name} line {}: {why} (caplab capture writes a trace)", n + 1);
            let l: Line = serde_json::from_str(line).map_err(|e| bad(&format!("not a trace entry: {e}")))?;
            let statements = match (&l.query, &l.queries) {
                (Some(q), None) => vec![q.clone()],
                (None, Some(qs)) if !qs.is_empty() => qs.clone(),
                _ => return Err(bad("neither a query nor a batch of queries")),
            };
            if statements.iter().any(|s| is_schema(s)) {
                t.schema_left_out += 1;
                continue;
            }
            let rows: Vec<Box<[Value]>> = match &l.query {
                Some(_) => vec![row(&l.values).ok_or_else(|| bad("its values are not a list of hex strings"))?],
                None => l
                    .values
                    .as_array()
                    .filter(|rows| rows.len() == statements.len())
                    .ok_or_else(|| bad("a batch needs one list of values per statement"))?
                    .iter()
                    .map(|r| row(r).ok_or_else(|| bad("its values are not lists of hex strings")))
                    .collect::<Result<_>>()?,
            };
            let ids: Vec<usize> = statements
                .into_iter()
                .map(|cql| {
                    let keyspace = l.keyspace.clone();
                    number(&mut t, Text { keyspace, cql })
                })
                .collect();
            let sent = match &l.batch_type {
                None if ids.len() == 1 && l.query.is_some() => Sent::Query(ids[0]),
                kind => {
                    let shape = BatchShape {
                        kind: kind.clone().unwrap_or_else(|| "LOGGED".into()),
                        statements: ids,
                    };
                    let next = shapes.len();
                    let id = *shapes.entry(shape.clone()).or_insert(next);
                    if id == next {
                        t.batches.push(shape);
                    }
                    Sent::Batch(id)
                }
            };
            let start = *first.get_or_insert(l.start_ms);
            if l.start_ms < start {
                return Err(bad("entries are not in order of their start"));
            }
            t.entries.push(Entry {
                at_ms: (l.start_ms - start) as u64,
                sent,
                rows: rows.into_boxed_slice(),
                consistency: crate::client::parse_consistency(&l.consistency).map_err(|e| bad(&e.to_string()))?,
                serial: match l.serial_consistency.as_deref() {
                    Some("SERIAL") => Some(SerialConsistency::Serial),
                    Some("LOCAL_SERIAL") => Some(SerialConsistency::LocalSerial),
                    _ => None,
                },
                page_size: l.page_size.and_then(|p| p.parse::<i32>().ok()).filter(|p| *p > 0),
                timestamp: l.timestamp.filter(|ts| *ts != i64::MIN),
            });
        }
        if t.entries.is_empty() {
            bail!(
                "{name} holds no reads or writes to replay ({} schema statements left out)",
                t.schema_left_out
            );
        }
        t.first_ms = first.unwrap_or_default();
        Ok(t)
    }

    /// The entries counted by the millisecond they started in: what the replay's shape is made
    /// of (`engine::Shape::of_times`).
    pub fn counts(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for e in &self.entries {
            match out.last_mut() {
                Some((ms, n)) if *ms == e.at_ms => *n += 1,
                _ => out.push((e.at_ms, 1)),
            }
        }
        out
    }

    /// The keyspaces the trace's statements use (the keyspace `--keyspace` moves it from).
    pub fn keyspaces(&self) -> Vec<String> {
        keyspaces(&self.texts)
    }
}

/// The keyspaces statements use: their sessions', and those qualifying their tables.
pub fn keyspaces(texts: &[Text]) -> Vec<String> {
    let mut ks: Vec<String> = texts.iter().filter_map(|t| t.keyspace.clone()).collect();
    ks.extend(texts.iter().flat_map(|t| super::rename::qualifiers(&t.cql)));
    ks.sort();
    ks.dedup();
    ks
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"start_ms":1000,"keyspace":null,"query":"CREATE TABLE app.t (k int PRIMARY KEY, v text)","values":[],"consistency":"ONE","serial_consistency":"SERIAL","page_size":"-1","timestamp":-9223372036854775808}
{"start_ms":1005,"keyspace":"app","query":"INSERT INTO t (k, v) VALUES (?, ?)","values":["00000001",null],"consistency":"LOCAL_QUORUM","serial_consistency":"LOCAL_SERIAL","page_size":"-1","timestamp":1700000000000000}
{"start_ms":1005,"keyspace":"app","query":"SELECT v FROM t WHERE k = ?","values":["00000001"],"consistency":"ONE","serial_consistency":"SERIAL","page_size":"5000","timestamp":-9223372036854775808}
{"start_ms":1012,"keyspace":"app","batch_type":"UNLOGGED","queries":["INSERT INTO t (k, v) VALUES (?, ?)","INSERT INTO t (k, v) VALUES (?, ?)"],"values":[["00000002","61"],["00000003","62"]],"consistency":"ONE","serial_consistency":"SERIAL","page_size":"-1","timestamp":-9223372036854775808}
{"start_ms":1013,"keyspace":"app","query":"INSERT INTO t (k, v) VALUES (?, ?)","values":["00000004","63"],"consistency":"ONE","serial_consistency":"SERIAL","page_size":"-1","timestamp":-9223372036854775808}
"#;

    #[test]
    fn a_trace_is_decoded_once_with_its_statements_numbered_and_schema_left_out() {
        let t = Trace::parse(TRACE, "t.jsonl").unwrap();
        assert_eq!(t.schema_left_out, 1);
        assert_eq!(t.entries.len(), 4);
        assert_eq!(t.texts.len(), 2, "the insert is one statement, in queries and batches");
        assert_eq!(
            t.batches,
            vec![BatchShape {
                kind: "UNLOGGED".into(),
                statements: vec![0, 0]
            }]
        );
        let sent: Vec<Sent> = t.entries.iter().map(|e| e.sent).collect();
        assert_eq!(sent, [Sent::Query(0), Sent::Query(1), Sent::Batch(0), Sent::Query(0)]);
        let e = &t.entries[0];
        assert_eq!(&*e.rows[0], &[Some(Box::from(&[0u8, 0, 0, 1][..])), None]);
        assert_eq!(
            (e.consistency, e.serial),
            (Consistency::LocalQuorum, Some(SerialConsistency::LocalSerial))
        );
        assert_eq!((e.timestamp, e.page_size), (Some(1_700_000_000_000_000), None));
        assert_eq!(t.entries[1].page_size, Some(5000));
        assert_eq!(t.entries[1].timestamp, None, "the server chose it");
        assert_eq!(t.counts(), vec![(0, 2), (7, 1), (8, 1)], "from the first read or write");
        assert_eq!(t.keyspaces(), vec!["app".to_string()]);
    }

    #[test]
    fn a_broken_line_is_named_with_its_number() {
        let broken = TRACE.replace("\"61\"", "\"6g\"");
        let e = Trace::parse(&broken, "t.jsonl").unwrap_err().to_string();
        assert!(e.contains("t.jsonl line 4") && e.contains("hex"), "{e}");
        let e = Trace::parse("{\"start_ms\": 1}\n", "t.jsonl").unwrap_err().to_string();
        assert!(e.contains("line 1: not a trace entry"), "{e}");
        let e = Trace::parse(TRACE.lines().next().unwrap(), "t.jsonl")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no reads or writes"), "{e}");
    }
}
