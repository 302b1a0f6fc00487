//! A workload spread over many tables of one schema (`--tables N`): their names, creating the
//! ones missing with progress (those that exist, checked as one, are kept), and what making
//! them cost, recorded with the run; and which table a partition goes to (evenly, or skewed by
//! `--table-select`). Schema size is where clusters hurt (a memtable and its
//! metadata per table, heap, flush storms), so the figures say how many tables the whole
//! cluster held, not only the workload's.

use anyhow::{Context, Result};
use scylla::client::session::Session;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use super::schema;
use super::values::{Distribution, draw, mix};
use crate::console::{group, say};

/// Mixed into a partition's index before its table is drawn from a skewed spread.
const TABLE_SALT: u64 = 0x7ab1_e5e1_ec70_0001;

/// The table (of `tables`) partition `p` goes to: p mod N, or drawn by `select` from a hash of
/// p (the same table every run).
pub fn table_of(select: Distribution, tables: u32, p: u64) -> usize {
    let n = u64::from(tables.max(1));
    match select {
        Distribution::Uniform | Distribution::Sequence => (p % n) as usize,
        // `draw`'s Zipf inverts the continuous law over [1, n], which never reaches its last
        // index: over n + 1 every table gets its share.
        Distribution::Zipf => draw(Distribution::Zipf, mix(p ^ TABLE_SALT), n + 1, p) as usize,
        d => draw(d, mix(p ^ TABLE_SALT), n, p) as usize,
    }
}

/// `--table-select`: uniform, gaussian, exponential or zipf.
pub fn parse_select(s: &str) -> Result<Distribution, String> {
    match serde_json::from_value(serde_json::Value::String(s.to_ascii_lowercase())) {
        Ok(Distribution::Sequence) | Err(_) => {
            Err(format!("'{s}' is not a spread: uniform, gaussian, exponential or zipf"))
        }
        Ok(d) => Ok(d),
    }
}

/// The most tables a workload is spread over (names are zero-padded to four digits).
pub const MAX_TABLES: u32 = 10_000;

/// How often creating many tables says how far it got.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// What making the workload's tables took, as result.json records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TablesMade {
    /// Tables the workload is spread over.
    pub tables: u32,
    /// Of those, created by this run (the rest existed with the settings asked).
    pub created: u32,
    /// Seconds spent creating them (each CREATE TABLE waits for the cluster's schema agreement).
    pub create_s: f64,
    /// Tables in every keyspace of the cluster after that, system ones included: each holds a
    /// memtable of its own.
    pub on_cluster: u64,
}

/// Table `t` of `n` spread ones named `base`: `base` itself when there is one, else
/// `base_0000`, `base_0001`, …
pub fn name(base: &str, n: u32, t: u32) -> String {
    if n <= 1 {
        base.to_string()
    } else {
        format!("{base}_{t:04}")
    }
}

/// What the tables are called, in a line (the CSV's `table` column too): `e1_insert` or
/// `e1_insert_0000..e1_insert_0999`.
pub fn label(base: &str, n: u32) -> String {
    if n <= 1 {
        base.to_string()
    } else {
        format!("{}..{}", name(base, n, 0), name(base, n, n - 1))
    }
}

/// Creates every table of `names` in `ks` that `missing` says is missing, with `create`'s
/// statement, saying how far it got every 10 s when there are many; then counts the
/// cluster's tables.
pub async fn create_missing(
    session: &Session,
    ks: &str,
    names: &[String],
    missing: impl Fn(&str) -> bool,
    create: impl Fn(&str) -> String,
) -> Result<TablesMade> {
    let todo: Vec<&String> = names.iter().filter(|n| missing(n)).collect();
    let many = todo.len() > 1;
    if many {
        say(&format!(
            "Creating {} tables in {ks} ({} of the {} asked exist already)",
            group(todo.len() as f64),
            group((names.len() - todo.len()) as f64),
            group(names.len() as f64)
        ));
    }
    let began = Instant::now();
    let mut told = began;
    for (k, table) in todo.iter().enumerate() {
        let stmt = create(table);
        session
            .query_unpaged(schema::ddl(stmt.as_str()), ())
            .await
            .with_context(|| format!("schema statement failed: {stmt}"))?;
        if many && told.elapsed() >= PROGRESS_EVERY {
            told = Instant::now();
            say(&format!(
                "  {} of {} tables created ({:.0} s)",
                group((k + 1) as f64),
                group(todo.len() as f64),
                began.elapsed().as_secs_f64()
            ));
        }
    }
    let _ = session.await_schema_agreement().await;
    let create_s = began.elapsed().as_secs_f64();
    if many {
        say(&format!(
            "Created {} tables in {create_s:.1} s ({:.0} ms each)",
            group(todo.len() as f64),
            1e3 * create_s / todo.len() as f64
        ));
    }
    Ok(TablesMade {
        tables: names.len() as u32,
        created: todo.len() as u32,
        create_s,
        on_cluster: schema::table_count(session).await.unwrap_or(0),
    })
}

/// A keyspace's description cut to what is not about its spread tables but the first, and a
/// line saying how many more there are.
pub fn abridged(all: Vec<String>, ks: &str, tables: &[String]) -> Vec<String> {
    let spread: std::collections::BTreeSet<String> = tables[1..].iter().map(|t| format!("{ks}.{t}")).collect();
    let names = |s: &str| {
        s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .any(|word| spread.contains(word))
    };
    let mut kept: Vec<String> = all.into_iter().filter(|s| !names(s)).collect();
    kept.push(format!("-- and {} more tables of the same schema", tables.len() - 1));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_keeps_its_name_and_many_are_numbered() {
        assert_eq!(name("e1_insert", 1, 0), "e1_insert");
        assert_eq!(name("e1_insert", 1000, 7), "e1_insert_0007");
        assert_eq!(label("e1_batch", 1), "e1_batch");
        assert_eq!(label("e1_batch", 1000), "e1_batch_0000..e1_batch_0999");
        assert_eq!(name("e1_insert", MAX_TABLES, MAX_TABLES - 1), "e1_insert_9999");
    }

    #[test]
    fn a_description_keeps_the_first_spread_table_only() {
        let all = vec![
            "CREATE KEYSPACE ks WITH replication = {}".to_string(),
            "CREATE TABLE ks.t_0000 (pk text PRIMARY KEY)".to_string(),
            "CREATE TABLE ks.t_0001 (pk text PRIMARY KEY)".to_string(),
            "CREATE TABLE ks.other (pk text PRIMARY KEY)".to_string(),
            "CREATE TABLE ks.t_0002 (\n pk text PRIMARY KEY)".to_string(),
        ];
        let names: Vec<String> = (0..3).map(|t| name("t", 3, t)).collect();
        let kept = abridged(all, "ks", &names);
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert!(
            kept[1].contains("ks.t_0000") && kept[2].contains("ks.other"),
            "{kept:?}"
        );
        assert_eq!(kept[3], "-- and 2 more tables of the same schema");
    }
}
