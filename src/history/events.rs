//! What was done about changes, kept beside the runs: each confirmation by rerunning (its
//! series, figure, the change's first run, the verdict) and each bisection (its figure, values
//! and answer), in the table `events` (schema 4), so the history's page and `caplab history
//! SERIES` can say which changes were confirmed and where a bisection put one.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::store::Store;

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A change's configuration rerun (`caplab history confirm`, `check --confirm`).
    Confirmation,
    /// A figure bisected along ordered values (`caplab bisect`).
    Bisection,
}

impl EventKind {
    /// The word kept in the table (and in JSON).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Confirmation => "confirmation",
            EventKind::Bisection => "bisection",
        }
    }

    fn parse(word: &str) -> Option<EventKind> {
        [EventKind::Confirmation, EventKind::Bisection]
            .into_iter()
            .find(|k| k.name() == word)
    }
}

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    /// The series and figure (a bisection: no series).
    pub series: Option<String>,
    pub figure: String,
    /// The change's first run's start (a confirmation).
    pub change_at: Option<String>,
    /// In a word: confirmed, not confirmed, open; found, no change, between, open.
    pub outcome: String,
    /// For people: what it found, in one line.
    pub summary: String,
    /// Where its results are.
    pub dir: String,
    pub recorded_at: String,
}

impl Event {
    pub fn now() -> String {
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
    }
}

const COLUMNS: &str = "kind, series, figure, change_at, outcome, summary, dir, recorded_at";

/// Adds `e` to the history.
pub fn insert(store: &mut Store, e: &Event) -> Result<()> {
    let sql = format!("INSERT INTO events ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
    match store {
        Store::Sqlite(c) => {
            c.execute(
                &sql.replace('$', "?"),
                rusqlite::params![
                    e.kind.name(),
                    e.series,
                    e.figure,
                    e.change_at,
                    e.outcome,
                    e.summary,
                    e.dir,
                    e.recorded_at
                ],
            )?;
        }
        Store::Postgres(c) => {
            c.execute(
                sql.as_str(),
                &[
                    &e.kind.name(),
                    &e.series,
                    &e.figure,
                    &e.change_at,
                    &e.outcome,
                    &e.summary,
                    &e.dir,
                    &e.recorded_at,
                ],
            )?;
        }
    }
    Ok(())
}

/// Every event, oldest first.
pub fn all(store: &mut Store) -> Result<Vec<Event>> {
    let sql = format!("SELECT {COLUMNS} FROM events ORDER BY recorded_at, id");
    let mut out = Vec::new();
    match store {
        Store::Sqlite(c) => {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map([], |r| {
                let kind: String = r.get(0)?;
                Ok(Event {
                    kind: EventKind::parse(&kind).ok_or(rusqlite::Error::InvalidColumnType(
                        0,
                        kind,
                        rusqlite::types::Type::Text,
                    ))?,
                    series: r.get(1)?,
                    figure: r.get(2)?,
                    change_at: r.get(3)?,
                    outcome: r.get(4)?,
                    summary: r.get(5)?,
                    dir: r.get(6)?,
                    recorded_at: r.get(7)?,
                })
            })?;
            for r in rows {
                out.push(r.context("a history event row is not caplab's")?);
            }
        }
        Store::Postgres(c) => {
            for r in c.query(sql.as_str(), &[])? {
                let kind: String = r.get(0);
                out.push(Event {
                    kind: EventKind::parse(&kind)
                        .with_context(|| format!("a history event of kind '{kind}' is not caplab's"))?,
                    series: r.get(1),
                    figure: r.get(2),
                    change_at: r.get(3),
                    outcome: r.get(4),
                    summary: r.get(5),
                    dir: r.get(6),
                    recorded_at: r.get(7),
                });
            }
        }
    }
    Ok(out)
}
