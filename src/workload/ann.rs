//! Recall of a profile's ANN queries (`ORDER BY col ANN OF ? LIMIT k`): after the run, a sample
//! of query vectors (drawn as the run's queries are) is sent to the server, and the answers are
//! compared with the exact k nearest rows, which caplab finds itself by scanning the table once
//! and scoring every stored vector against every query with the index's own similarity
//! function. Judged against what the table holds, not against what caplab meant to write: rows
//! written by the run or before it count alike. Memory is the sample's vectors and k keys per
//! query, whatever the table's size; time is one scan plus `queries` × rows × dimensions
//! multiply-adds.

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use scylla::deserialize::row::{ColumnIterator, DeserializeRow};
use scylla::deserialize::value::DeserializeValue;
use scylla::deserialize::{DeserializationError, TypeCheckError};
use scylla::frame::response::result::ColumnSpec;
use scylla::response::PagingState;
use scylla::value::CqlValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Instant;

use super::generate::{Generator, Role, Shape, Value};
use super::profile::Profile;
use super::values::mix;
use super::vector::{Exact, Similarity, recall};
use crate::client::parse_consistency;

/// Query vectors in the sample when the caller does not say.
pub const DEFAULT_QUERIES: usize = 100;
const SAMPLE_SALT: u64 = 0x7361_6d70_6c65_7172;

/// What the sample found for one ANN operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recall {
    pub operation: String,
    /// The operation's LIMIT.
    pub k: usize,
    pub queries: usize,
    /// Mean over the queries of the share of their exact k nearest rows returned.
    pub mean: f64,
    pub min: f64,
    /// Share of queries that returned every one of their k nearest rows.
    pub complete: f64,
    /// Rows scanned for the exact neighbours (the table's rows with a vector).
    pub rows: u64,
    pub similarity: Similarity,
    pub consistency: String,
    pub elapsed_s: f64,
}

impl Recall {
    pub fn line(&self) -> String {
        format!(
            "{}: recall@{} {:.3} (mean of {} queries; lowest {:.2}; {:.0} % found all {}) against the exact neighbours among {} rows ({:?}), {:.1} s",
            self.operation,
            self.k,
            self.mean,
            self.queries,
            self.min,
            self.complete * 100.0,
            self.k,
            self.rows,
            self.similarity,
            self.elapsed_s
        )
    }
}

/// Whether `cql` is an ANN query.
pub fn is_ann(cql: &str) -> bool {
    let words: Vec<String> = cql.split_whitespace().map(str::to_ascii_uppercase).collect();
    words.windows(2).any(|w| w[0] == "ANN" && w[1] == "OF")
}

/// The literal `LIMIT k` of a query.
fn limit(cql: &str) -> Option<usize> {
    let words: Vec<&str> = cql.split_whitespace().collect();
    let at = words.iter().position(|w| w.eq_ignore_ascii_case("LIMIT"))?;
    words.get(at + 1)?.trim_end_matches(';').parse().ok()
}

/// Whether the profile has an operation whose recall can be measured.
pub fn has_ann(profile: &Profile) -> bool {
    profile.operations.values().any(|o| is_ann(&o.cql))
}

/// Measures the recall of each of `profile`'s ANN operations over `queries` query vectors;
/// `stopped` ends it early (with an error: a part of a sample is no estimate).
pub async fn measure(
    session: &Session,
    profile: &Profile,
    queries: usize,
    default_consistency: scylla::statement::Consistency,
    stopped: impl Fn() -> bool,
) -> Result<Vec<Recall>> {
    let mut all = Vec::new();
    for (name, op) in profile.operations.iter().filter(|(_, o)| is_ann(&o.cql)) {
        let began = Instant::now();
        let target = Target::of(session, profile, name, &op.cql).await?;
        let consistency = op.consistency.as_deref().map(parse_consistency).transpose()?;
        let vectors = target.sample(profile, queries);
        let mut answers = Vec::with_capacity(vectors.len());
        let mut ann = session
            .prepare(format!(
                "SELECT {} FROM {}.{} ORDER BY {} ANN OF ? LIMIT {}",
                target.keys.join(", "),
                profile.keyspace,
                target.table,
                target.column,
                target.k
            ))
            .await?;
        let mut scan = session
            .prepare(format!(
                "SELECT {}, {} FROM {}.{}",
                target.column,
                target.keys.join(", "),
                profile.keyspace,
                target.table
            ))
            .await?;
        if let Some(c) = consistency {
            ann.set_consistency(c);
            scan.set_consistency(c);
        }
        scan.set_page_size(1000);
        for v in &vectors {
            if stopped() {
                bail!("stopped before the recall sample was complete");
            }
            let rows = session
                .execute_unpaged(&ann, (v,))
                .await
                .with_context(|| format!("operation {name}: an ANN query of the recall sample failed"))?
                .into_rows_result()?;
            answers.push(
                rows.rows::<scylla::value::Row>()?
                    .map(|r| r.map(|r| r.columns))
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
        let mut exact = Exact::new(target.similarity, vectors, target.k);
        let mut paging = PagingState::start();
        loop {
            if stopped() {
                bail!("stopped while scanning {} for the exact neighbours", target.table);
            }
            let (page, next) = session
                .execute_single_page(&scan, (), paging)
                .await
                .with_context(|| format!("scanning {} for the exact neighbours failed", target.table))?;
            for row in page.into_rows_result()?.rows::<Stored>()? {
                let row = row?;
                if let Some(v) = &row.vector {
                    exact.offer(v, &row.key);
                }
            }
            match next.into_paging_control_flow() {
                ControlFlow::Continue(state) => paging = state,
                ControlFlow::Break(()) => break,
            }
        }
        let found: Vec<f64> = answers
            .iter()
            .enumerate()
            .map(|(q, a)| recall(a, exact.neighbours(q)))
            .collect();
        let n = found.len().max(1) as f64;
        all.push(Recall {
            operation: name.clone(),
            k: target.k,
            queries: found.len(),
            mean: found.iter().sum::<f64>() / n,
            min: found.iter().copied().fold(1.0, f64::min),
            complete: found.iter().filter(|r| **r >= 1.0).count() as f64 / n,
            rows: exact.rows,
            similarity: target.similarity,
            consistency: format!("{:?}", consistency.unwrap_or(default_consistency)),
            elapsed_s: began.elapsed().as_secs_f64(),
        });
    }
    Ok(all)
}

/// Where an ANN operation searches.
struct Target {
    table: String,
    column: String,
    dimensions: u16,
    k: usize,
    /// Primary key columns, partition key first.
    keys: Vec<String>,
    similarity: Similarity,
}

impl Target {
    async fn of(session: &Session, profile: &Profile, name: &str, cql: &str) -> Result<Target> {
        let ks = &profile.keyspace;
        let Some(k) = limit(cql) else {
            bail!(
                "operation {name}: recall is measured for `ANN OF ? LIMIT k` with a number k; write the limit as a number"
            )
        };
        if cql.split_whitespace().any(|w| w.eq_ignore_ascii_case("WHERE")) {
            bail!(
                "operation {name}: recall is measured for ANN queries without a WHERE clause (the exact neighbours of a filtered query are not computed yet)"
            );
        }
        let prepared = session.prepare(cql).await?;
        let spec = prepared
            .get_variable_col_specs()
            .iter()
            .find(|c| matches!(shape(c), Some(Shape::Vector(_))))
            .with_context(|| format!("operation {name}: no vector<float, N> is bound to ANN OF ?"))?;
        let Some(Shape::Vector(dimensions)) = shape(spec) else {
            unreachable!()
        };
        let (table, column) = (spec.table_spec().table_name().to_string(), spec.name().to_string());
        let r = session
            .query_unpaged(
                "SELECT column_name, kind, position FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
                (ks, &table),
            )
            .await?
            .into_rows_result()?;
        let mut keys: Vec<(u8, i32, String)> = Vec::new();
        for row in r.rows::<(String, String, i32)>()? {
            let (c, kind, pos) = row?;
            match kind.as_str() {
                "partition_key" => keys.push((0, pos, c)),
                "clustering" => keys.push((1, pos, c)),
                _ => {}
            }
        }
        keys.sort();
        let r = session
            .query_unpaged(
                "SELECT options FROM system_schema.indexes WHERE keyspace_name = ? AND table_name = ?",
                (ks, &table),
            )
            .await?
            .into_rows_result()?;
        let mut similarity = Similarity::Cosine;
        for row in r.rows::<(BTreeMap<String, String>,)>()? {
            let (options,) = row?;
            if options.get("target").is_some_and(|t| t.trim_matches('"') == column)
                && let Some(f) = options.get("similarity_function")
            {
                similarity = Similarity::parse(f).with_context(|| {
                    format!("index on {table}.{column}: similarity_function {f} is not one caplab knows")
                })?;
            }
        }
        Ok(Target {
            table,
            column,
            dimensions,
            k,
            keys: keys.into_iter().map(|(_, _, c)| c).collect(),
            similarity,
        })
    }

    /// The sample's query vectors: as the run's queries, for partitions chosen by a hash.
    fn sample(&self, profile: &Profile, queries: usize) -> Vec<Vec<f32>> {
        let spec = profile.columns.get(&self.column).cloned().unwrap_or_default();
        let mut g = Generator::seeded(
            &self.column,
            spec,
            Role::Regular,
            Shape::Vector(self.dimensions),
            profile.seed,
        );
        g.query = true;
        let mut value = Value::Vector(Vec::new());
        (0..queries as u64)
            .map(|j| {
                let p = mix(j ^ SAMPLE_SALT) % profile.partitions.max(1);
                g.render(g.index(p, 0), &mut value);
                let Value::Vector(v) = &value else { unreachable!() };
                v.clone()
            })
            .collect()
    }
}

fn shape(spec: &ColumnSpec) -> Option<Shape> {
    super::generate::shape_of(spec.typ()).ok()
}

/// A scanned row: its vector (None when the row has none) and its primary key.
struct Stored {
    vector: Option<Vec<f32>>,
    key: Vec<Option<CqlValue>>,
}

impl<'frame, 'metadata> DeserializeRow<'frame, 'metadata> for Stored {
    fn type_check(specs: &[ColumnSpec]) -> Result<(), TypeCheckError> {
        match specs.first() {
            Some(s) => <Option<Vec<f32>> as DeserializeValue>::type_check(s.typ()),
            None => Err(TypeCheckError::new(NoColumns)),
        }
    }

    fn deserialize(mut row: ColumnIterator<'frame, 'metadata>) -> Result<Self, DeserializationError> {
        let first = row.next().ok_or_else(|| DeserializationError::new(NoColumns))??;
        let vector = <Option<Vec<f32>> as DeserializeValue>::deserialize(first.spec.typ(), first.slice)?;
        let mut key = Vec::new();
        for column in row {
            let column = column?;
            key.push(<Option<CqlValue> as DeserializeValue>::deserialize(
                column.spec.typ(),
                column.slice,
            )?);
        }
        Ok(Stored { vector, key })
    }
}

#[derive(Debug)]
struct NoColumns;

impl std::fmt::Display for NoColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a scanned row has no columns")
    }
}

impl std::error::Error for NoColumns {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ann_queries_and_their_limit_are_recognised() {
        let q = "SELECT id FROM items ORDER BY embedding ANN OF ? LIMIT 10";
        assert!(is_ann(q) && is_ann("select id from t order by v ann  of ? limit 5;"));
        assert!(!is_ann("SELECT id FROM items WHERE id = ?"));
        assert_eq!(limit(q), Some(10));
        assert_eq!(limit("select id from t order by v ann of ? limit 5;"), Some(5));
        assert_eq!(limit("SELECT id FROM t ORDER BY v ANN OF ? LIMIT ?"), None);
    }
}
