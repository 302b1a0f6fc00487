//! The performance history: every run, capacity search, experiment step and merge records its
//! key figures as it finishes, in an SQLite file in caplab's home (`history.db`) or a
//! PostgreSQL server (`--history postgres://…`), with what identifies its series (record.rs)
//! and the user's labels (`--label commit=abc123`). `caplab history import DIR…` adds results
//! written earlier. The store and its schema: store.rs; walking result directories: import.rs;
//! change points: detect.rs, looked for with look.rs' settings, runs disturbed by other work left
//! out of them (disturbed.rs); confirming them by rerunning:
//! confirm.rs and rerun.rs; what a nightly check fails on, and its confirmations recorded:
//! gate.rs; confirmations and bisections kept: events.rs; where along ordered values a figure
//! changes: bisect/.

pub mod bisect;
pub mod confirm;
pub mod detect;
pub mod disturbed;
pub mod events;
pub mod gate;
pub mod import;
pub mod location;
pub mod look;
pub mod power;
pub mod record;
pub mod rerun;
pub mod series;
pub mod spreads;
pub mod store;

use anyhow::Result;
use clap::Args;
use std::collections::BTreeMap;
use std::path::Path;

pub use location::Location;
pub use record::{Figures, Record, SeriesKey};
pub use store::{Store, Stored};

/// Where results are recorded: the options every measuring command takes.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// The history results are recorded in: an SQLite file, or postgres://USER@HOST/DB
    /// [env: CAPLAB_HISTORY; default: history.db in caplab's home]
    #[arg(long, value_name = "FILE|URL", env = "CAPLAB_HISTORY", hide_env = true)]
    pub history: Option<String>,
    /// Record nothing in the history.
    #[arg(long, conflicts_with = "history")]
    pub no_history: bool,
}

impl HistoryArgs {
    /// The history to record in, or None (`--no-history`); `home` is caplab's data directory.
    pub fn location(&self, home: &Path) -> Option<Location> {
        if self.no_history {
            return None;
        }
        Some(Location::resolve(self.history.as_deref(), home))
    }
}

/// The default history's file name, in caplab's home.
pub const DEFAULT_FILE: &str = "history.db";

/// Records the results in `dir` (extra labels added to theirs) and says so on one line. A
/// history that cannot be written is a warning that names the fix: the results themselves are
/// already on disk, and `caplab history import` adds them later.
pub fn record_finished(at: Option<&Location>, dir: &Path, extra: &BTreeMap<String, String>) {
    let Some(at) = at else { return };
    match record_dir(at, dir, extra) {
        Ok((rec, true)) => crate::console::say(&format!(
            "History: recorded in {} (series {}, {})",
            at.describe(),
            &rec.series.id()[..8],
            rec.series.name()
        )),
        Ok((_, false)) => crate::console::say(&format!("History: already recorded in {}", at.describe())),
        Err(e) => eprintln!(
            "warning: not recorded in the history ({e:#}); the results are in {}: add them later with `caplab history import {}`",
            dir.display(),
            dir.display()
        ),
    }
}

/// Records one results directory; returns the record and whether it was new.
pub fn record_dir(at: &Location, dir: &Path, extra: &BTreeMap<String, String>) -> Result<(Record, bool)> {
    let rec = record::of_dir(dir, extra)?;
    let added = Store::open(at)?.insert(&rec)?;
    Ok((rec, added))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_is_named_without_its_password() {
        let at = Location::parse("postgres://caplab:secret@127.0.0.1:5433/history");
        assert_eq!(at.describe(), "postgres://caplab:***@127.0.0.1:5433/history");
        assert_eq!(Location::parse("/x/h.db"), Location::Sqlite("/x/h.db".into()));
    }
}
