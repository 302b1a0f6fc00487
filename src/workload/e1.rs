//! E1's write workloads: the table (`pk text` 15 chars, `ck text` 10 chars, five `text`
//! values of 10 chars) written by one prepared INSERT per operation (`insert`), or by
//! UNLOGGED batches of N rows of one partition (`batch`). As in E1, the keyspace has
//! `durable_writes = false` (no commit log) and the table has compaction disabled, unless
//! asked otherwise.
//!
//! Operation `i` writes partition `i % partitions`; its rows' clustering keys continue where
//! the previous operation on that partition stopped, so every row written is new and the
//! table ends up holding exactly the rows the run wrote. That also makes every write checkable
//! afterwards: operation `i`'s rows and values are recomputed from `i` and read back
//! (`read_back`), nothing kept in memory but which operations were acknowledged.

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use scylla::serialize::SerializationError;
use scylla::serialize::row::{RowSerializationContext, SerializeRow};
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::RowWriter;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::schema;
use super::values::{fill_key, fill_text};
use crate::client::classify;
use crate::engine::{Outcome, Workload};
use crate::metrics::ErrorKind;

pub const PK_LEN: usize = 15;
pub const CK_LEN: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// One prepared INSERT of one row per operation.
    Insert,
    /// One UNLOGGED batch of --batch-size rows of one partition per operation.
    Batch,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Insert => "insert",
            Kind::Batch => "batch",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct E1Options {
    pub kind: Kind,
    pub keyspace: String,
    pub partitions: u64,
    pub value_columns: usize,
    pub value_size: usize,
    pub batch_size: usize,
    pub replication_factor: u32,
    pub durable_writes: bool,
    pub compaction: bool,
}

impl E1Options {
    pub fn table(&self) -> String {
        format!("e1_{}", self.kind.name())
    }

    pub fn validate(&self) -> Result<()> {
        if self.partitions == 0 {
            bail!("--partitions must be at least 1");
        }
        if self.value_columns == 0 || self.value_columns > 64 {
            bail!("--value-columns must be between 1 and 64");
        }
        if self.value_size == 0 || self.value_size > 1 << 20 {
            bail!("--value-size must be between 1 and 1048576 characters");
        }
        if self.batch_size == 0 || self.batch_size > 65535 {
            bail!("--batch-size must be between 1 and 65535");
        }
        if !self.keyspace.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || self.keyspace.is_empty() {
            bail!(
                "--keyspace '{}' is not a plain CQL identifier (letters, digits, _)",
                self.keyspace
            );
        }
        Ok(())
    }

    pub fn rows_per_op(&self) -> u64 {
        match self.kind {
            Kind::Insert => 1,
            Kind::Batch => self.batch_size as u64,
        }
    }

    /// Schema statements, in order.
    pub fn ddl(&self) -> Vec<String> {
        let values: Vec<String> = (1..=self.value_columns).map(|i| format!("v{i} text")).collect();
        vec![
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {}}} AND durable_writes = {}",
                self.keyspace, self.replication_factor, self.durable_writes
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {}.{} (pk text, ck text, {}, PRIMARY KEY (pk, ck)) WITH compaction = {{'class': 'SizeTieredCompactionStrategy', 'enabled': '{}'}}",
                self.keyspace,
                self.table(),
                values.join(", "),
                self.compaction
            ),
        ]
    }

    pub fn insert_cql(&self) -> String {
        let cols: Vec<String> = (1..=self.value_columns).map(|i| format!("v{i}")).collect();
        let marks = vec!["?"; self.value_columns + 2].join(", ");
        format!(
            "INSERT INTO {}.{} (pk, ck, {}) VALUES ({marks})",
            self.keyspace,
            self.table(),
            cols.join(", ")
        )
    }
}

/// One row's text, generated in place.
pub struct RowBuf {
    pk: [u8; PK_LEN],
    ck: [u8; CK_LEN],
    values: Box<[u8]>,
    value_size: usize,
}

impl RowBuf {
    pub fn new(value_columns: usize, value_size: usize) -> RowBuf {
        RowBuf {
            pk: [b'0'; PK_LEN],
            ck: [b'0'; CK_LEN],
            values: vec![b'0'; value_columns * value_size].into(),
            value_size,
        }
    }

    /// Row `row` of partition `partition`; values seeded by the row's identity.
    pub fn fill(&mut self, partition: u64, row: u64) {
        fill_key(&mut self.pk, partition);
        fill_key(&mut self.ck, row);
        let seed = partition.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ row;
        for (c, chunk) in self.values.chunks_mut(self.value_size).enumerate() {
            fill_text(chunk, seed.wrapping_add(c as u64).rotate_left(17));
        }
    }

    pub fn column(&self, i: usize) -> &str {
        let bytes = match i {
            0 => &self.pk[..],
            1 => &self.ck[..],
            n => &self.values[(n - 2) * self.value_size..(n - 1) * self.value_size],
        };
        std::str::from_utf8(bytes).expect("generated text is ASCII")
    }
}

impl SerializeRow for RowBuf {
    fn serialize(&self, ctx: &RowSerializationContext<'_>, writer: &mut RowWriter) -> Result<(), SerializationError> {
        for (i, spec) in ctx.columns().iter().enumerate() {
            SerializeValue::serialize(&self.column(i), spec.typ(), writer.make_cell_writer())?;
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        false
    }
}

pub struct E1 {
    session: Arc<Session>,
    opts: E1Options,
    insert: PreparedStatement,
    batch: Batch,
}

impl E1 {
    /// Creates the schema if needed and prepares the statements. A keyspace or table that
    /// exists with other settings is refused, or dropped and created again with `recreate`.
    pub async fn setup(session: Arc<Session>, opts: E1Options, recreate: bool) -> Result<E1> {
        opts.validate()?;
        let ks = &opts.keyspace;
        schema::ensure_keyspace(
            &session,
            ks,
            &format!(
                "{{'class': 'SimpleStrategy', 'replication_factor': {}}}",
                opts.replication_factor
            ),
            opts.durable_writes,
            recreate,
        )
        .await?;
        let table = opts.table();
        if let Some(have) = schema::table(&session, ks, &table).await? {
            let wanted: BTreeMap<String, String> = ["pk".to_string(), "ck".to_string()]
                .into_iter()
                .chain((1..=opts.value_columns).map(|i| format!("v{i}")))
                .map(|c| (c, "text".to_string()))
                .collect();
            let mut differs = schema::column_differences(&have.columns, &wanted);
            if schema::compaction_enabled(&have.compaction) != opts.compaction {
                differs.push(format!(
                    "compaction is {}, not {}",
                    if opts.compaction { "off" } else { "on" },
                    if opts.compaction { "on" } else { "off" }
                ));
            }
            if !differs.is_empty() {
                if !recreate {
                    bail!(
                        "table {ks}.{table} exists with other settings ({}): pass --recreate to drop it and create it                          as asked (its rows are lost), or choose another --keyspace",
                        differs.join("; ")
                    );
                }
                session
                    .query_unpaged(format!("DROP TABLE IF EXISTS {ks}.{table}"), ())
                    .await
                    .with_context(|| format!("cannot drop {ks}.{table}"))?;
            }
        }
        for stmt in opts.ddl().iter().skip(1) {
            session
                .query_unpaged(stmt.as_str(), ())
                .await
                .with_context(|| format!("schema statement failed: {stmt}"))?;
        }
        let _ = session.await_schema_agreement().await;
        let mut insert = session
            .prepare(opts.insert_cql())
            .await
            .context("cannot prepare the INSERT")?;
        insert.set_is_idempotent(true);
        let mut batch = Batch::new(BatchType::Unlogged);
        if opts.kind == Kind::Batch {
            for _ in 0..opts.batch_size {
                batch.append_statement(insert.clone());
            }
            batch.set_is_idempotent(true);
        }
        Ok(E1 {
            session,
            opts,
            insert,
            batch,
        })
    }
}

/// What reading back one operation's rows found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadBack {
    /// Rows the operation wrote.
    pub rows: u64,
    /// Read back with the values written.
    pub found: u64,
    pub missing: u64,
    /// Read back with other values.
    pub wrong: u64,
}

impl E1 {
    pub fn options(&self) -> &E1Options {
        &self.opts
    }

    /// The statement that reads back an operation's rows (one partition, a range of clustering
    /// keys: they are fixed-length base-32 text, so their order is the rows' order).
    pub async fn read_back_statement(&self, consistency: scylla::statement::Consistency) -> Result<PreparedStatement> {
        let cols: Vec<String> = (1..=self.opts.value_columns).map(|i| format!("v{i}")).collect();
        let cql = format!(
            "SELECT ck, {} FROM {}.{} WHERE pk = ? AND ck >= ? AND ck <= ?",
            cols.join(", "),
            self.opts.keyspace,
            self.opts.table()
        );
        let mut stmt = self
            .session
            .prepare(cql)
            .await
            .context("cannot prepare the read-back")?;
        stmt.set_consistency(consistency);
        stmt.set_is_idempotent(true);
        Ok(stmt)
    }

    /// Whether the table holds any row (before a run: an earlier run's rows can hide a lost
    /// write of this one, being the same rows with the same values).
    pub async fn has_rows(&self) -> Result<bool> {
        let cql = format!("SELECT pk FROM {}.{} LIMIT 1", self.opts.keyspace, self.opts.table());
        let r = self.session.query_unpaged(cql, ()).await?;
        Ok(r.into_rows_result().map(|r| r.rows_num() > 0).unwrap_or(false))
    }

    /// Reads back operation `i`'s rows with `stmt` (`rows`: a worker's buffers) and compares
    /// them with what it wrote.
    pub async fn read_back(
        &self,
        stmt: &PreparedStatement,
        rows: &mut [RowBuf],
        i: u64,
    ) -> Result<ReadBack, ErrorKind> {
        let partition = i % self.opts.partitions;
        let first_row = (i / self.opts.partitions) * rows.len() as u64;
        for (k, r) in rows.iter_mut().enumerate() {
            r.fill(partition, first_row + k as u64);
        }
        let last = rows.len() - 1;
        let r = self
            .session
            .execute_unpaged(stmt, (rows[0].column(0), rows[0].column(1), rows[last].column(1)))
            .await
            .map_err(|e| classify(&e))?;
        let r = r.into_rows_result().map_err(|_| ErrorKind::Other)?;
        let mut out = ReadBack {
            rows: rows.len() as u64,
            ..ReadBack::default()
        };
        // Both in clustering order: walk them together.
        let mut k = 0;
        for row in r.rows::<scylla::value::Row>().map_err(|_| ErrorKind::Other)? {
            let row = row.map_err(|_| ErrorKind::Other)?;
            let text = |c: usize| match row.columns.get(c) {
                Some(Some(scylla::value::CqlValue::Text(t))) => Some(t.as_str()),
                _ => None,
            };
            let Some(ck) = text(0) else { continue };
            while k < rows.len() && rows[k].column(1) < ck {
                k += 1;
            }
            if k < rows.len() && rows[k].column(1) == ck {
                let same = (0..self.opts.value_columns).all(|c| text(c + 1) == Some(rows[k].column(c + 2)));
                if same {
                    out.found += 1;
                } else {
                    out.wrong += 1;
                }
                k += 1;
            }
        }
        out.missing = out.rows - out.found - out.wrong;
        Ok(out)
    }
}

impl Workload for E1 {
    type Worker = Vec<RowBuf>;

    fn op_names(&self) -> Vec<String> {
        vec![self.opts.kind.name().to_string()]
    }

    fn op_of(&self, _i: u64) -> usize {
        0
    }

    fn worker(&self, _id: usize) -> Vec<RowBuf> {
        (0..self.opts.rows_per_op())
            .map(|_| RowBuf::new(self.opts.value_columns, self.opts.value_size))
            .collect()
    }

    async fn execute(&self, rows: &mut Vec<RowBuf>, i: u64) -> Outcome {
        let partition = i % self.opts.partitions;
        let first_row = (i / self.opts.partitions) * rows.len() as u64;
        for (k, r) in rows.iter_mut().enumerate() {
            r.fill(partition, first_row + k as u64);
        }
        let result = match self.opts.kind {
            Kind::Insert => self.session.execute_unpaged(&self.insert, &rows[0]).await.map(|_| ()),
            Kind::Batch => self.session.batch(&self.batch, &rows[..]).await.map(|_| ()),
        };
        Outcome {
            op: 0,
            result: result.map(|()| (rows.len() as u64, 1)).map_err(|e| classify(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kind: Kind) -> E1Options {
        E1Options {
            kind,
            keyspace: "caplab".into(),
            partitions: 1000,
            value_columns: 5,
            value_size: 10,
            batch_size: 10,
            replication_factor: 1,
            durable_writes: false,
            compaction: false,
        }
    }

    #[test]
    fn schema_matches_e1() {
        let o = opts(Kind::Insert);
        let ddl = o.ddl().join("\n");
        assert!(
            ddl.contains("durable_writes = false") && ddl.contains("'enabled': 'false'"),
            "{ddl}"
        );
        assert!(ddl.contains(
            "caplab.e1_insert (pk text, ck text, v1 text, v2 text, v3 text, v4 text, v5 text, PRIMARY KEY (pk, ck))"
        ));
        assert_eq!(
            o.insert_cql(),
            "INSERT INTO caplab.e1_insert (pk, ck, v1, v2, v3, v4, v5) VALUES (?, ?, ?, ?, ?, ?, ?)"
        );
    }

    #[test]
    fn rows_have_e1_sizes_and_never_repeat() {
        let o = opts(Kind::Batch);
        let mut seen = std::collections::HashSet::new();
        let mut rows: Vec<RowBuf> = (0..o.batch_size).map(|_| RowBuf::new(5, 10)).collect();
        for i in 0..5000u64 {
            let p = i % o.partitions;
            for (k, r) in rows.iter_mut().enumerate() {
                r.fill(p, (i / o.partitions) * o.batch_size as u64 + k as u64);
                assert_eq!((r.column(0).len(), r.column(1).len(), r.column(6).len()), (15, 10, 10));
                assert!(
                    seen.insert((r.column(0).to_string(), r.column(1).to_string())),
                    "row written twice"
                );
            }
        }
        let mut a = RowBuf::new(5, 10);
        let mut b = RowBuf::new(5, 10);
        a.fill(3, 4);
        b.fill(3, 4);
        assert_eq!(a.column(4), b.column(4), "deterministic");
        assert_ne!(a.column(2), a.column(3), "columns differ");
    }

    #[test]
    fn bad_options_are_refused() {
        let mut o = opts(Kind::Batch);
        o.batch_size = 0;
        assert!(o.validate().unwrap_err().to_string().contains("--batch-size"));
        let mut o = opts(Kind::Insert);
        o.keyspace = "a; DROP".into();
        assert!(o.validate().is_err());
    }
}
