//! What a profile's tables should hold after a run, for the workloads whose writes say it
//! whatever their order, and how to read one of its rows: the workload's half of `--validate`
//! (`readback` reads them all back and judges them). Counters: each counter row touched should hold
//! the sum of its acknowledged increments, and at most that plus the increments sent and never
//! acknowledged (a timed-out increment may have been applied, and counter writes are never
//! retried); a row below its lower bound lost acknowledged increments, one above its upper bound
//! counted some twice. Claims (`INSERT … IF NOT EXISTS`, lightweight transactions): a row has at
//! most one winner, the one claim the cluster applied; a second applied claim of the same row
//! breaks the transactions' promise, and a row with a winner must exist. Memory is a few numbers
//! per row touched, however many operations the run made.

use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use std::collections::HashMap;

use super::{Op, ProfileWorkload};
use crate::client::classify;
use crate::engine::acks::{Acks, Fate};
use crate::metrics::ErrorKind;
use crate::workload::generate::{Role, Shape, Value};
use scylla::frame::response::result::NativeType;
use scylla::value::CqlValue;

/// A counter row's expected total: the acknowledged increments' sum, and that plus the sum of
/// those whose fate is unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    pub low: i64,
    pub high: i64,
}

/// The counter rows one run touched, by (operation, partition, row).
#[derive(Debug, Default)]
pub struct Expected {
    pub rows: HashMap<(usize, u64, u64), Bounds>,
    /// Increments acknowledged, and sent without an answer.
    pub acknowledged: u64,
    pub unknown: u64,
}

/// The claims of one row: applied (winners) and sent without an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claims {
    pub applied: u32,
    pub unknown: u32,
}

/// The rows one run's claims touched, by (operation, partition, row), and the claims' fates.
#[derive(Debug, Default)]
pub struct Claimed {
    pub rows: HashMap<(usize, u64, u64), Claims>,
    pub applied: u64,
    pub not_applied: u64,
    pub unknown: u64,
}

impl Op {
    /// Whether this operation claims a row (`INSERT … IF NOT EXISTS`, one row).
    fn claims(&self) -> bool {
        let cql = self.statement.get_statement().to_ascii_uppercase();
        self.not_applied.is_some()
            && self.batch.is_none()
            && cql.trim_start().starts_with("INSERT")
            && cql.contains("NOT EXISTS")
    }

    /// Whether this operation increments a counter (`SET c = c + ?`, one row).
    fn increments(&self) -> bool {
        !self.read
            && self.batch.is_none()
            && self
                .generators
                .iter()
                .any(|g| g.shape == Shape::Native(NativeType::Counter))
    }
}

impl ProfileWorkload {
    /// Whether every write of the workload is a counter increment, so `--validate` can check
    /// its totals (and it has at least one).
    pub fn counts(&self) -> bool {
        let writes: Vec<&Op> = self.ops.iter().filter(|o| !o.read).collect();
        !writes.is_empty() && writes.iter().all(|o| o.increments())
    }

    /// Whether every write of the workload is conditional (a lightweight transaction) and some
    /// claim rows, so `--validate` can check the claims' winners.
    pub fn claims_rows(&self) -> bool {
        let writes: Vec<&Op> = self.ops.iter().filter(|o| !o.read).collect();
        writes.iter().all(|o| o.not_applied.is_some()) && writes.iter().any(|o| o.claims())
    }

    /// The claims of every row the operations in `acks` claimed (`sampled` picks rows by
    /// partition).
    pub fn expected_claims(&self, acks: &Acks, sampled: impl Fn(u64) -> bool) -> Claimed {
        let mut out = Claimed::default();
        for i in 0..acks.extent() {
            let fate = acks.fate(i);
            let op = self.choose(i);
            if fate == Fate::NotSent || !self.ops[op].claims() {
                continue;
            }
            let (p, r) = self.address(i, 1);
            let r = r % self.rows_per_partition.rows_in(p);
            if !sampled(p) {
                continue;
            }
            let c = out.rows.entry((op, p, r)).or_default();
            match fate {
                Fate::Acknowledged => {
                    c.applied += 1;
                    out.applied += 1;
                }
                Fate::NotApplied => out.not_applied += 1,
                _ => {
                    c.unknown += 1;
                    out.unknown += 1;
                }
            }
        }
        out
    }

    /// The bounds of every counter row the operations in `acks` touched (`sampled` picks rows
    /// by partition).
    pub fn expected_counts(&self, acks: &Acks, sampled: impl Fn(u64) -> bool) -> Expected {
        let mut out = Expected::default();
        let mut amount = Value::Int(0);
        for i in 0..acks.extent() {
            let fate = acks.fate(i);
            if matches!(fate, Fate::NotSent | Fate::NotApplied) {
                continue;
            }
            let op = self.choose(i);
            let o = &self.ops[op];
            if !o.increments() {
                continue;
            }
            let (p, r) = self.address(i, 1);
            let r = r % self.rows_per_partition.rows_in(p);
            if !sampled(p) {
                continue;
            }
            let Some(g) = o
                .generators
                .iter()
                .find(|g| g.shape == Shape::Native(NativeType::Counter))
            else {
                continue;
            };
            g.render(g.index(p, r), &mut amount);
            let Value::Counter(c) = amount else { continue };
            let b = out.rows.entry((op, p, r)).or_default();
            b.high += c.0;
            if fate == Fate::Acknowledged {
                b.low += c.0;
                out.acknowledged += 1;
            } else {
                out.unknown += 1;
            }
        }
        out
    }

    /// For each operation `pick` accepts, a read of `column(op)` of its row by key.
    async fn key_reads(
        &self,
        consistency: Consistency,
        pick: impl Fn(&Op) -> bool,
        column: impl Fn(&Op) -> String,
    ) -> anyhow::Result<HashMap<usize, PreparedStatement>> {
        let mut reads = HashMap::new();
        for (i, o) in self.ops.iter().enumerate().filter(|(_, o)| pick(o)) {
            let spec = o.statement.get_table_spec();
            let table = spec
                .map(|t| format!("{}.{}", t.ks_name(), t.table_name()))
                .unwrap_or_default();
            let keys: Vec<String> = o
                .generators
                .iter()
                .filter(|g| g.role != Role::Regular)
                .map(|g| format!("{} = ?", g.column))
                .collect();
            let cql = format!("SELECT {} FROM {table} WHERE {}", column(o), keys.join(" AND "));
            let mut stmt = self.session.prepare(cql).await?;
            stmt.set_consistency(consistency);
            reads.insert(i, stmt);
        }
        Ok(reads)
    }

    /// For each counter operation, the read of its row's counter by key, at `consistency`.
    pub async fn counter_reads(&self, consistency: Consistency) -> anyhow::Result<HashMap<usize, PreparedStatement>> {
        self.key_reads(consistency, Op::increments, |o| {
            o.generators
                .iter()
                .find(|g| g.shape == Shape::Native(NativeType::Counter))
                .map(|g| g.column.clone())
                .unwrap_or_default()
        })
        .await
    }

    /// For each claim, the read of whether its row exists (its first key), at `consistency`
    /// (SERIAL sees every accepted transaction).
    pub async fn claim_reads(&self, consistency: Consistency) -> anyhow::Result<HashMap<usize, PreparedStatement>> {
        self.key_reads(consistency, Op::claims, |o| {
            o.generators
                .iter()
                .find(|g| g.role != Role::Regular)
                .map(|g| g.column.clone())
                .unwrap_or_default()
        })
        .await
    }

    /// Whether any counter table already holds a row (an earlier run's counts then add to this
    /// one's); unknown counts as yes.
    pub async fn counter_tables_have_rows(&self) -> bool {
        self.tables_have_rows(Op::increments).await
    }

    /// Whether any table of an operation `pick` accepts already holds a row; unknown counts as
    /// yes.
    pub(super) async fn tables_have_rows(&self, pick: impl Fn(&Op) -> bool) -> bool {
        for o in self.ops.iter().filter(|o| pick(o)) {
            let Some(t) = o.statement.get_table_spec() else {
                continue;
            };
            let cql = format!("SELECT * FROM {}.{} LIMIT 1", t.ks_name(), t.table_name());
            let rows = match self.session.query_unpaged(cql, ()).await {
                Ok(r) => r.into_rows_result().map(|r| r.rows_num()).unwrap_or(1),
                Err(_) => 1,
            };
            if rows > 0 {
                return true;
            }
        }
        false
    }

    /// The first column of operation `op`'s row (partition `p`, row `r`) as `stmt` reads it;
    /// None when the row is absent.
    pub async fn read_row(
        &self,
        stmt: &PreparedStatement,
        op: usize,
        p: u64,
        r: u64,
        keys: &mut Vec<Value>,
    ) -> Result<Option<Option<CqlValue>>, ErrorKind> {
        let o = &self.ops[op];
        keys.clear();
        for g in o.generators.iter().filter(|g| g.role != Role::Regular) {
            let mut v = Value::Int(0);
            g.render(g.index(p, r), &mut v);
            keys.push(v);
        }
        let rows = self
            .session
            .execute_unpaged(stmt, &*keys)
            .await
            .map_err(|e| classify(&e))?
            .into_rows_result()
            .map_err(|_| ErrorKind::Other)?;
        let mut iter = rows.rows::<scylla::value::Row>().map_err(|_| ErrorKind::Other)?;
        match iter.next() {
            Some(Ok(row)) => Ok(Some(row.columns.into_iter().next().flatten())),
            Some(Err(_)) => Err(ErrorKind::Other),
            None => Ok(None),
        }
    }
}
