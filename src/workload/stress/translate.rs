//! The translation of a cassandra-stress profile, in the order cassandra-stress reads it:
//! the keyspace, the schema, the columns' populations and sizes, the insert (rows per batch
//! and batch type), then the named queries. Each step adds a note for whatever it cannot carry
//! over exactly.

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_norway::Value as Yaml;
use std::collections::BTreeMap;

use super::Imported;
use super::ddl::{Table, braces_after, ident, if_not_exists, name_after, parse_table, word_after};
use super::dist::{Dist, Family};
use crate::workload::profile::{BatchKind, BatchSpec, ColumnSpec, Distribution, Operation, Profile, RowCount, Size};

/// The profile as cassandra-stress's YAML has it.
#[derive(Debug, Deserialize)]
pub struct StressYaml {
    keyspace: String,
    keyspace_definition: Option<String>,
    table: String,
    table_definition: Option<String>,
    #[serde(default)]
    extra_definitions: Vec<String>,
    #[serde(default)]
    columnspec: Vec<BTreeMap<String, Yaml>>,
    #[serde(default)]
    insert: BTreeMap<String, Yaml>,
    #[serde(default)]
    queries: BTreeMap<String, QueryDef>,
    #[serde(flatten)]
    other: BTreeMap<String, Yaml>,
}

#[derive(Debug, Deserialize)]
struct QueryDef {
    cql: String,
    fields: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, Yaml>,
}

/// What the keyspace definition says.
struct Keyspace {
    name: String,
    replication: String,
    durable_writes: bool,
}

/// What the column specs say about the data's shape.
struct Population {
    columns: BTreeMap<String, ColumnSpec>,
    partitions: u64,
    partition_select: Distribution,
    /// Rows per partition: the products of the clustering columns' minimums and maximums.
    rows_min: u64,
    rows_max: u64,
}

pub fn translate(y: StressYaml) -> Result<Imported> {
    let mut notes = Vec::new();
    for key in y.other.keys() {
        let why = match key.as_str() {
            "token_range_queries" => "token range scans are not supported",
            "specname" => "results are named after the profile",
            _ => "not a setting caplab knows",
        };
        notes.push(format!("{key}: not mapped ({why})"));
    }
    let keyspace = keyspace(&y, &mut notes)?;
    let (table, schema) = schema(&y)?;
    let population = population(&y, &table, &mut notes)?;
    let batch = insert_batch(&y, &population, &mut notes)?;
    let mut operations = queries(&y, &mut notes)?;
    operations.insert(
        "insert".to_string(),
        Operation {
            cql: table.insert_cql(),
            weight: 1,
            consistency: None,
            serial_consistency: None,
            idempotent: None,
            batch,
            range: None,
        },
    );
    let Population {
        columns,
        partitions,
        partition_select,
        rows_min,
        rows_max,
    } = population;
    let profile = Profile {
        name: Some(y.table.clone()),
        description: Some(format!("cassandra-stress profile for {}.{}", keyspace.name, y.table)),
        keyspace: keyspace.name,
        replication: keyspace.replication,
        durable_writes: keyspace.durable_writes,
        schema,
        columns,
        partitions,
        rows_per_partition: if rows_min == rows_max {
            RowCount::Fixed(rows_max)
        } else {
            RowCount::Varied {
                min: rows_min,
                max: rows_max,
                distribution: Distribution::Uniform,
            }
        },
        partition_select,
        operations,
        populate: None,
        populate_rows_per_partition: None,
        populate_concurrency: None,
        seed: 0,
        compaction: None,
        requires: None,
    };
    profile.validate()?;
    Ok(Imported { profile, notes })
}

fn keyspace(y: &StressYaml, notes: &mut Vec<String>) -> Result<Keyspace> {
    let mut ks = Keyspace {
        name: y.keyspace.clone(),
        replication: "{'class': 'SimpleStrategy', 'replication_factor': 1}".to_string(),
        durable_writes: true,
    };
    match &y.keyspace_definition {
        Some(def) if !def.trim().is_empty() => {
            let named =
                name_after(def, &["create", "keyspace"]).context("keyspace_definition is not CREATE KEYSPACE")?;
            if !named.eq_ignore_ascii_case(&ks.name) {
                bail!("keyspace_definition creates '{named}' but keyspace says '{}'", ks.name);
            }
            ks.replication = braces_after(def, "replication")
                .context("keyspace_definition has no replication = {...} map")?
                .to_string();
            if let Some(d) = word_after(def, "durable_writes") {
                ks.durable_writes = !d.eq_ignore_ascii_case("false");
            }
        }
        _ => notes.push(format!(
            "keyspace_definition: absent; caplab creates {} with {} if it does not exist",
            ks.name, ks.replication
        )),
    }
    Ok(ks)
}

/// The table, and the schema statements: types first, then the table, then the rest.
fn schema(y: &StressYaml) -> Result<(Table, Vec<String>)> {
    let Some(ddl) = y.table_definition.as_deref().filter(|d| !d.trim().is_empty()) else {
        bail!(
            "table_definition is missing: caplab derives the insert statement and generators from it; add the table's CREATE TABLE"
        );
    };
    let table = parse_table(ddl)?;
    if !table.name.eq_ignore_ascii_case(&y.table) {
        bail!("table_definition creates '{}' but table says '{}'", table.name, y.table);
    }
    let (types, rest): (Vec<_>, Vec<_>) = y
        .extra_definitions
        .iter()
        .partition(|d| d.trim_start().to_ascii_lowercase().starts_with("create type"));
    let mut schema: Vec<String> = types.iter().map(|d| if_not_exists(d)).collect();
    schema.push(if_not_exists(ddl));
    schema.extend(rest.iter().map(|d| if_not_exists(d)));
    Ok((table, schema))
}

fn population(y: &StressYaml, table: &Table, notes: &mut Vec<String>) -> Result<Population> {
    let mut p = Population {
        columns: table
            .columns
            .iter()
            .map(|(c, _)| {
                let spec = ColumnSpec {
                    size: Size::Range { min: 4, max: 8 }, // cassandra-stress's default size
                    ..Default::default()
                };
                (c.clone(), spec)
            })
            .collect(),
        partitions: 100_000_000_000, // cassandra-stress's default population
        partition_select: Distribution::Uniform,
        rows_min: 1,
        rows_max: 1,
    };
    let mut pk_population: Option<u64> = None;
    for entry in &y.columnspec {
        let entry: BTreeMap<String, &Yaml> = entry.iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        let Some(name) = entry.get("name").map(|v| scalar(v)) else {
            bail!("a columnspec entry has no name");
        };
        let col = ident(&name);
        let Some(spec) = p.columns.get_mut(&col) else {
            bail!(
                "columnspec names '{name}', which is not a column of {} (columns: {})",
                table.name,
                table
                    .columns
                    .iter()
                    .map(|(c, _)| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let is_pk = table.partition.contains(&col);
        let is_ck = table.clustering.contains(&col);
        for (key, value) in &entry {
            let text = scalar(value);
            let at = || format!("columnspec {col}.{key}: {text}");
            match key.as_str() {
                "name" => {}
                "size" => {
                    let d = Dist::parse(&text).with_context(at)?;
                    spec.size = if d.kind == Family::Fixed {
                        Size::Fixed(d.max.min(u32::MAX as u64) as u32)
                    } else {
                        Size::Range {
                            min: d.min.min(u32::MAX as u64) as u32,
                            max: d.max.min(u32::MAX as u64) as u32,
                        }
                    };
                    if d.kind != Family::Uniform && d.kind != Family::Fixed {
                        notes.push(format!("{}: lengths are drawn uniformly in {}..{}", at(), d.min, d.max));
                    }
                    d.note_inverted(&at(), notes);
                }
                "population" if is_pk => {
                    let d = Dist::parse(&text).with_context(at)?;
                    pk_population = Some(pk_population.unwrap_or(1).saturating_mul(d.span()));
                    p.partition_select = d.distribution(&at(), notes);
                }
                "population" if is_ck => notes.push(format!(
                    "{}: not mapped (clustering values follow the row index: row r of a partition has the r-th value)",
                    at()
                )),
                "population" => {
                    let d = Dist::parse(&text).with_context(at)?;
                    spec.cardinality = Some(d.span());
                    spec.distribution = d.distribution(&at(), notes);
                }
                "cluster" if is_ck => {
                    let d = Dist::parse(&text).with_context(at)?;
                    if !matches!(d.kind, Family::Fixed | Family::Uniform) {
                        notes.push(format!(
                            "{}: partition sizes are drawn uniformly between the product of the clustering columns' \
                             minimums and maximums",
                            at()
                        ));
                    }
                    d.note_inverted(&at(), notes);
                    p.rows_min = p.rows_min.saturating_mul(d.min.max(1));
                    p.rows_max = p.rows_max.saturating_mul(d.max.max(1));
                }
                "cluster" => notes.push(format!("{}: not mapped ({col} is not a clustering column)", at())),
                other => notes.push(format!(
                    "columnspec {col}.{other}: not mapped (not a columnspec setting caplab knows)"
                )),
            }
        }
    }
    if let Some(n) = pk_population {
        p.partitions = n;
    }
    // Keys take their partition and row indexes: their sizes are the only settings they keep.
    for key in table.partition.iter().chain(&table.clustering) {
        if let Some(spec) = p.columns.get_mut(key) {
            spec.cardinality = None;
            spec.distribution = Distribution::Uniform;
        }
    }
    Ok(p)
}

/// The batch the insert writes per operation (None: one row of one partition).
fn insert_batch(y: &StressYaml, population: &Population, notes: &mut Vec<String>) -> Result<Option<BatchSpec>> {
    let mut per_batch_partitions = 1u64;
    let mut select = 1.0f64;
    let mut batch_kind = BatchKind::Logged; // cassandra-stress's default
    for (key, value) in y.insert.iter().map(|(k, v)| (k.to_ascii_lowercase(), v)) {
        let text = scalar(value);
        let at = || format!("insert.{key}: {text}");
        match key.as_str() {
            "partitions" => {
                let d = Dist::parse(&text).with_context(at)?;
                per_batch_partitions = d.mean().round().max(1.0) as u64;
                if d.kind != Family::Fixed {
                    notes.push(format!(
                        "{}: every batch spans {per_batch_partitions} partitions (its mean)",
                        at()
                    ));
                }
            }
            "select" => {
                let (d, denominator) = Dist::parse_ratio(&text).with_context(at)?;
                select = (d.mean() / denominator).clamp(0.0, 1.0);
                if d.kind != Family::Fixed {
                    notes.push(format!(
                        "{}: every batch takes {select:.3} of a partition's rows (its mean)",
                        at()
                    ));
                }
            }
            "batchtype" => {
                batch_kind = match text.to_ascii_lowercase().as_str() {
                    "logged" => BatchKind::Logged,
                    "unlogged" => BatchKind::Unlogged,
                    "counter" => BatchKind::Counter,
                    _ => bail!("{}: batchtype is LOGGED, UNLOGGED or COUNTER", at()),
                }
            }
            "row-population" => {
                let (d, denominator) = Dist::parse_ratio(&text).with_context(at)?;
                if (d.mean() / denominator - 1.0).abs() > f64::EPSILON {
                    notes.push(format!("{}: not mapped (every generated row is written)", at()));
                }
            }
            other => notes.push(format!(
                "insert.{other}: not mapped (not an insert setting caplab knows)"
            )),
        }
    }
    // Of the mean partition, as stress's select ratio applies to each partition's rows.
    let mean_rows = (population.rows_min + population.rows_max) as f64 / 2.0;
    let per_partition = ((mean_rows * select).round() as u64).clamp(1, population.rows_max);
    let batch_rows = per_partition * per_batch_partitions;
    Ok((batch_rows > 1).then(|| BatchSpec {
        kind: batch_kind,
        rows: batch_rows.min(u32::MAX as u64) as u32,
        partitions: per_batch_partitions as u32,
    }))
}

/// Each named query becomes an operation of weight 0 (until `--ops` chooses).
fn queries(y: &StressYaml, notes: &mut Vec<String>) -> Result<BTreeMap<String, Operation>> {
    let mut operations = BTreeMap::new();
    for (name, q) in &y.queries {
        let name = name.to_ascii_lowercase();
        if name == "insert" {
            bail!("queries has one named 'insert', the name of the generated insert operation: rename it");
        }
        match q.fields.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("samerow") => {}
            Some("multirow") => notes.push(format!(
                "queries.{name}.fields: multirow: its values are bound from one row, as with samerow"
            )),
            Some(other) => bail!("queries.{name}.fields: '{other}' is samerow or multirow"),
        }
        for key in q.other.keys() {
            notes.push(format!(
                "queries.{name}.{key}: not mapped (not a query setting caplab knows)"
            ));
        }
        operations.insert(
            name,
            Operation {
                cql: q.cql.trim().trim_end_matches(';').to_string(),
                weight: 0,
                consistency: None,
                serial_consistency: None,
                idempotent: None,
                batch: None,
                range: None,
            },
        );
    }
    Ok(operations)
}

/// A scalar YAML value as text (cassandra-stress writes numbers and strings alike).
fn scalar(v: &Yaml) -> String {
    match v {
        Yaml::String(s) => s.clone(),
        Yaml::Number(n) => n.to_string(),
        Yaml::Bool(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}
