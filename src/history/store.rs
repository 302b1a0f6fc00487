//! The history's database: an SQLite file (bundled, nothing to install) by default, or a
//! PostgreSQL server by URL for a team. One table of runs with a column per figure, so that
//! anyone can query it with SQL (or point Grafana at it), and a table of what wrote it.
//!
//! - The same result recorded twice is one row (`result_key` is unique; a second insert does
//!   nothing).
//! - Each record is one transaction: a process killed while writing leaves the rows before it,
//!   never half a row. SQLite runs in WAL mode and waits up to a minute for another writer;
//!   PostgreSQL serialises schema changes with an advisory lock.
//! - The schema has a version: an older one is migrated forward, in one transaction; a newer
//!   one (written by a newer caplab) is refused, naming both versions. Version 2 added each
//!   record's intervals; importing a directory recorded before fills them in. Version 3 added
//!   each record's sitting (rows from before are read as their host and day); version 4 the
//!   events: confirmations and bisections (events.rs); version 5 the spread between machines
//!   that pooled experiments measured (spreads.rs); version 6 what else each run's machine did
//!   (disturbed.rs; rows from before have none, and are never disturbed).

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::disturbed::MachineLoad;
pub use super::location::Location;
use super::record::{FIGURES, Figures, Intervals, Record, SeriesKey, WITH_INTERVAL};

/// The schema this caplab writes; `MIGRATIONS[v - 1]` takes a database from v - 1 to v.
pub const SCHEMA: u32 = 6;

/// How long a writer waits for another (SQLite).
const BUSY: Duration = Duration::from_secs(60);

/// `{id}` is the backend's auto-numbered key column.
const MIGRATIONS: [&str; SCHEMA as usize] = [
    "CREATE TABLE runs (
    id {id},
    result_key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    series TEXT NOT NULL,
    series_name TEXT NOT NULL,
    series_key TEXT NOT NULL,
    labels TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    recorded_at TEXT NOT NULL,
    status TEXT NOT NULL,
    caplab_version TEXT NOT NULL,
    dir TEXT NOT NULL,
    steady TEXT,
    is_steady BOOLEAN,
    throughput DOUBLE PRECISION,
    p50_ms DOUBLE PRECISION,
    p99_ms DOUBLE PRECISION,
    p999_ms DOUBLE PRECISION,
    max_ms DOUBLE PRECISION,
    service_p99_ms DOUBLE PRECISION,
    errors DOUBLE PRECISION,
    server_cpu_us_per_op DOUBLE PRECISION,
    gc_pause_ms DOUBLE PRECISION,
    capacity DOUBLE PRECISION
);
CREATE INDEX runs_series ON runs (series, started_at)",
    // 2: each record's own intervals (`record::Intervals`); rows from before have none until
    // their directory is imported again.
    "ALTER TABLE runs ADD COLUMN throughput_lo DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN throughput_hi DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN p50_ms_lo DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN p50_ms_hi DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN p99_ms_lo DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN p99_ms_hi DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN p999_ms_lo DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN p999_ms_hi DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN capacity_lo DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN capacity_hi DOUBLE PRECISION",
    // 3: each record's sitting (`record::sitting_of`); rows from before have NULL and are read
    // as their host and day.
    "ALTER TABLE runs ADD COLUMN sitting TEXT",
    // 4: what was done about changes: confirmations and bisections (`events::Event`).
    "CREATE TABLE events (
    id {id},
    kind TEXT NOT NULL,
    series TEXT,
    figure TEXT NOT NULL,
    change_at TEXT,
    outcome TEXT NOT NULL,
    summary TEXT NOT NULL,
    dir TEXT NOT NULL,
    recorded_at TEXT NOT NULL
)",
    // 5: the spread between machines that pooled experiments measured (`spreads::Spread`).
    "CREATE TABLE spreads (
    key TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    measurement TEXT NOT NULL,
    variant TEXT NOT NULL,
    metric TEXT NOT NULL,
    tau DOUBLE PRECISION NOT NULL,
    df DOUBLE PRECISION NOT NULL,
    machines BIGINT NOT NULL,
    recorded_at TEXT NOT NULL
)",
    // 6: what else each run's machine did (`disturbed::MachineLoad`).
    "ALTER TABLE runs ADD COLUMN other_cpu_cores DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN steal_cores DOUBLE PRECISION",
];

const META: &str = "CREATE TABLE IF NOT EXISTS caplab_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

/// An open history.
pub enum Store {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

const COLUMNS: &str = "result_key, kind, series, series_name, series_key, labels, started_at, finished_at, \
     recorded_at, status, caplab_version, dir, steady, is_steady, sitting, other_cpu_cores, steal_cores";

impl Store {
    /// Opens (creating it if need be) and brings its schema to this caplab's.
    pub fn open(at: &Location) -> Result<Store> {
        let mut store = match at {
            Location::Sqlite(path) => Store::Sqlite(open_sqlite(path)?),
            Location::Postgres(url) => {
                let client = postgres::Client::connect(url, postgres::NoTls).with_context(|| {
                    format!(
                        "cannot reach the history at {}: is PostgreSQL running there, and may this user connect?",
                        at.describe()
                    )
                })?;
                Store::Postgres(Box::new(client))
            }
        };
        store.migrate(at)?;
        Ok(store)
    }

    fn migrate(&mut self, at: &Location) -> Result<()> {
        let ours = env!("CARGO_PKG_VERSION");
        let check = |found: Option<(u32, String)>| -> Result<u32> {
            match found {
                Some((v, by)) if v > SCHEMA => bail!(
                    "the history at {} has schema version {v}, written by caplab {by}; this caplab ({ours}) knows versions up to {SCHEMA}: \
                     use caplab {by} or newer with it, or another history (--history FILE or URL, or --no-history)",
                    at.describe()
                ),
                Some((v, _)) => Ok(v),
                None => Ok(0),
            }
        };
        match self {
            Store::Sqlite(c) => {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                tx.execute(META, ())?;
                let from = check(sqlite_meta(&tx)?)?;
                for m in &MIGRATIONS[from as usize..] {
                    tx.execute_batch(&m.replace("{id}", "INTEGER PRIMARY KEY AUTOINCREMENT"))?;
                }
                if from < SCHEMA {
                    for (k, v) in [("schema_version", SCHEMA.to_string()), ("written_by", ours.to_string())] {
                        tx.execute(
                            "INSERT OR REPLACE INTO caplab_meta (key, value) VALUES (?1, ?2)",
                            [k, v.as_str()],
                        )?;
                    }
                }
                tx.commit()?;
            }
            Store::Postgres(c) => {
                let mut tx = c.transaction()?;
                tx.execute("SELECT pg_advisory_xact_lock(7263911)", &[])?;
                tx.batch_execute(META)?;
                let row = tx.query(
                    "SELECT (SELECT value FROM caplab_meta WHERE key = 'schema_version'), (SELECT value FROM caplab_meta WHERE key = 'written_by')",
                    &[],
                )?;
                let found = row.first().and_then(|r| {
                    let v: Option<String> = r.get(0);
                    let by: Option<String> = r.get(1);
                    v.and_then(|v| v.parse().ok()).map(|v| (v, by.unwrap_or_default()))
                });
                let from = check(found)?;
                for m in &MIGRATIONS[from as usize..] {
                    tx.batch_execute(&m.replace("{id}", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"))?;
                }
                if from < SCHEMA {
                    for (k, v) in [("schema_version", SCHEMA.to_string()), ("written_by", ours.to_string())] {
                        tx.execute(
                            "INSERT INTO caplab_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                            &[&k, &v],
                        )?;
                    }
                }
                tx.commit()?;
            }
        }
        Ok(())
    }

    /// Adds a record; false when the same result was already there (nothing added; its
    /// intervals are filled in if it was recorded without them).
    pub fn insert(&mut self, r: &Record) -> Result<bool> {
        let figure_cols = FIGURES.join(", ");
        let interval_cols = interval_columns().join(", ");
        let n = 17 + FIGURES.len() + 2 * WITH_INTERVAL.len();
        let marks: Vec<String> = (1..=n).map(|i| format!("${i}")).collect();
        let sql = format!(
            "INSERT INTO runs ({COLUMNS}, {figure_cols}, {interval_cols}) VALUES ({}) ON CONFLICT (result_key) DO NOTHING",
            marks.join(", ")
        );
        let sets: Vec<String> = interval_columns()
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ${}", i + 1))
            .collect();
        let fill = format!(
            "UPDATE runs SET {} WHERE result_key = ${} AND {}",
            sets.join(", "),
            sets.len() + 1,
            interval_columns()
                .iter()
                .map(|c| format!("{c} IS NULL"))
                .collect::<Vec<_>>()
                .join(" AND ")
        );
        let text = [
            r.result_key.clone(),
            r.series.kind.clone(),
            r.series.id(),
            r.series.name(),
            r.series.canonical(),
            serde_json::to_string(&r.labels)?,
            r.started_at.clone(),
        ];
        let recorded = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let rest = [
            recorded,
            r.status.clone(),
            r.caplab_version.clone(),
            r.dir.display().to_string(),
        ];
        let figures = r.figures.values();
        let bounds = interval_values(&r.intervals);
        let load = [r.machine.map(|m| m.other_cpu_cores), r.machine.map(|m| m.steal_cores)];
        let added = match self {
            Store::Sqlite(c) => {
                let mut p: Vec<&dyn rusqlite::ToSql> = text.iter().map(|t| t as &dyn rusqlite::ToSql).collect();
                p.push(&r.finished_at);
                p.extend(rest.iter().map(|t| t as &dyn rusqlite::ToSql));
                p.push(&r.steady);
                p.push(&r.is_steady);
                p.push(&r.sitting);
                p.extend(load.iter().map(|f| f as &dyn rusqlite::ToSql));
                p.extend(figures.iter().map(|f| f as &dyn rusqlite::ToSql));
                p.extend(bounds.iter().map(|f| f as &dyn rusqlite::ToSql));
                let added = c.execute(&sql.replace('$', "?"), p.as_slice())? > 0;
                if !added && !r.intervals.is_empty() {
                    let mut p: Vec<&dyn rusqlite::ToSql> = bounds.iter().map(|f| f as &dyn rusqlite::ToSql).collect();
                    p.push(&r.result_key);
                    c.execute(&fill.replace('$', "?"), p.as_slice())?;
                }
                added
            }
            Store::Postgres(c) => {
                type Sql = dyn postgres::types::ToSql + Sync;
                let mut p: Vec<&Sql> = text.iter().map(|t| t as &Sql).collect();
                p.push(&r.finished_at);
                p.extend(rest.iter().map(|t| t as &Sql));
                p.push(&r.steady);
                p.push(&r.is_steady);
                p.push(&r.sitting);
                p.extend(load.iter().map(|f| f as &Sql));
                p.extend(figures.iter().map(|f| f as &Sql));
                p.extend(bounds.iter().map(|f| f as &Sql));
                let added = c.execute(sql.as_str(), p.as_slice())? > 0;
                if !added && !r.intervals.is_empty() {
                    let mut p: Vec<&Sql> = bounds.iter().map(|f| f as &Sql).collect();
                    p.push(&r.result_key);
                    c.execute(fill.as_str(), p.as_slice())?;
                }
                added
            }
        };
        Ok(added)
    }

    /// Every record, oldest first (by start, then by when it was recorded).
    pub fn records(&mut self) -> Result<Vec<Stored>> {
        let sql = format!(
            "SELECT id, series_key, labels, started_at, finished_at, status, caplab_version, dir, steady, is_steady, result_key, {}, {}, sitting, \
             other_cpu_cores, steal_cores \
             FROM runs ORDER BY started_at, id",
            FIGURES.join(", "),
            interval_columns().join(", ")
        );
        const BOUNDS: usize = 11 + FIGURES.len();
        const SITTING: usize = BOUNDS + 2 * WITH_INTERVAL.len();
        let mut out = Vec::new();
        match self {
            Store::Sqlite(c) => {
                let mut stmt = c.prepare(&sql)?;
                let mut rows = stmt.query([])?;
                while let Some(row) = rows.next()? {
                    let mut figures = [None; 10];
                    for (i, f) in figures.iter_mut().enumerate() {
                        *f = row.get(11 + i)?;
                    }
                    let mut bounds = [None; 2 * WITH_INTERVAL.len()];
                    for (i, b) in bounds.iter_mut().enumerate() {
                        *b = row.get(BOUNDS + i)?;
                    }
                    out.push(stored(
                        row.get(0)?,
                        [row.get(1)?, row.get(2)?, row.get(3)?],
                        row.get(4)?,
                        [row.get(5)?, row.get(6)?, row.get(7)?],
                        row.get(8)?,
                        row.get(9)?,
                        (row.get(10)?, row.get(SITTING)?),
                        (figures, load(row.get(SITTING + 1)?, row.get(SITTING + 2)?)),
                        bounds,
                    )?);
                }
            }
            Store::Postgres(c) => {
                for row in c.query(sql.as_str(), &[])? {
                    let mut figures = [None; 10];
                    for (i, f) in figures.iter_mut().enumerate() {
                        *f = row.get(11 + i);
                    }
                    let mut bounds = [None; 2 * WITH_INTERVAL.len()];
                    for (i, b) in bounds.iter_mut().enumerate() {
                        *b = row.get(BOUNDS + i);
                    }
                    out.push(stored(
                        row.get(0),
                        [row.get(1), row.get(2), row.get(3)],
                        row.get(4),
                        [row.get(5), row.get(6), row.get(7)],
                        row.get(8),
                        row.get(9),
                        (row.get(10), row.get(SITTING)),
                        (figures, load(row.get(SITTING + 1), row.get(SITTING + 2))),
                        bounds,
                    )?);
                }
            }
        }
        Ok(out)
    }
}

/// A record as read back, with its row id.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: i64,
    pub record: Record,
}

#[allow(clippy::too_many_arguments)]
fn stored(
    id: i64,
    [key, labels, started_at]: [String; 3],
    finished_at: Option<String>,
    [status, caplab_version, dir]: [String; 3],
    steady: Option<String>,
    is_steady: Option<bool>,
    (result_key, sitting): (String, Option<String>),
    (figures, machine): ([Option<f64>; 10], Option<MachineLoad>),
    bounds: [Option<f64>; 2 * WITH_INTERVAL.len()],
) -> Result<Stored> {
    let series: SeriesKey = serde_json::from_str(&key).context("a history row's series_key is not caplab's")?;
    let labels: BTreeMap<String, String> =
        serde_json::from_str(&labels).context("a history row's labels are not caplab's")?;
    let sitting = sitting.unwrap_or_else(|| super::record::sitting_of_key(&labels, &result_key, &started_at));
    Ok(Stored {
        id,
        record: Record {
            result_key,
            series,
            labels,
            started_at,
            finished_at,
            status,
            caplab_version,
            dir: PathBuf::from(dir),
            sitting,
            steady,
            is_steady,
            figures: Figures::from_values(figures),
            intervals: WITH_INTERVAL
                .iter()
                .zip(bounds.chunks(2))
                .filter_map(|(f, b)| Some((f.to_string(), [b[0]?, b[1]?])))
                .collect(),
            machine,
        },
    })
}

/// A row's machine load, where it has one.
fn load(other: Option<f64>, steal: Option<f64>) -> Option<MachineLoad> {
    Some(MachineLoad {
        other_cpu_cores: other?,
        steal_cores: steal.unwrap_or(0.0),
    })
}

/// `throughput_lo, throughput_hi, p50_ms_lo, …`, in the order of `WITH_INTERVAL`.
fn interval_columns() -> Vec<String> {
    WITH_INTERVAL
        .iter()
        .flat_map(|f| [format!("{f}_lo"), format!("{f}_hi")])
        .collect()
}

/// A record's intervals as the columns of `interval_columns` hold them.
fn interval_values(i: &Intervals) -> Vec<Option<f64>> {
    WITH_INTERVAL
        .iter()
        .flat_map(|f| {
            let b = i.get(*f);
            [b.map(|b| b[0]), b.map(|b| b[1])]
        })
        .collect()
}

fn open_sqlite(path: &Path) -> Result<rusqlite::Connection> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {} for the history", parent.display()))?;
    }
    let c = rusqlite::Connection::open(path).with_context(|| {
        format!(
            "cannot open the history {} (give another with --history FILE, or --no-history)",
            path.display()
        )
    })?;
    c.busy_timeout(BUSY)?;
    // Switching a new file to WAL takes it whole, and SQLite's busy wait does not cover that:
    // two commands creating the history at once retry here (measured: 10 of 30 such pairs
    // failed with "database is locked" before this).
    let began = std::time::Instant::now();
    loop {
        match c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())) {
            Ok(()) => return Ok(c),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && began.elapsed() < BUSY =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(e).with_context(|| format!("{} is not an SQLite database caplab can use", path.display()));
            }
        }
    }
}

fn sqlite_meta(c: &rusqlite::Connection) -> Result<Option<(u32, String)>> {
    let get = |k: &str| -> Result<Option<String>> {
        let mut stmt = c.prepare("SELECT value FROM caplab_meta WHERE key = ?1")?;
        let mut rows = stmt.query([k])?;
        Ok(match rows.next()? {
            Some(r) => Some(r.get(0)?),
            None => None,
        })
    };
    Ok(get("schema_version")?
        .and_then(|v| v.parse().ok())
        .map(|v| (v, get("written_by").ok().flatten().unwrap_or_default())))
}
