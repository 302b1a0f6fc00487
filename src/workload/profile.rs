//! The profile format: a keyspace, the schema as CQL, per-column generators, the partition
//! and row populations, and named operations with weights. Everything but the schema and
//! the operations has a default. A profile that does not parse or does not make sense is
//! rejected with its file, line and column before anything touches the cluster.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use super::values::Distribution;
use super::values::{draw, mix};
use crate::client::parse_consistency;

/// A length: fixed (`size: 10`) or uniform in a range (`size: {min: 10, max: 100}`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Size {
    Fixed(u32),
    Range { min: u32, max: u32 },
}

impl Default for Size {
    fn default() -> Self {
        Size::Fixed(16)
    }
}

impl Size {
    /// The length for hash `h`.
    pub fn pick(self, h: u64) -> usize {
        match self {
            Size::Fixed(n) => n as usize,
            Size::Range { min, max } => (min + (h % u64::from(max - min + 1)) as u32) as usize,
        }
    }
}

/// What a profile says about one column; everything has a default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// Text and blob length.
    #[serde(default)]
    pub size: Size,
    #[serde(default)]
    pub distribution: Distribution,
    /// Number of distinct values (default: unbounded for regular columns; key columns take
    /// their partition or row index).
    pub cardinality: Option<u64>,
    /// Elements of a list, set or map (default 3).
    pub count: Option<Size>,
    /// Numeric range, inclusive.
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// Vectors: how many centroids they gather around (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<u64>,
    /// Vectors: noise around a centroid, relative to the centroid (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
}

impl ColumnSpec {
    pub fn validate(&self, column: &str) -> Result<()> {
        if let Size::Range { min, max } = self.size
            && min > max
        {
            bail!("column {column}: size min {min} is above max {max}");
        }
        if let (Some(a), Some(b)) = (self.min, self.max)
            && a > b
        {
            bail!("column {column}: min {a} is above max {b}");
        }
        if self.clusters == Some(0) {
            bail!("column {column}: clusters must be at least 1");
        }
        if self.spread.is_some_and(|s| !(s.is_finite() && s >= 0.0)) {
            bail!("column {column}: spread must be a number of at least 0");
        }
        if self.cardinality == Some(0) {
            bail!("column {column}: cardinality must be at least 1");
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "default_keyspace")]
    pub keyspace: String,
    /// The keyspace's replication map, as CQL.
    #[serde(default = "default_replication")]
    pub replication: String,
    #[serde(default = "yes")]
    pub durable_writes: bool,
    /// CREATE TABLE / CREATE TYPE statements, run in the keyspace in order.
    pub schema: Vec<String>,
    /// Generators by column name; columns not named get defaults for their type.
    #[serde(default)]
    pub columns: BTreeMap<String, ColumnSpec>,
    /// Partition key population: operations address partitions 0..partitions.
    #[serde(default = "default_partitions")]
    pub partitions: u64,
    /// Clustering rows per partition: operations address rows 0..rows_per_partition. A number,
    /// or `{min, max, distribution}` for partitions of different sizes (each partition's count
    /// is a pure function of the partition).
    #[serde(default)]
    pub rows_per_partition: RowCount,
    /// How operations pick a partition (sequence: 0, 1, 2, … wrapping around).
    #[serde(default)]
    pub partition_select: Distribution,
    /// Named operations; an operation is chosen by weight.
    pub operations: BTreeMap<String, Operation>,
    /// Before measuring, write every row of every partition with this operation.
    #[serde(default)]
    pub populate: Option<String>,
    /// Populate only the first this-many rows of each partition (E2 wrote 200k rows of its
    /// time series, 20 per sensor, before measuring).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub populate_rows_per_partition: Option<u64>,
    /// Operations in flight while populating (default: the run's concurrency). Cassandra 5.0.9's
    /// vector index refuses more concurrent writes than the server has cores plus one
    /// (CASSANDRA-21644).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub populate_concurrency: Option<usize>,
    /// Changes every generated value and the order operations visit partitions; the same seed
    /// always gives the same data.
    #[serde(default)]
    pub seed: u64,
    /// The compaction `--compaction` asks for the schema's tables (altered to it once created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<super::compaction::Compaction>,
    /// The oldest Cassandra release the profile runs on, and what it needs from it (`5.0 for
    /// Storage-Attached Indexes`): an older cluster is refused before anything runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<String>,
}

impl Profile {
    /// Refuses a cluster of release `release` older than `requires` asks (an unknown release
    /// passes: the server will say what it lacks).
    pub fn check_release(&self, release: Option<&str>) -> Result<()> {
        let (Some(req), Some(rel)) = (&self.requires, release) else {
            return Ok(());
        };
        let version = |t: &str| -> Vec<u32> {
            t.split(|c: char| !c.is_ascii_digit())
                .take_while(|p| !p.is_empty())
                .filter_map(|p| p.parse().ok())
                .collect()
        };
        let (want, have) = (version(req), version(rel));
        if !want.is_empty() && have < want {
            bail!(
                "workload {} needs Cassandra {req}; the cluster runs {rel}: start a newer one (caplab node start --version {}) or pick another workload",
                self.name.as_deref().unwrap_or("(profile)"),
                if want[0] >= 6 { "6.0-alpha2" } else { "5.0.9" }
            );
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RowCount {
    Fixed(u64),
    Varied {
        min: u64,
        max: u64,
        #[serde(default)]
        distribution: Distribution,
    },
}

impl Default for RowCount {
    fn default() -> Self {
        RowCount::Fixed(1)
    }
}

const ROWS_SALT: u64 = 0x726f_7763_6f75_6e74;

impl RowCount {
    /// The most rows any partition has.
    pub fn max(&self) -> u64 {
        match *self {
            RowCount::Fixed(n) => n,
            RowCount::Varied { max, .. } => max,
        }
    }

    /// Rows of partition `p` (at least 1).
    pub fn rows_in(&self, p: u64) -> u64 {
        match *self {
            RowCount::Fixed(n) => n,
            RowCount::Varied { min, max, distribution } => {
                min + draw(distribution, mix(p ^ ROWS_SALT), max - min + 1, p)
            }
        }
    }

    fn validate(&self) -> Result<()> {
        match *self {
            RowCount::Fixed(0) => bail!("rows_per_partition must be at least 1"),
            RowCount::Varied { min, max, .. } if min == 0 || min > max => {
                bail!("rows_per_partition: min ({min}) must be at least 1 and at most max ({max})")
            }
            _ => Ok(()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// One CQL statement; its bind markers (`?` or `:name`) name the columns they take.
    pub cql: String,
    #[serde(default = "one_u32")]
    pub weight: u32,
    pub consistency: Option<String>,
    pub serial_consistency: Option<String>,
    /// Default: true for SELECT, false otherwise.
    pub idempotent: Option<bool>,
    /// Run the statement as a batch of rows of one partition.
    pub batch: Option<BatchSpec>,
    /// Rows a row range spans: when a clustering column is bound twice (`ck >= ? AND ck < ?`),
    /// the second bind takes the value of the row this many rows after the first.
    pub range: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchSpec {
    #[serde(rename = "type", default)]
    pub kind: BatchKind,
    /// Rows in one batch, in total.
    pub rows: u32,
    /// Spread the rows over this many consecutive partitions (default 1: one partition).
    #[serde(default = "one_u32")]
    pub partitions: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchKind {
    #[default]
    Unlogged,
    Logged,
    Counter,
}

/// Profiles keep the commit log on; E1's keyspace `caplab` has it off. They live apart, so a
/// profile run never finds a keyspace with other settings left by E1 (or the other way).
fn default_keyspace() -> String {
    "caplab_profiles".into()
}
fn default_replication() -> String {
    "{'class': 'SimpleStrategy', 'replication_factor': 1}".into()
}
fn yes() -> bool {
    true
}
fn default_partitions() -> u64 {
    10_000
}
fn one_u32() -> u32 {
    1
}

impl Operation {
    pub fn is_read(&self) -> bool {
        self.cql.trim_start().to_ascii_lowercase().starts_with("select")
    }
}

impl Profile {
    /// Parses and checks a profile; `origin` (a file name) prefixes every error.
    pub fn parse(text: &str, origin: &str) -> Result<Profile> {
        let p: Profile = from_yaml(text, origin)?;
        p.validate().map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        Ok(p)
    }

    /// Runs in `keyspace` and at SimpleStrategy's `replication_factor` where given
    /// (`--keyspace`, `--replication-factor`), over the profile's own.
    pub fn place(&mut self, keyspace: Option<&str>, replication_factor: Option<u32>) {
        if let Some(ks) = keyspace {
            self.keyspace = ks.to_string();
        }
        if let Some(rf) = replication_factor {
            self.replication = format!("{{'class': 'SimpleStrategy', 'replication_factor': {rf}}}");
        }
    }

    /// How many replicas the keyspace keeps of a row, from `replication` (all data centres'
    /// added); None when the map gives none.
    pub fn replicas(&self) -> Option<u32> {
        let map = super::schema::parse_replication(&self.replication);
        let factors: Vec<u32> = map
            .iter()
            .filter(|(key, _)| *key != "class")
            .filter_map(|(_, value)| value.parse().ok())
            .collect();
        (!factors.is_empty()).then(|| factors.iter().sum())
    }

    pub fn validate(&self) -> Result<()> {
        let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident(&self.keyspace) {
            bail!(
                "keyspace '{}' is not a plain CQL identifier (letters, digits, _)",
                self.keyspace
            );
        }
        if self.schema.is_empty() {
            bail!("schema is empty: give at least one CREATE TABLE statement");
        }
        if self.operations.is_empty() {
            bail!("operations is empty: name at least one, e.g. operations: {{write: {{cql: \"INSERT ...\"}}}}");
        }
        if self.partitions == 0 {
            bail!("partitions must be at least 1");
        }
        self.rows_per_partition.validate()?;
        if self.operations.values().all(|o| o.weight == 0) {
            bail!("every operation has weight 0: give at least one a positive weight");
        }
        for (name, op) in &self.operations {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                bail!("operation name '{name}' may only use letters, digits, '_' and '-'");
            }
            if let Some(cl) = &op.consistency {
                parse_consistency(cl).map_err(|e| anyhow::anyhow!("operation {name}: {e}"))?;
            }
            if let Some(cl) = &op.serial_consistency
                && !["serial", "local_serial"].contains(&cl.to_ascii_lowercase().as_str())
            {
                bail!("operation {name}: serial_consistency '{cl}' is not serial or local_serial");
            }
            if let Some(b) = &op.batch {
                if b.rows == 0 {
                    bail!("operation {name}: batch rows must be at least 1");
                }
                if b.partitions == 0 || b.rows % b.partitions != 0 {
                    bail!(
                        "operation {name}: batch rows ({}) must be a multiple of its partitions ({}): each partition \
                         gets rows / partitions rows",
                        b.rows,
                        b.partitions
                    );
                }
                if op.is_read() {
                    bail!("operation {name}: a SELECT cannot be batched");
                }
            }
        }
        for (col, spec) in &self.columns {
            spec.validate(col)?;
        }
        if let Some(p) = &self.populate {
            match self.operations.get(p) {
                None => bail!("populate names operation '{p}', which is not among the operations"),
                Some(op) if op.is_read() => bail!("populate must name a writing operation, not '{p}' (a SELECT)"),
                _ => {}
            }
        }
        if self.populate_concurrency == Some(0) {
            bail!("populate_concurrency must be at least 1 (or leave it out to populate at the run's concurrency)");
        }
        match (self.populate_rows_per_partition, &self.populate) {
            (Some(0), _) => {
                bail!("populate_rows_per_partition must be at least 1 (or leave it out to populate every row)")
            }
            (Some(_), None) => bail!("populate_rows_per_partition needs populate: the operation that writes the rows"),
            _ => {}
        }
        Ok(())
    }

    /// Replaces the operations' weights with `name=weight,...` (as in cassandra-stress's
    /// `ops(...)`); operations not named get weight 0.
    pub fn set_weights(&mut self, spec: &str) -> Result<()> {
        let names = || self.op_names().join(", ");
        let mut given = BTreeMap::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, w)) = part.split_once('=') else {
                bail!("--ops '{part}': write name=weight, e.g. --ops 'insert=1,read=2'");
            };
            let name = name.trim();
            if !self.operations.contains_key(name) {
                bail!(
                    "--ops names '{name}', which is not an operation of this profile; its operations: {}",
                    names()
                );
            }
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("--ops '{part}': the weight must be a whole number"))?;
            given.insert(name.to_string(), w);
        }
        if given.values().all(|&w| w == 0) {
            bail!(
                "--ops '{spec}' gives no operation a positive weight; operations: {}",
                names()
            );
        }
        for (name, op) in self.operations.iter_mut() {
            op.weight = given.get(name).copied().unwrap_or(0);
        }
        Ok(())
    }

    /// Operation names in a fixed order (the order results list them in).
    pub fn op_names(&self) -> Vec<String> {
        self.operations.keys().cloned().collect()
    }
}

/// Parses YAML into `T`; errors start with `origin:line:column:`.
pub(crate) fn from_yaml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    serde_norway::from_str(text).map_err(|e| match e.location() {
        Some(l) => anyhow::anyhow!(
            "{origin}:{}:{}: {}",
            l.line(),
            l.column(),
            strip_location(&e.to_string())
        ),
        None => anyhow::anyhow!("{origin}: {e}"),
    })
}

/// serde_norway appends "at line X column Y"; the prefix already says where. serde's unknown
/// field lists every field; the nearest is what the user needs first.
fn strip_location(msg: &str) -> String {
    let msg = match msg.find(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    };
    unknown_key(msg).unwrap_or_else(|| msg.to_string())
}

/// serde's "unknown field `repeat`, expected one of `name`, `repeats`" as "unknown key
/// 'repeat': did you mean 'repeats'? (known here: name, repeats)".
fn unknown_key(msg: &str) -> Option<String> {
    let (before, rest) = msg.split_once("unknown field `")?;
    let (key, expected) = rest.split_once('`')?;
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    Some(format!(
        "{before}unknown key '{key}'{} (known here: {})",
        crate::console::did_you_mean(key, known.iter().copied()),
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name: kv
schema:
  - CREATE TABLE IF NOT EXISTS kv (k text PRIMARY KEY, v blob)
columns:
  v: {size: {min: 10, max: 20}}
partitions: 500
operations:
  write: {cql: "INSERT INTO kv (k, v) VALUES (?, ?)", weight: 3}
  read: {cql: "SELECT * FROM kv WHERE k = ?", consistency: local_quorum}
populate: write
"#;

    #[test]
    fn parses_with_defaults() {
        let p = Profile::parse(GOOD, "kv.yaml").unwrap();
        assert_eq!(p.keyspace, "caplab_profiles");
        assert_eq!(p.rows_per_partition, RowCount::Fixed(1));
        assert_eq!(p.op_names(), vec!["read", "write"]);
        assert!(p.operations["read"].is_read() && !p.operations["write"].is_read());
        assert_eq!(p.operations["write"].weight, 3);
    }

    #[test]
    fn replicas_add_up_over_data_centres() {
        let mut p = Profile::parse(GOOD, "kv.yaml").unwrap();
        assert_eq!(p.replicas(), Some(1));
        p.replication = "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': '2'}".into();
        assert_eq!(p.replicas(), Some(5));
        p.replication = "{'class': 'LocalStrategy'}".into();
        assert_eq!(p.replicas(), None);
    }

    #[test]
    fn partitions_can_differ_in_size() {
        let p = Profile::parse(
            &GOOD.replace(
                "partitions: 500",
                "partitions: 500\nrows_per_partition: {min: 2, max: 50, distribution: exponential}",
            ),
            "kv.yaml",
        )
        .unwrap();
        let rows = p.rows_per_partition;
        assert_eq!(rows.max(), 50);
        let counts: Vec<u64> = (0..2000).map(|p| rows.rows_in(p)).collect();
        assert!(counts.iter().all(|c| (2..=50).contains(c)));
        assert_eq!(rows.rows_in(17), rows.rows_in(17));
        let small = counts.iter().filter(|&&c| c < 10).count();
        assert!(
            small > 1000,
            "exponential: most partitions are small ({small} of 2000 under 10)"
        );
        let bad = GOOD.replace(
            "partitions: 500",
            "partitions: 500\nrows_per_partition: {min: 0, max: 5}",
        );
        assert!(
            Profile::parse(&bad, "kv.yaml")
                .unwrap_err()
                .to_string()
                .contains("min (0)")
        );
    }

    #[test]
    fn ops_replace_the_weights() {
        let mut p = Profile::parse(GOOD, "kv.yaml").unwrap();
        p.set_weights("read=4").unwrap();
        assert_eq!((p.operations["read"].weight, p.operations["write"].weight), (4, 0));
        assert!(
            p.set_weights("scan=1")
                .unwrap_err()
                .to_string()
                .contains("operations: read, write")
        );
        assert!(p.set_weights("read=x").is_err());
        assert!(
            p.set_weights("read=0")
                .unwrap_err()
                .to_string()
                .contains("no operation a positive weight")
        );
    }

    #[test]
    fn the_profile_in_the_docs_reads() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/workloads.md");
        let text = std::fs::read_to_string(path).unwrap();
        let blocks: Vec<&str> = text
            .split("```yaml\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .filter(|b| b.contains("\noperations:"))
            .collect();
        assert!(!blocks.is_empty(), "docs/workloads.md shows a profile");
        for b in blocks {
            Profile::parse(b, path).unwrap_or_else(|e| panic!("{e:#}"));
        }
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let err = |text: &str| Profile::parse(text, "p.yaml").unwrap_err().to_string();
        let unknown = err(&GOOD.replace("partitions: 500", "partitons: 500"));
        assert!(
            unknown.starts_with("p.yaml:7:1: unknown key 'partitons': did you mean 'partitions'?"),
            "{unknown}"
        );
        let wrong_type = err(&GOOD.replace("partitions: 500", "partitions: many"));
        assert!(
            wrong_type.starts_with("p.yaml:7:") && wrong_type.contains("invalid type"),
            "{wrong_type}"
        );
        let bad_dist = err(&GOOD.replace("v: {size: {min: 10, max: 20}}", "v: {distribution: pareto}"));
        assert!(
            bad_dist.contains("p.yaml:6:") && bad_dist.contains("pareto"),
            "{bad_dist}"
        );
        assert!(err(&GOOD.replace("populate: write", "populate: read")).contains("writing operation"));
        assert!(err(&GOOD.replace("populate: write", "populate: load")).contains("'load', which is not among"));
        assert!(
            err(&GOOD.replace("populate: write", "populate: write\npopulate_rows_per_partition: 0"))
                .contains("at least 1")
        );
        assert!(
            err(&GOOD.replace("populate: write", "populate_rows_per_partition: 5")).contains("needs populate"),
            "a row count without an operation to write them"
        );
        assert!(err(&GOOD.replace("local_quorum", "most")).contains("operation read"));
        assert!(err(&GOOD.replace("weight: 3", "weight: 3, batch: {rows: 0}")).contains("batch rows"));
        assert!(err(&GOOD.replace("weight: 3", "weight: 3, batch: {rows: 5, partitions: 2}")).contains("multiple"));
    }

    #[test]
    fn bad_specs_are_named() {
        let s = ColumnSpec {
            min: Some(5),
            max: Some(1),
            ..Default::default()
        };
        assert!(
            s.validate("n")
                .unwrap_err()
                .to_string()
                .contains("column n: min 5 is above max 1")
        );
        let s = ColumnSpec {
            cardinality: Some(0),
            ..Default::default()
        };
        assert!(s.validate("c").is_err());
    }

    #[test]
    fn a_profile_names_the_release_it_needs() {
        let mut p = Profile::parse(crate::workload::builtin::find("sai").unwrap().yaml, "sai").unwrap();
        assert!(p.check_release(Some("5.0.9")).is_ok());
        assert!(p.check_release(Some("6.0-alpha2")).is_ok());
        assert!(p.check_release(None).is_ok(), "unknown: the server says what it lacks");
        let e = p.check_release(Some("4.1.5")).unwrap_err().to_string();
        assert!(
            e.contains("needs Cassandra 5.0 for Storage-Attached Indexes; the cluster runs 4.1.5"),
            "{e}"
        );
        assert!(e.contains("--version 5.0.9"), "{e}");
        p.requires = None;
        assert!(p.check_release(Some("4.1.5")).is_ok());
        let accord = Profile::parse(crate::workload::builtin::find("accord-kv").unwrap().yaml, "a").unwrap();
        let e = accord.check_release(Some("5.0.9")).unwrap_err().to_string();
        assert!(
            e.contains("needs Cassandra 6.0 for Accord") && e.contains("--version 6.0-alpha2"),
            "{e}"
        );
        assert!(accord.check_release(Some("6.0-alpha2")).is_ok());
    }
}
