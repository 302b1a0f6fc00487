//! What a replay's reads returned (`--results`): for each entry whose answer held rows (a read,
//! or a lightweight transaction's `[applied]` row), how many rows and a digest of their bytes as
//! the server sent them (FNV-1a over each column of each row of the first page), kept in `reads.tsv` beside the run's
//! results. Two replays of one trace, on two versions or two configurations, then compare entry
//! by entry (`caplab compare`): the statements whose answers differ are named.
//!
//! Each worker keeps its own list and hands it over when the run ends, so noting a read takes no
//! shared lock.

use anyhow::{Context, Result};
use scylla::deserialize::row::{ColumnIterator, DeserializeRow};
use scylla::deserialize::{DeserializationError, TypeCheckError};
use scylla::frame::response::result::ColumnSpec;
use scylla::response::query_result::QueryResult;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The file a replay's reads are kept in, in its results directory.
pub const READS_FILE: &str = "reads.tsv";

/// One entry's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    pub entry: u64,
    pub op: usize,
    pub rows: u64,
    pub digest: u64,
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bits, going on from `h`: stable across builds and platforms, so files from two
/// machines compare.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A row's digest: each column's length (-1 for null) and bytes, as the server sent them.
struct RowDigest(u64);

impl<'frame, 'metadata> DeserializeRow<'frame, 'metadata> for RowDigest {
    fn type_check(_: &[ColumnSpec]) -> Result<(), TypeCheckError> {
        Ok(())
    }

    fn deserialize(row: ColumnIterator<'frame, 'metadata>) -> Result<Self, DeserializationError> {
        let mut h = FNV_START;
        for column in row {
            match column?.slice {
                Some(bytes) => {
                    let bytes = bytes.as_slice();
                    h = fnv(fnv(h, &(bytes.len() as i32).to_be_bytes()), bytes);
                }
                None => h = fnv(h, &(-1i32).to_be_bytes()),
            }
        }
        Ok(RowDigest(h))
    }
}

/// The reads of all workers.
#[derive(Debug, Default, Clone)]
pub struct Reads(Arc<Mutex<Vec<Read>>>);

/// A worker's own reads, handed over when it ends.
pub struct WorkerReads {
    mine: Vec<Read>,
    all: Reads,
}

impl Reads {
    pub fn worker(&self) -> WorkerReads {
        WorkerReads {
            mine: Vec::with_capacity(4096),
            all: self.clone(),
        }
    }

    /// Writes every read, in the trace's order, to `dir/reads.tsv` with the operation names.
    pub fn write(&self, dir: &Path, names: &[String]) -> Result<usize> {
        let mut all = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        all.sort_by_key(|r| r.entry);
        let mut text = String::from("entry\toperation\trows\tdigest\n");
        for r in &all {
            text.push_str(&format!(
                "{}\t{}\t{}\t{:016x}\n",
                r.entry, names[r.op], r.rows, r.digest
            ));
        }
        let path = dir.join(READS_FILE);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(all.len())
    }
}

impl WorkerReads {
    /// Notes entry `entry`'s answer if it held rows: how many, and their digest in order.
    pub fn note(&mut self, entry: u64, op: usize, answer: QueryResult) {
        let Ok(rows) = answer.into_rows_result() else {
            return;
        };
        let count = rows.rows_num() as u64;
        let mut digest = fnv(FNV_START, &count.to_be_bytes());
        if let Ok(each) = rows.rows::<RowDigest>() {
            for row in each {
                let d = row.map_or(0, |r| r.0);
                digest = fnv(digest, &d.to_be_bytes());
            }
        }
        self.mine.push(Read {
            entry,
            op,
            rows: count,
            digest,
        });
    }
}

impl Drop for WorkerReads {
    fn drop(&mut self) {
        let mut all = self.all.0.lock().unwrap_or_else(|p| p.into_inner());
        all.append(&mut self.mine);
    }
}

/// One side's answers as written: entry → (operation, rows, digest).
pub type Answers = BTreeMap<u64, (String, u64, String)>;

/// The answers a replay kept in `dir`, if it kept them.
pub fn read_file(dir: &Path) -> Result<Option<Answers>> {
    let path = dir.join(READS_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || {
            anyhow::anyhow!(
                "{} line {}: not `entry, operation, rows, digest`",
                path.display(),
                n + 1
            )
        };
        let [entry, op, rows, digest] = f.as_slice() else {
            return Err(bad());
        };
        let entry = entry.parse().map_err(|_| bad())?;
        out.insert(
            entry,
            (op.to_string(), rows.parse().map_err(|_| bad())?, digest.to_string()),
        );
    }
    Ok(Some(out))
}

/// How two replays' reads compare.
#[derive(Debug, Default, PartialEq)]
pub struct Differences {
    /// Entries both answered.
    pub compared: usize,
    /// Entries only one side answered (one failed, or stopped early).
    pub unmatched: usize,
    /// By operation: how many answers differ, and the first few entries that do.
    pub by_op: BTreeMap<String, (usize, Vec<u64>)>,
}

impl Differences {
    pub fn of(a: &BTreeMap<u64, (String, u64, String)>, b: &BTreeMap<u64, (String, u64, String)>) -> Differences {
        let mut d = Differences {
            unmatched: a.keys().filter(|k| !b.contains_key(k)).count()
                + b.keys().filter(|k| !a.contains_key(k)).count(),
            ..Differences::default()
        };
        for (entry, x) in a {
            let Some(y) = b.get(entry) else { continue };
            d.compared += 1;
            if x.1 != y.1 || x.2 != y.2 {
                let (n, first) = d.by_op.entry(x.0.clone()).or_default();
                *n += 1;
                if first.len() < 5 {
                    first.push(*entry);
                }
            }
        }
        d
    }

    pub fn differing(&self) -> usize {
        self.by_op.values().map(|(n, _)| n).sum()
    }

    /// What a person reads.
    pub fn render(&self) -> String {
        let mut s = format!(
            "Replayed reads: {} answers compared entry by entry, {} differ",
            self.compared,
            self.differing()
        );
        if self.unmatched > 0 {
            s.push_str(&format!(" ({} answered on one side only)", self.unmatched));
        }
        s.push('\n');
        for (op, (n, first)) in &self.by_op {
            let list: Vec<String> = first.iter().map(u64::to_string).collect();
            s.push_str(&format!(
                "  {op}: {n} differ (entries {}{})\n",
                list.join(", "),
                if *n > first.len() { ", …" } else { "" }
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_that_differ_are_named_by_their_statement() {
        let side = |rows: &[(u64, &str, u64, &str)]| {
            rows.iter()
                .map(|(e, op, n, d)| (*e, (op.to_string(), *n, d.to_string())))
                .collect::<BTreeMap<_, _>>()
        };
        let a = side(&[
            (1, "select_users", 1, "aa"),
            (2, "select_users", 0, "bb"),
            (5, "insert_orders_if", 1, "cc"),
            (7, "select_users", 1, "dd"),
        ]);
        let b = side(&[
            (1, "select_users", 1, "aa"),
            (2, "select_users", 1, "b0"),
            (5, "insert_orders_if", 1, "cc"),
            (9, "select_users", 1, "ee"),
        ]);
        let d = Differences::of(&a, &b);
        assert_eq!((d.compared, d.unmatched, d.differing()), (3, 2, 1));
        assert_eq!(d.by_op["select_users"], (1, vec![2]));
        assert!(
            d.render().contains("select_users: 1 differ (entries 2)"),
            "{}",
            d.render()
        );
        assert_eq!(Differences::of(&a, &a).differing(), 0);
    }

    #[test]
    fn the_digest_is_stable_and_sees_every_byte_and_the_count() {
        assert_eq!(fnv(FNV_START, b""), FNV_START);
        assert_eq!(
            fnv(FNV_START, b"a"),
            0xaf63_dc4c_8601_ec8c,
            "FNV-1a's published value for 'a'"
        );
        assert_ne!(fnv(FNV_START, b"ab"), fnv(FNV_START, b"ba"));
    }
}
