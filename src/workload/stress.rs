//! cassandra-stress user profiles (`keyspace`, `table_definition`, `columnspec`, `insert`,
//! `queries`), translated into a caplab profile. The translation happens offline, from the
//! profile's own CQL, so a profile is checked before anything touches the cluster. Whatever
//! caplab cannot reproduce exactly is kept as a note naming the setting, printed before the
//! run and stored in result.json; nothing is dropped silently.
//!
//! How the parts map: the partition key's `population` gives the number of partitions and how
//! they are picked; clustering columns' `cluster` distributions multiply into rows per
//! partition; `size` gives text and blob lengths; regular columns' `population` gives their
//! cardinality and distribution. `insert` becomes an operation named `insert` that writes like
//! cassandra-stress does (`UPDATE ... SET col = ? ... WHERE key = ?`, appending to lists, sets
//! and counters), batched as `insert.partitions`, `insert.select` and `insert.batchtype` say.
//! Each entry of `queries` becomes an operation of that name.

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_norway::Value as Yaml;
use std::collections::BTreeMap;

use super::generate::{ColumnSpec, Distribution, Size};
use super::profile::{BatchKind, BatchSpec, Operation, Profile, RowCount, from_yaml};

/// A translated profile and what could not be carried over exactly.
#[derive(Debug)]
pub struct Imported {
    pub profile: Profile,
    pub notes: Vec<String>,
}

/// True for a document written in cassandra-stress's format rather than caplab's.
pub fn is_stress_profile(text: &str) -> bool {
    match serde_norway::from_str::<Yaml>(text) {
        Ok(Yaml::Mapping(m)) => {
            let has = |k: &str| m.contains_key(k);
            !has("operations") && (has("table") || has("table_definition") || has("columnspec") || has("queries"))
        }
        _ => false,
    }
}

#[derive(Debug, Deserialize)]
struct StressYaml {
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

/// Translates a cassandra-stress user profile. Operations get cassandra-stress's default mix
/// (`insert` only) until `Profile::set_weights` applies `--ops`.
pub fn import(text: &str, origin: &str) -> Result<Imported> {
    let y: StressYaml = from_yaml(text, origin)?;
    translate(y).with_context(|| format!("{origin} (a cassandra-stress profile)"))
}

fn translate(y: StressYaml) -> Result<Imported> {
    let mut notes = Vec::new();
    for key in y.other.keys() {
        let why = match key.as_str() {
            "token_range_queries" => "token range scans are not supported",
            "specname" => "results are named after the profile",
            _ => "not a setting caplab knows",
        };
        notes.push(format!("{key}: not mapped ({why})"));
    }

    // Keyspace.
    let keyspace = y.keyspace.clone();
    let mut replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}".to_string();
    let mut durable_writes = true;
    match &y.keyspace_definition {
        Some(def) if !def.trim().is_empty() => {
            let named =
                name_after(def, &["create", "keyspace"]).context("keyspace_definition is not CREATE KEYSPACE")?;
            if !named.eq_ignore_ascii_case(&keyspace) {
                bail!("keyspace_definition creates '{named}' but keyspace says '{keyspace}'");
            }
            replication = braces_after(def, "replication")
                .context("keyspace_definition has no replication = {...} map")?
                .to_string();
            if let Some(d) = word_after(def, "durable_writes") {
                durable_writes = !d.eq_ignore_ascii_case("false");
            }
        }
        _ => notes.push(format!(
            "keyspace_definition: absent; caplab creates {keyspace} with {replication} if it does not exist"
        )),
    }

    // Table.
    let Some(ddl) = y.table_definition.as_deref().filter(|d| !d.trim().is_empty()) else {
        bail!(
            "table_definition is missing: caplab derives the insert statement and generators from it; add the table's CREATE TABLE"
        );
    };
    let table = parse_table(ddl)?;
    if !table.name.eq_ignore_ascii_case(&y.table) {
        bail!("table_definition creates '{}' but table says '{}'", table.name, y.table);
    }
    let mut schema = Vec::new();
    let (types, rest): (Vec<_>, Vec<_>) = y
        .extra_definitions
        .iter()
        .partition(|d| d.trim_start().to_ascii_lowercase().starts_with("create type"));
    schema.extend(types.iter().map(|d| if_not_exists(d)));
    schema.push(if_not_exists(ddl));
    schema.extend(rest.iter().map(|d| if_not_exists(d)));

    // Columns.
    let mut columns: BTreeMap<String, ColumnSpec> = table
        .columns
        .iter()
        .map(|(c, _)| {
            let spec = ColumnSpec {
                size: Size::Range { min: 4, max: 8 }, // cassandra-stress's default size
                ..Default::default()
            };
            (c.clone(), spec)
        })
        .collect();
    let mut partitions: u64 = 100_000_000_000; // cassandra-stress's default population
    let mut partition_select = Distribution::Uniform;
    let mut pk_population: Option<u64> = None;
    let (mut rows_min, mut rows_max): (u64, u64) = (1, 1);
    for entry in &y.columnspec {
        let entry: BTreeMap<String, &Yaml> = entry.iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        let Some(name) = entry.get("name").map(|v| scalar(v)) else {
            bail!("a columnspec entry has no name");
        };
        let col = ident(&name);
        let Some(spec) = columns.get_mut(&col) else {
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
                    spec.size = if d.kind == Kind::Fixed {
                        Size::Fixed(d.max.min(u32::MAX as u64) as u32)
                    } else {
                        Size::Range {
                            min: d.min.min(u32::MAX as u64) as u32,
                            max: d.max.min(u32::MAX as u64) as u32,
                        }
                    };
                    if d.kind != Kind::Uniform && d.kind != Kind::Fixed {
                        notes.push(format!("{}: lengths are drawn uniformly in {}..{}", at(), d.min, d.max));
                    }
                    d.note_inverted(&at(), &mut notes);
                }
                "population" if is_pk => {
                    let d = Dist::parse(&text).with_context(at)?;
                    let n = d.span();
                    pk_population = Some(pk_population.unwrap_or(1).saturating_mul(n));
                    partition_select = d.distribution(&at(), &mut notes);
                }
                "population" if is_ck => notes.push(format!(
                    "{}: not mapped (clustering values follow the row index: row r of a partition has the r-th value)",
                    at()
                )),
                "population" => {
                    let d = Dist::parse(&text).with_context(at)?;
                    spec.cardinality = Some(d.span());
                    spec.distribution = d.distribution(&at(), &mut notes);
                }
                "cluster" if is_ck => {
                    let d = Dist::parse(&text).with_context(at)?;
                    if !matches!(d.kind, Kind::Fixed | Kind::Uniform) {
                        notes.push(format!(
                            "{}: partition sizes are drawn uniformly between the product of the clustering columns' \
                             minimums and maximums",
                            at()
                        ));
                    }
                    d.note_inverted(&at(), &mut notes);
                    rows_min = rows_min.saturating_mul(d.min.max(1));
                    rows_max = rows_max.saturating_mul(d.max.max(1));
                }
                "cluster" => notes.push(format!("{}: not mapped ({col} is not a clustering column)", at())),
                other => notes.push(format!(
                    "columnspec {col}.{other}: not mapped (not a columnspec setting caplab knows)"
                )),
            }
        }
    }
    if let Some(n) = pk_population {
        partitions = n;
    }
    // Keys take their partition and row indexes: their sizes are the only settings they keep.
    for key in table.partition.iter().chain(&table.clustering) {
        if let Some(spec) = columns.get_mut(key) {
            spec.cardinality = None;
            spec.distribution = Distribution::Uniform;
        }
    }

    // Insert.
    let insert_cfg: BTreeMap<String, &Yaml> = y.insert.iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let mut per_batch_partitions = 1u64;
    let mut select = 1.0f64;
    let mut batch_kind = BatchKind::Logged; // cassandra-stress's default
    for (key, value) in &insert_cfg {
        let text = scalar(value);
        let at = || format!("insert.{key}: {text}");
        match key.as_str() {
            "partitions" => {
                let d = Dist::parse(&text).with_context(at)?;
                per_batch_partitions = d.mean().round().max(1.0) as u64;
                if d.kind != Kind::Fixed {
                    notes.push(format!(
                        "{}: every batch spans {per_batch_partitions} partitions (its mean)",
                        at()
                    ));
                }
            }
            "select" => {
                let (d, denominator) = Dist::parse_ratio(&text).with_context(at)?;
                select = (d.mean() / denominator).clamp(0.0, 1.0);
                if d.kind != Kind::Fixed {
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
    let rows_per_partition = if rows_min == rows_max {
        RowCount::Fixed(rows_max)
    } else {
        RowCount::Varied {
            min: rows_min,
            max: rows_max,
            distribution: Distribution::Uniform,
        }
    };
    // Of the mean partition, as stress's select ratio applies to each partition's rows.
    let mean_rows = (rows_min + rows_max) as f64 / 2.0;
    let per_partition = ((mean_rows * select).round() as u64).clamp(1, rows_max);
    let batch_rows = per_partition * per_batch_partitions;
    let batch = (batch_rows > 1).then(|| BatchSpec {
        kind: batch_kind,
        rows: batch_rows.min(u32::MAX as u64) as u32,
        partitions: per_batch_partitions as u32,
    });

    let mut operations = BTreeMap::new();
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

    let profile = Profile {
        name: Some(y.table.clone()),
        description: Some(format!("cassandra-stress profile for {keyspace}.{}", y.table)),
        keyspace,
        replication,
        durable_writes,
        schema,
        columns,
        partitions,
        rows_per_partition,
        partition_select,
        operations,
        populate: None,
        seed: 0,
    };
    profile.validate()?;
    Ok(Imported { profile, notes })
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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Fixed,
    Uniform,
    Gaussian,
    Exp,
    Extreme,
    QExtreme,
}

/// A cassandra-stress distribution: `[~]name(min..max[,params])` or `fixed(n)`.
#[derive(Debug, Clone, Copy)]
struct Dist {
    kind: Kind,
    min: u64,
    max: u64,
    inverted: bool,
}

impl Dist {
    fn parse(text: &str) -> Result<Dist> {
        let t = text.trim();
        let (inverted, t) = match t.strip_prefix('~') {
            Some(rest) => (true, rest.trim()),
            None => (false, t),
        };
        if let Ok(n) = number(t) {
            return Ok(Dist {
                kind: Kind::Fixed,
                min: n,
                max: n,
                inverted,
            });
        }
        let expected = "expected a distribution like fixed(10), uniform(1..100), gaussian(1..100), exp(1..100) or extreme(1..100,1.5)";
        let (name, args) = t.split_once('(').with_context(|| expected.to_string())?;
        let args = args.strip_suffix(')').with_context(|| expected.to_string())?;
        let kind = match name.trim().to_ascii_lowercase().as_str() {
            "fixed" => Kind::Fixed,
            "uniform" => Kind::Uniform,
            "gaussian" | "gauss" | "normal" | "norm" => Kind::Gaussian,
            "exp" => Kind::Exp,
            "extreme" | "extr" | "weibull" => Kind::Extreme,
            "qextreme" => Kind::QExtreme,
            other => bail!("unknown distribution '{other}': {expected}"),
        };
        let range = args.split(',').next().unwrap_or_default().trim();
        let (min, max) = match (kind, range.split_once("..")) {
            (Kind::Fixed, None) => {
                let n = number(range)?;
                (n, n)
            }
            (_, Some((a, b))) => (number(a)?, number(b)?),
            _ => bail!("{expected}"),
        };
        if min > max {
            bail!("its minimum {min} is above its maximum {max}");
        }
        Ok(Dist {
            kind,
            min,
            max,
            inverted,
        })
    }

    /// `DIST/denominator`, as in `select: fixed(1)/1000`.
    fn parse_ratio(text: &str) -> Result<(Dist, f64)> {
        let (d, denominator) = text
            .rsplit_once('/')
            .context("expected a ratio like fixed(1)/1000 or uniform(1..10)/10")?;
        let denominator = number(denominator)? as f64;
        if denominator == 0.0 {
            bail!("the denominator is 0");
        }
        Ok((Dist::parse(d)?, denominator))
    }

    fn span(&self) -> u64 {
        self.max - self.min + 1
    }

    fn mean(&self) -> f64 {
        match self.kind {
            Kind::Fixed => self.max as f64,
            _ => (self.min as f64 + self.max as f64) / 2.0,
        }
    }

    /// The nearest caplab distribution over a population, noting an approximation.
    fn distribution(&self, at: &str, notes: &mut Vec<String>) -> Distribution {
        self.note_inverted(at, notes);
        match self.kind {
            Kind::Uniform | Kind::Fixed => Distribution::Uniform,
            Kind::Gaussian => {
                notes.push(format!("{at}: gaussian with caplab's spread (sd = range / 6)"));
                Distribution::Gaussian
            }
            Kind::Exp => {
                notes.push(format!("{at}: exponential with caplab's mean (range / 8)"));
                Distribution::Exponential
            }
            Kind::Extreme | Kind::QExtreme => {
                notes.push(format!("{at}: approximated by zipf (exponent 1.1)"));
                Distribution::Zipf
            }
        }
    }

    fn note_inverted(&self, at: &str, notes: &mut Vec<String>) {
        if self.inverted {
            notes.push(format!(
                "{at}: '~' (inverted) is not mapped; the distribution is used as written"
            ));
        }
    }
}

/// A whole number with an optional k, m or b (billion) suffix.
fn number(s: &str) -> Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('b') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: f64 = digits.parse().map_err(|_| anyhow::anyhow!("'{s}' is not a number"))?;
    if n < 0.0 || !n.is_finite() {
        bail!("'{s}' is not a positive number");
    }
    Ok((n * mult as f64).round() as u64)
}

/// A table as its CREATE TABLE statement declares it.
#[derive(Debug)]
struct Table {
    name: String,
    /// (name, type as written), in declaration order.
    columns: Vec<(String, String)>,
    partition: Vec<String>,
    clustering: Vec<String>,
}

impl Table {
    /// What cassandra-stress's insert does: `UPDATE t SET v = ?, l = l + ? WHERE k = ? AND c = ?`
    /// (appending to lists, sets and counters), or an INSERT for a table of keys only.
    fn insert_cql(&self) -> String {
        let keys: Vec<&String> = self.partition.iter().chain(&self.clustering).collect();
        let values: Vec<&(String, String)> = self.columns.iter().filter(|(c, _)| !keys.contains(&c)).collect();
        let table = quote(&self.name);
        if values.is_empty() {
            let names: Vec<String> = keys.iter().map(|k| quote(k)).collect();
            let marks = vec!["?"; names.len()].join(", ");
            return format!("INSERT INTO {table} ({}) VALUES ({marks})", names.join(", "));
        }
        let sets: Vec<String> = values
            .iter()
            .map(|(c, t)| {
                let t = t.to_ascii_lowercase().replace(' ', "");
                let c = quote(c);
                if t == "counter" || t.starts_with("list<") || t.starts_with("set<") {
                    format!("{c} = {c} + ?")
                } else {
                    format!("{c} = ?")
                }
            })
            .collect();
        let conds: Vec<String> = keys.iter().map(|k| format!("{} = ?", quote(k))).collect();
        format!("UPDATE {table} SET {} WHERE {}", sets.join(", "), conds.join(" AND "))
    }
}

fn parse_table(ddl: &str) -> Result<Table> {
    let qualified =
        name_after(ddl, &["create", "table"]).context("table_definition is not a CREATE TABLE statement")?;
    let name = ident(qualified.rsplit('.').next().unwrap_or(&qualified));
    let open = ddl.find('(').context("table_definition has no column list")?;
    let body = &ddl[open + 1..open + matching(&ddl[open..]).context("table_definition: unbalanced parentheses")?];
    let mut columns = Vec::new();
    let mut partition = Vec::new();
    let mut clustering = Vec::new();
    for item in split_top(body, ',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let lower = item.to_ascii_lowercase();
        if lower.starts_with("primary key") || lower.starts_with("primary\tkey") {
            let open = item.find('(').context("PRIMARY KEY without a column list")?;
            let list =
                &item[open + 1..open + matching(&item[open..]).context("PRIMARY KEY: unbalanced parentheses")?];
            let parts = split_top(list, ',');
            let first = parts.first().map(|s| s.trim()).unwrap_or_default();
            match first.strip_prefix('(').and_then(|f| f.strip_suffix(')')) {
                Some(inner) => partition.extend(inner.split(',').map(|c| ident(c.trim()))),
                None => partition.push(ident(first)),
            }
            clustering.extend(parts.iter().skip(1).map(|c| ident(c.trim())));
            continue;
        }
        let (col, typ) = split_ident(item);
        let mut typ = typ.trim().to_string();
        let tl = typ.to_ascii_lowercase();
        if let Some(stripped) = tl.strip_suffix("primary key") {
            partition.push(ident(&col));
            typ = typ[..stripped.len()].trim().to_string();
        } else if let Some(stripped) = tl.strip_suffix("static") {
            typ = typ[..stripped.len()].trim().to_string();
        }
        columns.push((ident(&col), typ));
    }
    if partition.is_empty() {
        bail!("table_definition declares no PRIMARY KEY");
    }
    for k in partition.iter().chain(&clustering) {
        if !columns.iter().any(|(c, _)| c == k) {
            bail!("table_definition's PRIMARY KEY names '{k}', which is not among its columns");
        }
    }
    Ok(Table {
        name,
        columns,
        partition,
        clustering,
    })
}

/// The offset of the parenthesis closing the one `s` starts with.
fn matching(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits on `sep` outside (), <> and quotes.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let (mut depth, mut quoted, mut start, mut out) = (0i32, false, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '"' | '\'' => quoted = !quoted,
            '(' | '<' if !quoted => depth += 1,
            ')' | '>' if !quoted => depth -= 1,
            c if c == sep && depth == 0 && !quoted => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The leading identifier (quoted or not) of `s`, and the rest.
fn split_ident(s: &str) -> (String, &str) {
    let s = s.trim_start();
    if let Some(rest) = s.strip_prefix('"')
        && let Some(end) = rest.find('"')
    {
        return (format!("\"{}\"", &rest[..end]), &rest[end + 1..]);
    }
    let end = s.find(|c: char| c.is_whitespace()).unwrap_or(s.len());
    (s[..end].to_string(), &s[end..])
}

/// A CQL identifier as the server stores it: quoted names exactly, others in lower case.
fn ident(s: &str) -> String {
    let s = s.trim();
    match s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => s.to_ascii_lowercase(),
    }
}

/// A name as CQL must write it.
fn quote(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

/// The name following the keywords `words` (and an optional IF NOT EXISTS).
fn name_after(stmt: &str, words: &[&str]) -> Option<String> {
    let mut tokens = stmt.split_whitespace();
    for w in words {
        if !tokens.next()?.eq_ignore_ascii_case(w) {
            return None;
        }
    }
    let mut next = tokens.next()?;
    if next.eq_ignore_ascii_case("if") {
        tokens.next()?; // not
        tokens.next()?; // exists
        next = tokens.next()?;
    }
    let name = next.split(['(', ';']).next()?;
    Some(ident(name))
}

/// The `{...}` that follows `key =` in a statement.
fn braces_after<'a>(stmt: &'a str, key: &str) -> Option<&'a str> {
    let at = stmt.to_ascii_lowercase().find(key)?;
    let open = at + stmt[at..].find('{')?;
    let close = open + stmt[open..].find('}')?;
    Some(&stmt[open..=close])
}

/// The word that follows `key =` in a statement.
fn word_after<'a>(stmt: &'a str, key: &str) -> Option<&'a str> {
    let at = stmt.to_ascii_lowercase().find(key)? + key.len();
    let rest = stmt[at..].trim_start().strip_prefix('=')?.trim_start();
    rest.split(|c: char| !c.is_ascii_alphanumeric()).next()
}

/// A CREATE statement made safe to rerun (IF NOT EXISTS), without its final semicolon.
fn if_not_exists(stmt: &str) -> String {
    let s = stmt.trim().trim_end_matches(';').trim();
    let words: Vec<(usize, &str)> = s
        .split_whitespace()
        .take(6)
        .map(|w| (w.as_ptr() as usize - s.as_ptr() as usize, w))
        .collect();
    let is = |i: usize, kw: &str| words.get(i).is_some_and(|(_, w)| w.eq_ignore_ascii_case(kw));
    // After CREATE [MATERIALIZED] TABLE|TYPE|INDEX|VIEW.
    let n = if is(1, "materialized") { 3 } else { 2 };
    if !is(0, "create") || is(n, "if") || words.len() <= n {
        return s.to_string();
    }
    let at = words[n].0;
    format!("{}IF NOT EXISTS {}", &s[..at], &s[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example from the cassandra-stress documentation (blog posts), made smaller.
    const BLOGPOSTS: &str = include_str!("../../workloads/cassandra-stress/blogposts.yaml");

    #[test]
    fn the_documented_example_translates() {
        assert!(is_stress_profile(BLOGPOSTS));
        let Imported { profile: p, notes } = import(BLOGPOSTS, "blog.yaml").unwrap();
        assert_eq!(p.keyspace, "stresscql");
        assert_eq!(p.replication, "{'class': 'SimpleStrategy', 'replication_factor': 1}");
        assert!(
            p.schema[0].starts_with("CREATE TABLE IF NOT EXISTS blogposts ("),
            "{}",
            p.schema[0]
        );
        assert_eq!(p.partitions, 100);
        assert_eq!(p.rows_per_partition, RowCount::Fixed(20));
        assert_eq!(p.columns["url"].size, Size::Range { min: 30, max: 300 });
        assert_eq!(p.columns["author"].size, Size::Range { min: 5, max: 20 });
        let insert = &p.operations["insert"];
        assert_eq!(
            insert.cql,
            "UPDATE blogposts SET url = ?, author = ?, title = ?, body = ? WHERE domain = ? AND published_date = ?"
        );
        let b = insert.batch.as_ref().expect("10 rows of 2 partitions: a batch");
        assert_eq!((b.kind, b.rows, b.partitions), (BatchKind::Unlogged, 20, 2));
        assert_eq!(insert.weight, 1);
        assert_eq!(p.operations["timeline"].weight, 0);
        let said = notes.join("\n");
        assert!(said.contains("token_range_queries: not mapped"), "{said}");
        assert!(
            said.contains("columnspec body.size: gaussian(100..1000): lengths are drawn uniformly"),
            "{said}"
        );
        assert!(!is_stress_profile(include_str!("../../workloads/keyvalue.yaml")));
    }

    #[test]
    fn batches_counters_and_keys_only_tables() {
        let counters = r#"
keyspace: ks
table: hits
table_definition: "CREATE TABLE hits (page text, day int, \"Views\" counter, PRIMARY KEY ((page), day))"
columnspec:
  - {name: page, population: exp(1..500)}
  - {name: day, cluster: uniform(1..30)}
insert: {partitions: fixed(2), select: fixed(10)/30, batchtype: COUNTER, visits: fixed(1)}
queries:
  month: {cql: "SELECT * FROM hits WHERE page = ?", fields: multirow}
"#;
        let Imported { profile: p, notes } = import(counters, "c.yaml").unwrap();
        assert_eq!(
            p.operations["insert"].cql,
            "UPDATE hits SET \"Views\" = \"Views\" + ? WHERE page = ? AND day = ?"
        );
        // 10/30 of a mean partition of 15.5 rows: 5 rows in each of 2 partitions.
        let b = p.operations["insert"].batch.as_ref().unwrap();
        assert_eq!((b.kind, b.rows, b.partitions), (BatchKind::Counter, 10, 2));
        assert_eq!(
            (p.partitions, p.rows_per_partition),
            (
                500,
                RowCount::Varied {
                    min: 1,
                    max: 30,
                    distribution: Distribution::Uniform
                }
            )
        );
        assert_eq!(p.partition_select, Distribution::Exponential);
        let said = notes.join("\n");
        for expected in [
            "insert.visits: not mapped",
            "queries.month.fields: multirow",
            "keyspace_definition: absent",
        ] {
            assert!(said.contains(expected), "{expected} in {said}");
        }

        let keys_only =
            "keyspace: ks\ntable: t\ntable_definition: CREATE TABLE t (a int, b text, PRIMARY KEY (a, b))\n";
        assert_eq!(
            import(keys_only, "k.yaml").unwrap().profile.operations["insert"].cql,
            "INSERT INTO t (a, b) VALUES (?, ?)"
        );
    }

    #[test]
    fn distributions_parse_like_cassandra_stress() {
        let d = Dist::parse("uniform(1..10M)").unwrap();
        assert_eq!((d.kind, d.min, d.max), (Kind::Uniform, 1, 10_000_000));
        assert_eq!(Dist::parse("~exp(1..100B)").unwrap().max, 100_000_000_000);
        assert!(Dist::parse("~exp(1..100)").unwrap().inverted);
        assert_eq!(Dist::parse("gaussian(1..100,5)").unwrap().kind, Kind::Gaussian);
        assert_eq!(Dist::parse("extr(1..100,1.5)").unwrap().kind, Kind::Extreme);
        assert_eq!(Dist::parse("FIXED(7)").unwrap().mean(), 7.0);
        assert_eq!(Dist::parse("12").unwrap().kind, Kind::Fixed);
        let (r, den) = Dist::parse_ratio("uniform(1..10)/10").unwrap();
        assert_eq!(r.mean() / den, 0.55);
        assert!(
            Dist::parse("pareto(1..3)")
                .unwrap_err()
                .to_string()
                .contains("unknown distribution 'pareto'")
        );
        assert!(Dist::parse("uniform(9..3)").is_err());
    }

    #[test]
    fn bad_profiles_say_what_is_wrong() {
        let err = |t: &str| format!("{:#}", import(t, "s.yaml").unwrap_err());
        let base = "keyspace: ks\ntable: t\ntable_definition: CREATE TABLE t (a int PRIMARY KEY, v text)\n";
        assert!(
            err(&format!("{base}columnspec:\n  - {{name: w, size: fixed(3)}}\n"))
                .contains("'w', which is not a column of t (columns: a, v)")
        );
        assert!(err(&format!("{base}insert: {{batchtype: HUGE}}\n")).contains("LOGGED, UNLOGGED or COUNTER"));
        assert!(err(&format!("{base}columnspec:\n  - {{name: v, size: big(3)}}\n")).contains("columnspec v.size"));
        assert!(err("keyspace: ks\ntable: t\n").contains("table_definition is missing"));
        assert!(err(&base.replace("table: t", "table: u")).contains("creates 't' but table says 'u'"));
        assert!(err("keyspace: [").starts_with("s.yaml:"));
        let p = import(base, "s.yaml").unwrap().profile;
        assert_eq!(p.operations["insert"].cql, "UPDATE t SET v = ? WHERE a = ?");
        assert!(
            p.operations["insert"].batch.is_none(),
            "one row of one partition: a plain statement"
        );
        assert_eq!(
            if_not_exists("CREATE TYPE item (a int);"),
            "CREATE TYPE IF NOT EXISTS item (a int)"
        );
        assert_eq!(
            if_not_exists("create materialized view mv as select"),
            "create materialized view IF NOT EXISTS mv as select"
        );
    }
}
