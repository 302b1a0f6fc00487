//! What a profile's plain writes leave, and how to read a row back: the workload's half of
//! `--validate` for profiles whose writes are INSERTs and UPDATEs (no IF, no TTL, no counter;
//! batches of them too) and single-row DELETEs of whole rows, such as keyvalue, timeseries, udt,
//! wide-read or tombstones. Every write of
//! a row binds the same values (each generated from the row's partition and row index), so
//! whatever order the writes came in, a row an acknowledged write touched holds, in every column
//! a write binds, the value generated for it; a row an acknowledged DELETE removed and no write
//! touched is absent. A row both written and deleted in one run holds whichever came last (the
//! two were concurrent, timestamped by the server), and a row touched only by operations never
//! answered may hold either: neither is judged. Columns a statement sets without a bind marker
//! (a literal, `now()`) are not compared. Memory: a few bytes per row touched.

use scylla::deserialize::row::ColumnIterator;
use scylla::frame::response::result::ColumnType;
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use std::collections::HashMap;

use super::{Op, ProfileWorkload};
use crate::client::classify;
use crate::engine::acks::{Acks, Fate};
use crate::metrics::ErrorKind;
use crate::workload::cells;
use crate::workload::generate::{Role, Shape, Value};
use scylla::frame::response::result::NativeType;

/// At most this many operations in a profile whose writes are read back (a bit each).
const MAX_OPS: usize = 64;

/// What the run did to one row: its acknowledged writes (a bit per operation), whether an
/// acknowledged DELETE removed it, and whether a write or a delete of it went unanswered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowFate {
    pub written: u64,
    pub deleted: bool,
    pub unknown_write: bool,
    pub unknown_delete: bool,
}

impl RowFate {
    /// What the row must be: `Some(true)` there with the written values, `Some(false)` absent,
    /// None either (written and deleted in the run, or touched only by unanswered operations).
    pub fn expect(&self) -> Option<bool> {
        match (self.written != 0, self.deleted) {
            (true, false) if !self.unknown_delete => Some(true),
            (false, true) if !self.unknown_write => Some(false),
            _ => None,
        }
    }
}

/// The rows one run's plain writes and deletes touched, by (table, partition, row), the table
/// named by its first operation.
#[derive(Debug, Default)]
pub struct Touched {
    pub rows: HashMap<(usize, u64, u64), RowFate>,
    pub acknowledged: u64,
    pub unknown: u64,
}

/// The read of one table's row by key: the columns the table's writes bind, in the SELECT's
/// order.
pub struct TableRead {
    pub statement: PreparedStatement,
    pub columns: Vec<String>,
}

impl Op {
    fn cql_upper(&self) -> String {
        self.statement.get_statement().trim_start().to_ascii_uppercase()
    }

    /// An INSERT or UPDATE (or a batch of them) without IF, TTL or a counter.
    fn writes_plainly(&self) -> bool {
        let cql = self.cql_upper();
        !self.read
            && self.not_applied.is_none()
            && (cql.starts_with("INSERT") || cql.starts_with("UPDATE"))
            && !has_ttl(&cql)
            && !self
                .generators
                .iter()
                .any(|g| g.shape == Shape::Native(NativeType::Counter))
    }

    /// A single-row DELETE of the whole row.
    fn deletes_row(&self) -> bool {
        !self.read && self.not_applied.is_none() && self.batch.is_none() && self.cql_upper().starts_with("DELETE FROM")
    }

    fn table(&self) -> Option<(String, String)> {
        let t = self.statement.get_table_spec()?;
        Some((t.ks_name().to_string(), t.table_name().to_string()))
    }
}

/// Whether an upper-cased statement sets a TTL (`USING TTL ?`, `USING TIMESTAMP ? AND TTL ?`).
fn has_ttl(cql: &str) -> bool {
    cql.split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| (w[0] == "USING" || w[0] == "AND") && w[1] == "TTL")
}

impl ProfileWorkload {
    /// Why `--validate` cannot read this profile's plain writes back (None: it can): the
    /// operations that are neither plain writes nor whole-row deletes, and what they are.
    pub fn plain_refusal(&self) -> Option<String> {
        let writes: Vec<&Op> = self.ops.iter().filter(|o| !o.read).collect();
        if writes.is_empty() {
            return Some("it has no writes".into());
        }
        if self.ops.len() > MAX_OPS {
            return Some(format!("it has more than {MAX_OPS} operations"));
        }
        let odd: Vec<String> = writes
            .iter()
            .filter(|o| !o.writes_plainly() && !o.deletes_row())
            .map(|o| {
                let cql = o.cql_upper();
                let what = if o.not_applied.is_some() {
                    "conditional"
                } else if has_ttl(&cql) {
                    "with a TTL"
                } else if cql.starts_with("DELETE") && o.batch.is_some() {
                    "a batch of deletes"
                } else if cql.starts_with("DELETE") {
                    "deletes columns, not the row"
                } else if o
                    .generators
                    .iter()
                    .any(|g| g.shape == Shape::Native(NativeType::Counter))
                {
                    "a counter increment among other writes"
                } else {
                    "not an INSERT, UPDATE or DELETE"
                };
                format!("{} ({what})", o.name)
            })
            .collect();
        if !odd.is_empty() {
            return Some(format!(
                "its operations {} are neither plain writes nor whole-row deletes",
                odd.join(", ")
            ));
        }
        if !writes.iter().any(|o| o.writes_plainly()) {
            return Some("it only deletes".into());
        }
        // A DELETE judged as one row's must bind every key column of its table once.
        fn keys(o: &Op) -> Vec<&str> {
            let mut k: Vec<&str> = o
                .generators
                .iter()
                .filter(|g| g.role != Role::Regular)
                .map(|g| g.column.as_str())
                .collect();
            k.sort_unstable();
            k
        }
        for d in writes.iter().filter(|o| o.deletes_row()) {
            let mut distinct = keys(d);
            distinct.dedup();
            let whole = writes
                .iter()
                .filter(|w| w.writes_plainly() && w.table() == d.table())
                .all(|w| {
                    let mut k = keys(w);
                    k.dedup();
                    k == distinct
                });
            if distinct.len() != keys(d).len() || !whole {
                return Some(format!(
                    "its operation {} deletes more than one row (a partition or a range)",
                    d.name
                ));
            }
        }
        None
    }

    /// Whether every write is a plain write or a whole-row delete (and some write), so
    /// `--validate` can read the rows back.
    pub fn writes_plainly(&self) -> bool {
        self.plain_refusal().is_none()
    }

    /// For each plain write or delete, the first such operation on its table (which names the
    /// table in rows' keys); for other operations, themselves.
    fn table_ids(&self) -> Vec<usize> {
        let plain = |o: &Op| o.writes_plainly() || o.deletes_row();
        let tables: Vec<Option<(String, String)>> = self.ops.iter().map(Op::table).collect();
        (0..self.ops.len())
            .map(|op| {
                if !plain(&self.ops[op]) {
                    return op;
                }
                (0..self.ops.len())
                    .find(|&u| plain(&self.ops[u]) && tables[u] == tables[op])
                    .unwrap_or(op)
            })
            .collect()
    }

    /// The rows the plain writes and deletes in `acks` touched (`sampled` picks rows by
    /// partition).
    pub fn expected_rows(&self, acks: &Acks, sampled: impl Fn(u64) -> bool) -> Touched {
        let ids = self.table_ids();
        // Each operation's kind, once (telling it reads its statement's text).
        let kinds: Vec<(bool, bool)> = self.ops.iter().map(|o| (o.writes_plainly(), o.deletes_row())).collect();
        let mut out = Touched::default();
        for i in 0..acks.extent() {
            let fate = acks.fate(i);
            if matches!(fate, Fate::NotSent | Fate::NotApplied) {
                continue;
            }
            let op = self.choose(i);
            let o = &self.ops[op];
            let (write, delete) = kinds[op];
            if !write && !delete {
                continue;
            }
            // The rows `execute_at` writes: a batch's spread over partitions `per` rows each.
            let per = o.per_partition as u64;
            let (first, first_row) = self.address(i, per);
            for k in 0..o.rows as u64 {
                let p = (first + k / per) % self.partitions;
                let r = (first_row + k % per) % self.rows_per_partition.rows_in(p);
                if !sampled(p) {
                    continue;
                }
                let f = out.rows.entry((ids[op], p, r)).or_default();
                match (fate == Fate::Acknowledged, write) {
                    (true, true) => f.written |= 1 << op,
                    (true, false) => f.deleted = true,
                    (false, true) => f.unknown_write = true,
                    (false, false) => f.unknown_delete = true,
                }
            }
            if fate == Fate::Acknowledged {
                out.acknowledged += 1;
            } else {
                out.unknown += 1;
            }
        }
        out
    }

    /// For each table the plain writes and deletes touch (by its first operation): the read of
    /// a row by key, of every column the table's writes bind (its first key column when they
    /// bind none), at `consistency`.
    pub async fn row_reads(&self, consistency: Consistency) -> anyhow::Result<HashMap<usize, TableRead>> {
        let ids = self.table_ids();
        let mut reads = HashMap::new();
        for (op, o) in self.ops.iter().enumerate() {
            if ids[op] != op || !(o.writes_plainly() || o.deletes_row()) {
                continue;
            }
            let Some((ks, table)) = o.table() else { continue };
            let mut columns: Vec<String> = Vec::new();
            let table_writes = self
                .ops
                .iter()
                .enumerate()
                .filter(|(w, x)| ids[*w] == op && x.writes_plainly());
            for (_, w) in table_writes {
                for g in w.generators.iter().filter(|g| g.role == Role::Regular) {
                    if !columns.contains(&g.column) {
                        columns.push(g.column.clone());
                    }
                }
            }
            let keys: Vec<&str> = o
                .generators
                .iter()
                .filter(|g| g.role != Role::Regular)
                .map(|g| g.column.as_str())
                .collect();
            let Some(first) = keys.first() else { continue };
            let selected = if columns.is_empty() {
                format!("\"{first}\"")
            } else {
                columns
                    .iter()
                    .map(|c| format!("\"{c}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let filter: Vec<String> = keys.iter().map(|k| format!("\"{k}\" = ?")).collect();
            let cql = format!(
                "SELECT {selected} FROM \"{ks}\".\"{table}\" WHERE {}",
                filter.join(" AND ")
            );
            let mut statement = self.session.prepare(cql).await?;
            statement.set_consistency(consistency);
            reads.insert(op, TableRead { statement, columns });
        }
        Ok(reads)
    }

    /// The cells of row (partition `p`, row `r`) that `read` (operation `op`'s table) reads, or
    /// None when the row is absent.
    pub async fn read_cells(
        &self,
        read: &TableRead,
        op: usize,
        p: u64,
        r: u64,
        keys: &mut Vec<Value>,
    ) -> Result<Option<Vec<Option<Vec<u8>>>>, ErrorKind> {
        keys.clear();
        for g in self.ops[op].generators.iter().filter(|g| g.role != Role::Regular) {
            let mut v = Value::Int(0);
            g.render(g.index(p, r), &mut v);
            keys.push(v);
        }
        let rows = self
            .session
            .execute_unpaged(&read.statement, &*keys)
            .await
            .map_err(|e| classify(&e))?
            .into_rows_result()
            .map_err(|_| ErrorKind::Other)?;
        let mut iter = rows.rows::<ColumnIterator>().map_err(|_| ErrorKind::Other)?;
        let Some(row) = iter.next() else { return Ok(None) };
        let mut cells = Vec::new();
        for c in row.map_err(|_| ErrorKind::Other)? {
            cells.push(c.map_err(|_| ErrorKind::Other)?.slice.map(|s| s.as_slice().to_vec()));
        }
        Ok(Some(cells))
    }

    /// Whether `cells` (as `read` read them) hold every value the writes in `written` (a bit
    /// per operation) bound for row (`p`, `r`).
    pub fn holds(&self, read: &TableRead, cells: &[Option<Vec<u8>>], written: u64, p: u64, r: u64) -> bool {
        let mut v = Value::Int(0);
        let written_ops = self.ops.iter().enumerate().filter(|(op, _)| written & (1 << op) != 0);
        for (_, o) in written_ops {
            let specs = o.statement.get_variable_col_specs();
            for (k, (g, off)) in o.generators.iter().zip(&o.offsets).enumerate() {
                if g.role != Role::Regular {
                    continue;
                }
                let (Some(spec), Some(at)) = (specs.get_by_index(k), read.columns.iter().position(|c| *c == g.column))
                else {
                    return false;
                };
                g.render(g.index(p, r + off), &mut v);
                let typ: &ColumnType = spec.typ();
                let Some(expected) = cells::written(&v, typ) else {
                    return false;
                };
                if !cells::same(typ, &expected, cells.get(at).and_then(|c| c.as_deref())) {
                    return false;
                }
            }
        }
        true
    }

    /// Whether any table the plain writes touch already holds a row (unknown counts as yes).
    pub async fn row_tables_have_rows(&self) -> bool {
        self.tables_have_rows(|o| o.writes_plainly() || o.deletes_row()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ttl_is_told_from_a_column_named_so() {
        assert!(has_ttl("INSERT INTO T (A) VALUES (?) USING TTL 60"));
        assert!(has_ttl("UPDATE T USING TIMESTAMP 5 AND TTL 60 SET A = ? WHERE K = ?"));
        assert!(!has_ttl("INSERT INTO T (K, TTL_S) VALUES (?, ?)"));
    }

    #[test]
    fn a_row_is_judged_only_when_the_run_says_what_it_holds() {
        let f = |written, deleted, unknown_write, unknown_delete| RowFate {
            written,
            deleted,
            unknown_write,
            unknown_delete,
        };
        assert_eq!(f(1, false, false, false).expect(), Some(true));
        assert_eq!(
            f(1, false, true, false).expect(),
            Some(true),
            "an unanswered write wrote the same"
        );
        assert_eq!(f(0, true, false, false).expect(), Some(false));
        assert_eq!(f(0, true, false, true).expect(), Some(false));
        assert_eq!(
            f(1, true, false, false).expect(),
            None,
            "written and deleted: which came last"
        );
        assert_eq!(f(1, false, false, true).expect(), None);
        assert_eq!(f(0, true, true, false).expect(), None);
        assert_eq!(f(0, false, true, true).expect(), None);
    }
}
