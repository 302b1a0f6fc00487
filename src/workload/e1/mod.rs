//! E1's write workloads: the table (`pk text` 15 chars, `ck text` 10 chars, five `text`
//! values of 10 chars) written by one prepared INSERT per operation (`insert`), or by
//! UNLOGGED batches of N rows of one partition (`batch`). As in E1, the keyspace has
//! `durable_writes = false` (no commit log) and the table has compaction disabled, unless
//! asked otherwise (`--compaction`, with a strategy: `--compaction ucs,T4`).
//!
//! With `--tables N` the rows are spread over N tables of that schema (`e1_insert_0000`, …):
//! partition `p` to table `p % N`, or where `--table-select` draws it (`spread::table_of`).
//!
//! Operation `i` writes partition `i % partitions`; its rows' clustering keys continue where
//! the previous operation on that partition stopped, so every row written is new and the
//! table ends up holding exactly the rows the run wrote. That also makes every write checkable
//! afterwards: operation `i`'s rows and values are recomputed from `i` and read back
//! (`read_back.rs`), nothing kept in memory but which operations were acknowledged.

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

use super::compaction::{self, Compaction};
use super::schema::{self, TableState};
use super::spread::{self, MAX_TABLES, TablesMade};
use super::values::{Distribution, fill_key, fill_text};
use crate::client::classify;
use crate::client::traced::Twin;
use crate::engine::{Outcome, Workload};

pub mod read_back;

pub const PK_LEN: usize = 15;
pub const CK_LEN: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum E1Workload {
    /// One prepared INSERT of one row per operation.
    Insert,
    /// One UNLOGGED batch of --batch-size rows of one partition per operation.
    Batch,
}

impl E1Workload {
    pub fn name(self) -> &'static str {
        match self {
            E1Workload::Insert => "insert",
            E1Workload::Batch => "batch",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct E1Options {
    pub kind: E1Workload,
    pub keyspace: String,
    pub partitions: u64,
    pub value_columns: usize,
    pub value_size: usize,
    pub batch_size: usize,
    pub replication_factor: u32,
    pub durable_writes: bool,
    pub compaction: bool,
    /// With compaction on, the strategy asked (`--compaction ucs,T4`; size-tiered when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Compaction>,
    /// Tables the rows are spread over (absent from results of one table, as before it
    /// existed, so their history series stay the same).
    #[serde(default = "one_table", skip_serializing_if = "is_one_table")]
    pub tables: u32,
    /// How partitions are spread over the tables: uniform (p mod N), or skewed by a hash of the
    /// partition (`--table-select`).
    #[serde(default, skip_serializing_if = "is_uniform")]
    pub table_select: Distribution,
}

fn is_uniform(d: &Distribution) -> bool {
    *d == Distribution::Uniform
}

fn one_table() -> u32 {
    1
}

fn is_one_table(n: &u32) -> bool {
    *n == 1
}

impl E1Options {
    fn base(&self) -> String {
        format!("e1_{}", self.kind.name())
    }

    /// Table `t` of the ones the rows are spread over (`e1_insert` when there is one).
    pub fn table(&self, t: u32) -> String {
        spread::name(&self.base(), self.tables, t)
    }

    pub fn table_names(&self) -> Vec<String> {
        (0..self.tables).map(|t| self.table(t)).collect()
    }

    /// The tables in a line: `e1_insert`, or `e1_insert_0000..e1_insert_0999`.
    pub fn table_label(&self) -> String {
        spread::label(&self.base(), self.tables)
    }

    /// Which table partition `partition` is written to (`spread::table_of`).
    pub fn table_of(&self, partition: u64) -> usize {
        spread::table_of(self.table_select, self.tables, partition)
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
        if self.tables == 0 || self.tables > MAX_TABLES {
            bail!("--tables must be between 1 and {MAX_TABLES}");
        }
        if self.table_select != Distribution::Uniform && self.tables == 1 {
            bail!(
                "--table-select spreads partitions over the tables of --tables N: give --tables, or drop --table-select"
            );
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
            E1Workload::Insert => 1,
            E1Workload::Batch => self.batch_size as u64,
        }
    }

    /// Schema statements, in order, as results record them: the keyspace and the first table
    /// (with many, a line says how many more there are of the same schema).
    pub fn ddl(&self) -> Vec<String> {
        let mut ddl = vec![
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {}}} AND durable_writes = {}",
                self.keyspace, self.replication_factor, self.durable_writes
            ),
            self.create_table_cql(&self.table(0)),
        ];
        if self.tables > 1 {
            ddl.push(format!(
                "-- and {} more tables of the same schema, to {}",
                self.tables - 1,
                self.table(self.tables - 1)
            ));
        }
        ddl
    }

    pub fn create_table_cql(&self, table: &str) -> String {
        let values: Vec<String> = (1..=self.value_columns).map(|i| format!("v{i} text")).collect();
        format!(
            "CREATE TABLE IF NOT EXISTS {}.{table} (pk text, ck text, {}, PRIMARY KEY (pk, ck)) WITH compaction = {}",
            self.keyspace,
            values.join(", "),
            compaction::map_of(self.compaction, self.strategy.as_ref())
        )
    }

    pub fn insert_cql(&self, table: &str) -> String {
        let cols: Vec<String> = (1..=self.value_columns).map(|i| format!("v{i}")).collect();
        let marks = vec!["?"; self.value_columns + 2].join(", ");
        format!(
            "INSERT INTO {}.{table} (pk, ck, {}) VALUES ({marks})",
            self.keyspace,
            cols.join(", ")
        )
    }

    /// How an existing table differs from the one asked (nothing: it is used as it is).
    fn differences(&self, have: &TableState) -> Vec<String> {
        let wanted: BTreeMap<String, String> = ["pk".to_string(), "ck".to_string()]
            .into_iter()
            .chain((1..=self.value_columns).map(|i| format!("v{i}")))
            .map(|c| (c, "text".to_string()))
            .collect();
        let mut differs = schema::column_differences(&have.columns, &wanted);
        let c = compaction::differences_of(self.compaction, self.strategy.as_ref(), &have.compaction);
        differs.extend(c);
        differs
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
    /// One INSERT per table, and (batch) one batch of them per table.
    inserts: Vec<Twin<PreparedStatement>>,
    batches: Vec<Twin<Batch>>,
    /// What making many tables took (None with one).
    made: Option<TablesMade>,
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
        let names = opts.table_names();
        let have = schema::tables(&session, ks).await?;
        let differ: Vec<(&String, Vec<String>)> = names
            .iter()
            .filter_map(|n| Some((n, opts.differences(have.get(n)?))))
            .filter(|(_, d)| !d.is_empty())
            .collect();
        if let Some((first, differs)) = differ.first()
            && !recreate
        {
            let more = match differ.len() {
                1 => String::new(),
                n => format!(" (and {} more of its {} tables)", n - 1, names.len()),
            };
            bail!(
                "table {ks}.{first} exists with other settings ({}){more}: pass --recreate to drop it and create it as asked (its rows are lost), or choose another --keyspace",
                differs.join("; ")
            );
        }
        let dropped: std::collections::BTreeSet<&str> = differ.iter().map(|(n, _)| n.as_str()).collect();
        for table in &dropped {
            session
                .query_unpaged(schema::ddl(format!("DROP TABLE IF EXISTS {ks}.{table}")), ())
                .await
                .with_context(|| format!("cannot drop {ks}.{table}"))?;
        }
        let missing = |n: &str| !have.contains_key(n) || dropped.contains(n);
        let made = spread::create_missing(&session, ks, &names, missing, |t| opts.create_table_cql(t)).await?;
        let mut inserts = Vec::with_capacity(names.len());
        for table in &names {
            let mut insert = session
                .prepare(opts.insert_cql(table))
                .await
                .with_context(|| format!("cannot prepare the INSERT into {ks}.{table}"))?;
            insert.set_is_idempotent(true);
            inserts.push(insert);
        }
        let batches = match opts.kind {
            E1Workload::Insert => Vec::new(),
            E1Workload::Batch => inserts
                .iter()
                .map(|insert| {
                    let mut batch = Batch::new(BatchType::Unlogged);
                    for _ in 0..opts.batch_size {
                        batch.append_statement(insert.clone());
                    }
                    batch.set_is_idempotent(true);
                    Twin::new(batch)
                })
                .collect(),
        };
        let inserts = inserts.into_iter().map(Twin::new).collect();
        Ok(E1 {
            session,
            made: (opts.tables > 1).then_some(made),
            opts,
            inserts,
            batches,
        })
    }
}

impl E1 {
    pub fn options(&self) -> &E1Options {
        &self.opts
    }

    /// What making many tables took (None with one).
    pub fn tables_made(&self) -> Option<&TablesMade> {
        self.made.as_ref()
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

    fn statements(&self) -> Vec<String> {
        self.inserts
            .iter()
            .map(|p| p.plain().get_statement().to_string())
            .collect()
    }

    fn facts(&self, i: u64) -> crate::engine::OpFacts {
        let partition = i % self.opts.partitions;
        crate::engine::OpFacts {
            index: i,
            partition: Some(partition),
            token: None,
            statement: Some(self.opts.table_of(partition) as u32),
        }
    }

    async fn execute(&self, rows: &mut Vec<RowBuf>, i: u64) -> Outcome {
        self.send(rows, i, false).await.0
    }

    fn traces(&self) -> bool {
        true
    }

    async fn execute_traced(&self, rows: &mut Vec<RowBuf>, i: u64) -> (Outcome, Option<uuid::Uuid>) {
        self.send(rows, i, true).await
    }
}

impl E1 {
    /// Sends operation `i`, traced or not, and gives its outcome and trace id.
    async fn send(&self, rows: &mut [RowBuf], i: u64, traced: bool) -> (Outcome, Option<uuid::Uuid>) {
        let partition = i % self.opts.partitions;
        let first_row = (i / self.opts.partitions) * rows.len() as u64;
        for (k, r) in rows.iter_mut().enumerate() {
            r.fill(partition, first_row + k as u64);
        }
        let t = self.opts.table_of(partition);
        let result = match self.opts.kind {
            E1Workload::Insert => {
                self.session
                    .execute_unpaged(self.inserts[t].get(traced), &rows[0])
                    .await
            }
            E1Workload::Batch => self.session.batch(self.batches[t].get(traced), &*rows).await,
        };
        let trace = result.as_ref().ok().and_then(|r| r.tracing_id());
        let outcome = Outcome {
            op: 0,
            result: result.map(|_| (rows.len() as u64, 1)).map_err(|e| classify(&e)),
        };
        (outcome, trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kind: E1Workload) -> E1Options {
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
            strategy: None,
            tables: 1,
            table_select: Distribution::Uniform,
        }
    }

    #[test]
    fn schema_matches_e1() {
        let o = opts(E1Workload::Insert);
        let ddl = o.ddl().join("\n");
        assert!(
            ddl.contains("durable_writes = false") && ddl.contains("'enabled': 'false'"),
            "{ddl}"
        );
        assert!(ddl.contains(
            "caplab.e1_insert (pk text, ck text, v1 text, v2 text, v3 text, v4 text, v5 text, PRIMARY KEY (pk, ck))"
        ));
        assert_eq!(
            o.insert_cql(&o.table(0)),
            "INSERT INTO caplab.e1_insert (pk, ck, v1, v2, v3, v4, v5) VALUES (?, ?, ?, ?, ?, ?, ?)"
        );
        // One table's options serialise as before tables existed: a history keeps its series.
        assert!(!serde_json::to_string(&o).unwrap().contains("tables"));
        let back: E1Options = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert_eq!(back.tables, 1);
    }

    #[test]
    fn a_skewed_spread_favours_the_first_tables_the_same_way_every_run() {
        let mut o = opts(E1Workload::Insert);
        (o.tables, o.table_select) = (30, Distribution::Zipf);
        let mut per_table = [0u32; 30];
        for p in 0..30_000u64 {
            per_table[o.table_of(p)] += 1;
        }
        let mut sorted = per_table;
        sorted.sort_unstable();
        // Zipf with exponent 1.1 over 30 tables: the first holds about 23 % of the partitions,
        // the median one about 1.6 %.
        assert!(per_table[0] == sorted[29] && per_table[0] > 6_000, "{per_table:?}");
        assert!(per_table[0] > 8 * sorted[15], "{per_table:?}");
        assert!(per_table.iter().all(|n| *n > 0), "every table some: {per_table:?}");
        let json = serde_json::to_string(&o).unwrap();
        assert!(json.contains("\"table_select\":\"zipf\""), "{json}");
        let back: E1Options = serde_json::from_str(&json).unwrap();
        assert_eq!(back.table_select, Distribution::Zipf);
    }

    #[test]
    fn many_tables_share_the_partitions_evenly_and_are_recorded_in_short() {
        let mut o = opts(E1Workload::Insert);
        o.tables = 40;
        let mut per_table = [0u32; 40];
        for i in 0..100_000u64 {
            per_table[o.table_of(i % o.partitions)] += 1;
        }
        assert!(per_table.iter().all(|n| *n == 2500), "{per_table:?}");
        let ddl = o.ddl();
        assert_eq!(ddl.len(), 3);
        assert!(ddl[1].contains("caplab.e1_insert_0000 (pk text"), "{ddl:?}");
        assert_eq!(ddl[2], "-- and 39 more tables of the same schema, to e1_insert_0039");
        assert!(serde_json::to_string(&o).unwrap().contains("\"tables\":40"));
        o.tables = 0;
        assert!(o.validate().unwrap_err().to_string().contains("--tables"));
        (o.tables, o.table_select) = (1, Distribution::Zipf);
        assert!(
            o.validate()
                .unwrap_err()
                .to_string()
                .contains("give --tables, or drop --table-select")
        );
    }

    #[test]
    fn rows_have_e1_sizes_and_never_repeat() {
        let o = opts(E1Workload::Batch);
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
        let mut o = opts(E1Workload::Batch);
        o.batch_size = 0;
        assert!(o.validate().unwrap_err().to_string().contains("--batch-size"));
        let mut o = opts(E1Workload::Insert);
        o.keyspace = "a; DROP".into();
        assert!(o.validate().is_err());
    }
}
