//! Replaying a captured trace (`caplab run --replay TRACE`): operation `i` is the trace's `i`-th
//! query or batch, sent with the values, consistency, serial consistency, page size and client
//! timestamp the application gave it, on the schedule of the trace's own start times (the
//! engine's `Shape::of_times`, `speed` times as fast; a capacity search's steps loop it, and its
//! flat-out probe sends it in order as fast as it can). Each distinct statement is prepared once;
//! every worker holds its own copies of the statements and batches, so sending an entry only
//! sets its options on them: nothing is built per operation. With `keyspace`, everything goes to
//! that keyspace instead of the trace's own, whose schema is copied there first if it is missing.

mod bound;
pub mod reads;
mod rename;
pub mod trace;

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use scylla::response::PagingState;
use scylla::statement::batch::{Batch, BatchStatement, BatchType};
use scylla::statement::prepared::PreparedStatement;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

use crate::client::classify;
use crate::engine::{Outcome, Workload};
use bound::{BatchRows, Row};
pub use trace::Trace;
use trace::{Sent, Value};

/// What `--replay` asks, and what the trace held (for result.json).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayOptions {
    /// The trace file (`caplab capture` writes one).
    pub trace: PathBuf,
    /// How many times as fast as it was captured.
    pub speed: f64,
    /// The keyspace replayed into instead of the trace's own.
    pub keyspace: Option<String>,
    /// Queries and batches replayed, and the trace's length at speed 1.
    #[serde(default)]
    pub entries: u64,
    #[serde(default)]
    pub captured_s: f64,
    /// Schema statements in the trace, not replayed.
    #[serde(default)]
    pub schema_left_out: usize,
    /// Every answer's rows kept as a digest (`reads.rs`), the trace replayed in order, one
    /// operation at a time.
    #[serde(default)]
    pub results: bool,
}

impl ReplayOptions {
    /// The trace's timing as the rate a run follows at `speed`, played once or looping.
    pub fn rate(&self, trace: &Trace, speed: f64, looping: bool) -> Result<crate::engine::Shape> {
        let again = if looping { ", looping" } else { "" };
        crate::engine::Shape::of_times(
            &trace.counts(),
            speed,
            looping,
            format!("{} at {}x{again}", self.trace.display(), round(speed)),
        )
        .map_err(anyhow::Error::msg)
    }

    /// The trace's mean rate at the speed it was captured.
    pub fn captured_rate(&self, trace: &Trace) -> Result<f64> {
        Ok(self.rate(trace, 1.0, false)?.mean_rate())
    }
}

/// A speed as results show it: three significant digits.
fn round(speed: f64) -> f64 {
    let scale = 10f64.powi(2 - speed.abs().log10().floor() as i32);
    (speed * scale).round() / scale
}

/// A trace ready to replay on a session.
pub struct Replay {
    session: Arc<Session>,
    pub trace: Arc<Trace>,
    /// The trace's statements as replayed (moved to `--keyspace`).
    texts: Vec<trace::Text>,
    statements: Vec<PreparedStatement>,
    batches: Vec<Batch>,
    /// The operation type of each query statement and each batch shape.
    query_op: Vec<usize>,
    batch_op: Vec<usize>,
    names: Vec<String>,
    /// Each operation type's statement (a batch's first), for results.
    pub op_statements: Vec<String>,
    pub options: ReplayOptions,
    /// What the reads returned, with `--results`.
    pub reads: Option<reads::Reads>,
    /// Each entry's partition key token (a batch's first statement's), for the operations file.
    tokens: Vec<Option<i64>>,
}

/// Per worker: its own copies of the statements and batches, whose options each entry sets.
pub struct ReplayWorker {
    statements: Vec<PreparedStatement>,
    batches: Vec<Batch>,
    reads: Option<reads::WorkerReads>,
}

impl Replay {
    /// Moves the trace to `--keyspace` (copying the schema there if missing), and prepares each
    /// distinct statement once.
    pub async fn setup(session: Arc<Session>, trace: Arc<Trace>, options: ReplayOptions) -> Result<Replay> {
        let mut texts = trace.texts.clone();
        let from = trace.keyspaces();
        if let Some(to) = &options.keyspace {
            let [from] = from.as_slice() else {
                bail!(
                    "--keyspace moves a trace of one keyspace; {} uses {}: replay it without --keyspace",
                    options.trace.display(),
                    if from.is_empty() {
                        "none by name".to_string()
                    } else {
                        from.join(", ")
                    }
                );
            };
            for t in &mut texts {
                t.cql = rename::rename(&t.cql, from, to);
                t.keyspace = t.keyspace.as_ref().map(|_| to.clone());
            }
            copy_schema(&session, from, to).await?;
        } else {
            for ks in &from {
                if crate::workload::schema::keyspace(&session, ks).await?.is_none() {
                    bail!(
                        "the trace's keyspace {ks} does not exist on this cluster: create the application's schema first \
                         (or replay into a copy of it with --keyspace NAME, from a cluster that has it)"
                    );
                }
            }
        }
        let statements = prepare(&session, &texts).await?;
        let batches = trace
            .batches
            .iter()
            .map(|b| {
                let kind = match b.kind.as_str() {
                    "UNLOGGED" => BatchType::Unlogged,
                    "COUNTER" => BatchType::Counter,
                    _ => BatchType::Logged,
                };
                let list = b
                    .statements
                    .iter()
                    .map(|&s| BatchStatement::PreparedStatement(statements[s].clone()));
                Batch::new_with_statements(kind, list.collect())
            })
            .collect();
        let (names, op_statements, query_op, batch_op) = operations(&trace, &texts);
        let tokens = trace
            .entries
            .iter()
            .map(|e| {
                let first = match e.sent {
                    Sent::Query(t) => t,
                    Sent::Batch(b) => trace.batches[b].statements[0],
                };
                let row = Row(e.rows.first()?);
                statements[first]
                    .calculate_token(&row)
                    .ok()
                    .flatten()
                    .map(|t| t.value())
            })
            .collect();
        Ok(Replay {
            session,
            trace,
            texts,
            statements,
            batches,
            query_op,
            batch_op,
            names,
            op_statements,
            reads: options.results.then(reads::Reads::default),
            options,
            tokens,
        })
    }

    /// The table each operation type names, for the CSV.
    pub fn op_tables(&self) -> Vec<String> {
        self.op_statements
            .iter()
            .map(|s| table(s).unwrap_or_default())
            .collect()
    }

    /// Operation `i`'s entry: the trace's `i`-th, or, looping (a capacity search), again from
    /// its start.
    fn entry(&self, i: u64) -> &trace::Entry {
        &self.trace.entries[(i % self.trace.entries.len() as u64) as usize]
    }

    /// The keyspaces replayed into.
    pub fn keyspaces(&self) -> Vec<String> {
        trace::keyspaces(&self.texts)
    }
}

/// Prepares every statement once, in the keyspace its session was in (a statement the
/// application sent unprepared is prepared too: sending it as written would copy its text for
/// every operation).
async fn prepare(session: &Session, texts: &[trace::Text]) -> Result<Vec<PreparedStatement>> {
    let mut out: Vec<Option<PreparedStatement>> = vec![None; texts.len()];
    let mut keyspaces: Vec<Option<&String>> = texts.iter().map(|t| t.keyspace.as_ref()).collect();
    keyspaces.sort();
    keyspaces.dedup();
    for ks in keyspaces {
        if let Some(ks) = ks {
            session
                .use_keyspace(ks, true)
                .await
                .with_context(|| format!("cannot use keyspace {ks} to prepare the trace's statements"))?;
        }
        for (i, t) in texts.iter().enumerate().filter(|(_, t)| t.keyspace.as_ref() == ks) {
            out[i] = Some(session.prepare(t.cql.as_str()).await.with_context(|| {
                format!(
                    "cannot prepare the trace's statement `{}`: its tables must exist with the columns it names",
                    t.cql
                )
            })?);
        }
    }
    Ok(out
        .into_iter()
        .map(|s| s.expect("every statement's keyspace"))
        .collect())
}

/// Copies keyspace `from`'s schema (as the server describes it) to `to`, unless `to` exists.
async fn copy_schema(session: &Session, from: &str, to: &str) -> Result<()> {
    use crate::workload::schema;
    if schema::keyspace(session, to).await?.is_some() {
        return Ok(());
    }
    let Some(ddl) = schema::describe(session, from).await else {
        bail!(
            "keyspace {to} does not exist, and the trace's keyspace {from} is not on this cluster to copy it from: \
             create {to} with the application's schema first"
        );
    };
    for cql in &ddl {
        let moved = rename::rename(cql, from, to);
        session
            .query_unpaged(schema::ddl(moved.clone()), ())
            .await
            .with_context(|| format!("cannot copy the schema of {from} to {to}: `{moved}` failed"))?;
    }
    let _ = session.await_schema_agreement().await;
    crate::console::say(&format!(
        "Copied keyspace {from}'s schema to {to} ({} statements)",
        ddl.len()
    ));
    Ok(())
}

/// Operation types: one per statement sent alone, one per batch shape, each named by what it
/// does (`insert_users`, `select_users`, `batch_unlogged_insert_users`), with the statement
/// (a batch's first) it names. Returns (names, statements, each query's type, each batch's).
fn operations(trace: &Trace, texts: &[trace::Text]) -> (Vec<String>, Vec<String>, Vec<usize>, Vec<usize>) {
    let mut names: Vec<String> = Vec::new();
    let mut statements = Vec::new();
    let mut name = |base: String, cql: &str, names: &mut Vec<String>| {
        let mut n = base.clone();
        let mut k = 2;
        while names.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        names.push(n);
        statements.push(cql.to_string());
        names.len() - 1
    };
    let mut query_op = vec![usize::MAX; texts.len()];
    for e in &trace.entries {
        if let Sent::Query(t) = e.sent
            && query_op[t] == usize::MAX
        {
            let cql = &texts[t].cql;
            query_op[t] = name(label(cql), cql, &mut names);
        }
    }
    let batch_op = trace
        .batches
        .iter()
        .map(|b| {
            let cql = &texts[b.statements[0]].cql;
            let base = format!("batch_{}_{}", b.kind.to_ascii_lowercase(), label(cql));
            name(base, cql, &mut names)
        })
        .collect();
    (names, statements, query_op, batch_op)
}

/// The table a statement names after FROM, INTO or UPDATE (without its keyspace).
fn table(cql: &str) -> Option<String> {
    let words: Vec<&str> = cql.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| ["FROM", "INTO", "UPDATE"].contains(&w[0].to_ascii_uppercase().as_str()))
        .map(|w| {
            let t = w[1].rsplit('.').next().unwrap_or(w[1]);
            t.split('(').next().unwrap_or(t).trim_matches('"').to_ascii_lowercase()
        })
        .filter(|t| !t.is_empty())
}

/// `insert_users` for `INSERT INTO app.users …`, `update_users_if` for a conditional one.
fn label(cql: &str) -> String {
    let verb = cql
        .split_whitespace()
        .next()
        .map_or("statement".into(), |w| w.to_ascii_lowercase());
    let mut out = match table(cql) {
        Some(t) => format!("{verb}_{t}"),
        None => verb,
    };
    if cql.split_whitespace().any(|w| w.eq_ignore_ascii_case("IF")) {
        out.push_str("_if");
    }
    out
}

impl Workload for Replay {
    type Worker = ReplayWorker;

    fn op_names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn worker(&self, _id: usize) -> ReplayWorker {
        ReplayWorker {
            statements: self.statements.clone(),
            batches: self.batches.clone(),
            reads: self.reads.as_ref().map(reads::Reads::worker),
        }
    }

    fn op_of(&self, i: u64) -> usize {
        match self.entry(i).sent {
            Sent::Query(t) => self.query_op[t],
            Sent::Batch(b) => self.batch_op[b],
        }
    }

    /// The statements as replayed (after `--keyspace`), each once.
    fn statements(&self) -> Vec<String> {
        self.texts.iter().map(|t| t.cql.clone()).collect()
    }

    fn facts(&self, i: u64) -> crate::engine::OpFacts {
        let at = (i % self.trace.entries.len() as u64) as usize;
        let statement = match self.trace.entries[at].sent {
            Sent::Query(t) => t,
            Sent::Batch(b) => self.trace.batches[b].statements[0],
        };
        crate::engine::OpFacts {
            index: i,
            partition: None,
            token: self.tokens[at],
            statement: Some(statement as u32),
        }
    }

    async fn execute(&self, w: &mut ReplayWorker, i: u64) -> Outcome {
        self.send(w, i, false).await.0
    }

    fn traces(&self) -> bool {
        true
    }

    async fn execute_traced(&self, w: &mut ReplayWorker, i: u64) -> (Outcome, Option<uuid::Uuid>) {
        self.send(w, i, true).await
    }
}

impl Replay {
    /// Sends entry `i` with its own options, traced or not; its outcome and trace id.
    async fn send(&self, w: &mut ReplayWorker, i: u64, trace: bool) -> (Outcome, Option<uuid::Uuid>) {
        let e = self.entry(i);
        let op = self.op_of(i);
        let result = match e.sent {
            Sent::Query(t) => {
                let row = Row(&e.rows[0]);
                let p = &mut w.statements[t];
                p.set_consistency(e.consistency);
                p.set_serial_consistency(e.serial);
                p.set_timestamp(e.timestamp);
                p.set_tracing(trace);
                match e.page_size {
                    Some(size) => {
                        p.set_page_size(size);
                        self.session
                            .execute_single_page(p, row, PagingState::start())
                            .await
                            .map(|(answer, _)| answer)
                    }
                    None => self.session.execute_unpaged(p, row).await,
                }
            }
            Sent::Batch(b) => {
                let batch = &mut w.batches[b];
                batch.set_consistency(e.consistency);
                batch.set_serial_consistency(e.serial);
                batch.set_timestamp(e.timestamp);
                batch.set_tracing(trace);
                let rows: &[Box<[Value]>] = &e.rows;
                self.session.batch(batch, BatchRows(rows)).await
            }
        };
        let mut traced = None;
        let result = result.map(|answer| {
            traced = answer.tracing_id();
            if let Some(reads) = &mut w.reads {
                reads.note(i, op, answer);
            }
        });
        let statements = e.rows.len() as u64;
        let outcome = Outcome {
            op,
            result: result.map(|_| (statements, 1)).map_err(|err| classify(&err)),
        };
        (outcome, traced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_named_by_what_they_do() {
        assert_eq!(label("INSERT INTO app.users (k, v) VALUES (?, ?)"), "insert_users");
        assert_eq!(label("select v from users where k = ?"), "select_users");
        assert_eq!(
            label("UPDATE \"App\".Accounts SET v = ? WHERE k = ? IF v = ?"),
            "update_accounts_if"
        );
        assert_eq!(label("INSERT INTO t(k) VALUES (?) IF NOT EXISTS"), "insert_t_if");
    }
}
