//! Running a profile: its schema is created through the server, which then tells (through
//! `system_schema.columns`) each column's type and whether it is a partition key, clustering
//! or regular column; each operation's bind markers are matched by name to a column and its
//! generator. A profile rejected at this stage leaves no schema behind.
//!
//! Operation `i` picks an operation by weight, a partition by `partition_select` and a row:
//! with `sequence`, partition `i mod P` and first row `(i / P) * k mod R` for an operation
//! writing k rows per partition, so successive passes add new rows to every partition;
//! otherwise both are drawn from hashes of `i`.
//!
//! A conditional write (a lightweight transaction: `… IF NOT EXISTS`, `IF EXISTS`, `IF col = ?`)
//! reports whether the server applied it: one it did not counts as operation type
//! `<name>_not_applied`, its latency and count apart from the applied ones.

mod expected;
mod plain;
mod populate;

pub use populate::Populate;

pub use expected::{Bounds, Claimed, Claims, Expected};
pub use plain::{RowFate, TableRead, Touched};

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::generate::{Generator, Role, Value, shape_of};
use super::profile::{BatchKind, ColumnSpec, Distribution, Profile, RowCount};
use super::schema;
use super::values::{draw, mix};
use crate::client::traced::traced;
use crate::client::{classify, parse_consistency};
use crate::engine::{Outcome, Workload};

const OP_SALT: u64 = 0x6f70_6572_6174_696f;
const PARTITION_SALT: u64 = 0x7061_7274_6974_696f;
const ROW_SALT: u64 = 0x726f_7773_726f_7773;

struct Op {
    name: String,
    statement: PreparedStatement,
    batch: Option<Batch>,
    /// The statement and batch sent when the operation is traced (`--trace-slow`).
    traced: (PreparedStatement, Option<Batch>),
    /// Rows per operation, and how many of them go to each partition.
    rows: usize,
    per_partition: usize,
    generators: Vec<Generator>,
    /// Per bind: rows after the operation's row it takes its value from (row ranges).
    offsets: Vec<u64>,
    read: bool,
    /// A conditional write: the index of its `<name>_not_applied` operation type.
    not_applied: Option<usize>,
}

/// Whether `cql` is a conditional write (a lightweight transaction): an INSERT, UPDATE or
/// DELETE with an IF clause.
pub fn is_conditional(cql: &str) -> bool {
    let mut words = cql.split_whitespace();
    let dml = words
        .next()
        .is_some_and(|w| ["INSERT", "UPDATE", "DELETE"].iter().any(|d| w.eq_ignore_ascii_case(d)));
    dml && words.any(|w| w.eq_ignore_ascii_case("IF"))
}

pub struct ProfileWorkload {
    session: Arc<Session>,
    ops: Vec<Op>,
    /// Cumulative weights, one per operation.
    cumulative: Vec<u64>,
    partitions: u64,
    rows_per_partition: RowCount,
    select: Distribution,
    /// Mixed into the operation, partition and row choices (0 without a seed).
    salt: u64,
    /// Replicas of each row (`Profile::replicas`).
    replicas: Option<u32>,
}

/// Per worker: for each operation, for each batch row, one value per bind marker.
pub type Buffers = Vec<Vec<Vec<Value>>>;

impl ProfileWorkload {
    /// Creates the keyspace and schema, prepares the operations and matches their binds;
    /// on any error, drops what it created.
    pub async fn setup(session: Arc<Session>, profile: &Profile, recreate: bool) -> Result<ProfileWorkload> {
        let ks = &profile.keyspace;
        // What was there before (with --recreate, a differing keyspace is not kept).
        let before = match schema::keyspace(&session, ks).await? {
            Some(have)
                if recreate && have != schema::KeyspaceState::asked(&profile.replication, profile.durable_writes) =>
            {
                None
            }
            _ => schema::existing_tables(&session, ks).await?,
        };
        schema::ensure_keyspace(&session, ks, &profile.replication, profile.durable_writes, recreate).await?;
        let outcome = Self::build(session.clone(), profile).await;
        if outcome.is_err() {
            schema::cleanup(&session, ks, before.as_ref()).await;
        }
        outcome
    }

    async fn build(session: Arc<Session>, profile: &Profile) -> Result<ProfileWorkload> {
        let ks = &profile.keyspace;
        session.use_keyspace(ks, false).await?;
        for stmt in &profile.schema {
            session
                .query_unpaged(schema::ddl(stmt.as_str()), ())
                .await
                .with_context(|| format!("the server rejected schema statement: {stmt}"))?;
        }
        let _ = session.await_schema_agreement().await;
        if let Some(c) = &profile.compaction {
            super::compaction::alter(&session, ks, &super::stress::created_tables(&profile.schema), c).await?;
        }

        let mut known_columns = BTreeSet::new();
        let mut ops = Vec::new();
        for (name, spec) in &profile.operations {
            let mut statement = session
                .prepare(spec.cql.as_str())
                .await
                .with_context(|| format!("operation {name}: the server rejected its CQL: {}", spec.cql))?;
            if let Some(c) = &spec.consistency {
                statement.set_consistency(parse_consistency(c)?);
            }
            if let Some(c) = &spec.serial_consistency {
                statement.set_serial_consistency(Some(serial(c)?));
            }
            statement.set_is_idempotent(spec.idempotent.unwrap_or(spec.is_read()));
            let mut generators = Vec::new();
            let mut offsets = Vec::new();
            let (range, read) = (spec.range, spec.is_read());
            for col in statement.get_variable_col_specs().iter() {
                let table = col.table_spec().table_name().to_string();
                let columns = schema::table_columns(&session, ks, &table).await?;
                columns.iter().for_each(|(c, _)| {
                    known_columns.insert(c.clone());
                });
                let Some((_, kind)) = columns.iter().find(|(c, _)| c == col.name()) else {
                    bail!(
                        "operation {name} binds `{}`, which is not a column of {ks}.{table}: bind markers must name columns \
                         (write `column = ?`); columns are {}",
                        col.name(),
                        columns.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>().join(", ")
                    );
                };
                let shape = match shape_of(col.typ()) {
                    Ok(shape) => shape,
                    Err(part) => bail!(
                        "operation {name}: no generator can produce {part} (in column `{}`) yet; generated types: \
                         text, ascii, blob, int, bigint, smallint, tinyint, varint, decimal, boolean, double, float, \
                         uuid, timeuuid, timestamp, date, time, inet, counter, vector<float, N>, and lists, sets, maps, \
                         tuples and UDTs of them",
                        col.name()
                    ),
                };
                let role = match kind.as_str() {
                    "partition_key" => Role::Partition,
                    "clustering" => Role::Clustering,
                    _ => Role::Regular,
                };
                // A clustering column bound a second time ends a row range.
                let again = generators.iter().any(|g: &Generator| g.column == col.name());
                let offset = match (role, again) {
                    (_, false) => 0,
                    (Role::Clustering, true) => range.with_context(|| {
                        format!(
                            "operation {name} binds clustering column `{}` twice, a row range: give the rows it \
                             spans with `range: N` (the second bind takes the row N after the first)",
                            col.name()
                        )
                    })?,
                    (_, true) => 0,
                };
                let spec = profile
                    .columns
                    .get(col.name())
                    .cloned()
                    .unwrap_or_else(ColumnSpec::default);
                let mut generator = Generator::seeded(col.name(), spec, role, shape, profile.seed);
                generator.query = read;
                generators.push(generator);
                offsets.push(offset);
            }
            let rows = spec.batch.as_ref().map(|b| b.rows as usize).unwrap_or(1);
            let per_partition = spec
                .batch
                .as_ref()
                .map(|b| (b.rows / b.partitions) as usize)
                .unwrap_or(1);
            let batch = spec.batch.as_ref().map(|b| {
                let mut batch = Batch::new(match b.kind {
                    BatchKind::Unlogged => BatchType::Unlogged,
                    BatchKind::Logged => BatchType::Logged,
                    BatchKind::Counter => BatchType::Counter,
                });
                for _ in 0..b.rows {
                    batch.append_statement(statement.clone());
                }
                if let Some(c) = statement.get_consistency() {
                    batch.set_consistency(c);
                }
                batch.set_is_idempotent(statement.get_is_idempotent());
                batch
            });
            ops.push(Op {
                name: name.clone(),
                traced: (traced(&statement), batch.as_ref().map(traced)),
                statement,
                batch,
                rows,
                per_partition,
                generators,
                offsets,
                read: spec.is_read(),
                not_applied: None,
            });
        }
        // Conditional writes' not-applied outcomes are operation types after the profile's.
        let mut next = ops.len();
        for (op, spec) in ops.iter_mut().zip(profile.operations.values()) {
            if is_conditional(&spec.cql) {
                op.not_applied = Some(next);
                next += 1;
            }
        }
        for col in profile.columns.keys() {
            if !known_columns.contains(col) {
                bail!(
                    "columns names `{col}`, which no operation's table has (tables' columns: {})",
                    known_columns.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
        let mut sum = 0;
        let cumulative = profile
            .operations
            .values()
            .map(|o| {
                sum += u64::from(o.weight);
                sum
            })
            .collect();
        Ok(ProfileWorkload {
            session,
            ops,
            cumulative,
            partitions: profile.partitions,
            rows_per_partition: profile.rows_per_partition,
            select: profile.partition_select,
            salt: if profile.seed == 0 { 0 } else { mix(profile.seed) },
            replicas: profile.replicas(),
        })
    }

    /// How many replicas the keyspace keeps of a row (None: its replication map gives none).
    pub fn replicas(&self) -> Option<u32> {
        self.replicas
    }

    fn choose(&self, i: u64) -> usize {
        let total = *self.cumulative.last().expect("at least one operation");
        let x = mix(i ^ OP_SALT ^ self.salt) % total;
        self.cumulative.iter().position(|&c| x < c).expect("x below the total")
    }

    /// Partition and first row of operation `i`, which writes `per` rows of each partition.
    fn address(&self, i: u64, per: u64) -> (u64, u64) {
        let (p, r) = (self.partitions, self.rows_per_partition.max());
        match self.select {
            Distribution::Sequence => (i % p, (i / p).wrapping_mul(per) % r),
            d => (
                draw(d, mix(i ^ PARTITION_SALT ^ self.salt), p, i),
                mix(i ^ ROW_SALT ^ self.salt) % r,
            ),
        }
    }

    /// Runs operation `op` on rows `first_row..` of `partition` (and of the partitions after
    /// it, for batches spread over several).
    /// Traced (`--trace-slow`) when `traced`: what it gives besides the outcome is the trace's id.
    pub async fn execute_at(
        &self,
        buffers: &mut Buffers,
        op: usize,
        partition: u64,
        first_row: u64,
        trace: bool,
    ) -> (Outcome, Option<uuid::Uuid>) {
        let o = &self.ops[op];
        let rows = &mut buffers[op];
        let per = o.per_partition as u64;
        for (k, row) in rows.iter_mut().enumerate() {
            let k = k as u64;
            let p = (partition + k / per) % self.partitions;
            let r = (first_row + k % per) % self.rows_per_partition.rows_in(p);
            for ((g, off), v) in o.generators.iter().zip(&o.offsets).zip(row.iter_mut()) {
                g.render(g.index(p, r + off), v);
            }
        }
        let (statement, batch) = if trace {
            (&o.traced.0, &o.traced.1)
        } else {
            (&o.statement, &o.batch)
        };
        let (result, trace) = match batch {
            Some(b) => match self.session.batch(b, &rows[..]).await {
                Ok(r) => (Ok((o.rows as u64, (o.rows / o.per_partition) as u64)), r.tracing_id()),
                Err(e) => (Err(e), None),
            },
            None => match self.session.execute_unpaged(statement, &rows[0]).await {
                Ok(r) => {
                    let trace = r.tracing_id();
                    if o.read {
                        (
                            Ok((r.into_rows_result().map(|r| r.rows_num() as u64).unwrap_or(0), 1)),
                            trace,
                        )
                    } else if let Some(na) = o.not_applied.filter(|_| !applied(r)) {
                        let outcome = Outcome {
                            op: na,
                            result: Ok((0, 1)),
                        };
                        return (outcome, trace);
                    } else {
                        (Ok((1, 1)), trace)
                    }
                }
                Err(e) => (Err(e), None),
            },
        };
        let outcome = Outcome {
            op,
            result: result.map_err(|e| classify(&e)),
        };
        (outcome, trace)
    }

    /// Operations needed to write every row of every partition with operation `op`, or only
    /// each partition's first `rows` rows.
    pub fn populate_ops(&self, op: usize, rows: Option<u64>) -> u64 {
        let o = &self.ops[op];
        let rows = rows.map_or(self.rows_per_partition.max(), |r| r.min(self.rows_per_partition.max()));
        self.partition_groups(o) * rows.div_ceil(o.per_partition as u64)
    }

    /// How many operations it takes to touch every partition once.
    fn partition_groups(&self, o: &Op) -> u64 {
        self.partitions.div_ceil((o.rows / o.per_partition) as u64)
    }

    /// The table each operation type works on (as the server reports it), for per-table
    /// results, in the order of `op_names`.
    pub fn op_tables(&self) -> Vec<String> {
        let table = |o: &Op| {
            o.statement
                .get_table_spec()
                .map(|t| t.table_name().to_string())
                .unwrap_or_default()
        };
        let not_applied = self.ops.iter().filter(|o| o.not_applied.is_some());
        self.ops.iter().chain(not_applied).map(table).collect()
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn op_index(&self, name: &str) -> Option<usize> {
        self.ops.iter().position(|o| o.name == name)
    }
}

impl Workload for ProfileWorkload {
    type Worker = Buffers;

    fn op_names(&self) -> Vec<String> {
        let not_applied = self
            .ops
            .iter()
            .filter(|o| o.not_applied.is_some())
            .map(|o| format!("{}_not_applied", o.name));
        self.ops.iter().map(|o| o.name.clone()).chain(not_applied).collect()
    }

    fn worker(&self, _id: usize) -> Buffers {
        self.ops
            .iter()
            .map(|o| {
                (0..o.rows)
                    .map(|_| (0..o.generators.len()).map(|_| Value::Int(0)).collect())
                    .collect()
            })
            .collect()
    }

    fn op_of(&self, i: u64) -> usize {
        self.choose(i)
    }

    async fn execute(&self, w: &mut Buffers, i: u64) -> Outcome {
        let op = self.choose(i);
        let (p, r) = self.address(i, self.ops[op].per_partition as u64);
        self.execute_at(w, op, p, r, false).await.0
    }

    fn traces(&self) -> bool {
        true
    }

    async fn execute_traced(&self, w: &mut Buffers, i: u64) -> (Outcome, Option<uuid::Uuid>) {
        let op = self.choose(i);
        let (p, r) = self.address(i, self.ops[op].per_partition as u64);
        self.execute_at(w, op, p, r, true).await
    }

    fn statements(&self) -> Vec<String> {
        self.ops
            .iter()
            .map(|o| o.statement.get_statement().to_string())
            .collect()
    }

    fn facts(&self, i: u64) -> crate::engine::OpFacts {
        let op = self.choose(i);
        crate::engine::OpFacts {
            index: i,
            partition: Some(self.address(i, self.ops[op].per_partition as u64).0),
            token: None,
            statement: Some(op as u32),
        }
    }
}

/// Whether a conditional write's result says it was applied (its first column, `[applied]`);
/// a result that does not say counts as applied.
pub fn applied(r: scylla::response::query_result::QueryResult) -> bool {
    let Ok(rows) = r.into_rows_result() else { return true };
    let Ok(mut iter) = rows.rows::<scylla::value::Row>() else {
        return true;
    };
    match iter.next() {
        Some(Ok(row)) => !matches!(row.columns.first(), Some(Some(scylla::value::CqlValue::Boolean(false)))),
        _ => true,
    }
}

fn serial(s: &str) -> Result<scylla::statement::SerialConsistency> {
    use scylla::statement::SerialConsistency;
    match s.to_ascii_lowercase().as_str() {
        "serial" => Ok(SerialConsistency::Serial),
        "local_serial" => Ok(SerialConsistency::LocalSerial),
        _ => bail!("'{s}' is not a serial consistency: use serial or local_serial"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditional_writes_are_told_from_the_rest() {
        for lwt in [
            "INSERT INTO t (k, v) VALUES (?, ?) IF NOT EXISTS",
            "update t set v = ? where k = ? if v = ?",
            "DELETE FROM t WHERE k = ? IF EXISTS",
        ] {
            assert!(is_conditional(lwt), "{lwt}");
        }
        for plain in [
            "INSERT INTO t (k, v) VALUES (?, ?)",
            "SELECT v FROM t WHERE k = ?",
            "UPDATE t SET iffy = ? WHERE k = ?",
        ] {
            assert!(!is_conditional(plain), "{plain}");
        }
    }
}
