//! `caplab history [SERIES]`, `import DIR...` and `page`: the series the history holds (each
//! with its records and last figures), one series' records, results written earlier added to
//! it, its page; `check` (history_check.rs) and `confirm` (confirm.rs) are dispatched from here, and
//! every subcommand finds change points with `history::look`'s options.

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use std::path::PathBuf;

use crate::cluster::Home;
use crate::history::detect::{CHECKED, Points};
use crate::history::events::{Event, EventKind};
use crate::history::gate::FailOn;
use crate::history::look::DetectArgs;
use crate::history::series::{by_series, one_series};
use crate::history::{Location, Store, Stored, import};

#[derive(Debug, Args)]
pub struct HistoryCommand {
    #[command(subcommand)]
    pub command: Option<HistorySub>,
    /// A series to show: its id, or a prefix of it that names one (`caplab history` lists them).
    pub series: Option<String>,
    /// The history: an SQLite file, or postgres://USER@HOST/DB [env: CAPLAB_HISTORY; default:
    /// history.db in caplab's home].
    #[arg(
        long,
        value_name = "FILE|URL",
        env = "CAPLAB_HISTORY",
        hide_env = true,
        global = true
    )]
    pub history: Option<String>,
    /// Print as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub detect: DetectArgs,
}

#[derive(Debug, Subcommand)]
pub enum HistorySub {
    /// Add results written earlier: run, capacity, merge and experiment directories, or any
    /// directory above them. A result already in the history is not added again.
    Import {
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// A label for every result imported (repeatable), besides their own.
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::measure::options::parse_label)]
        labels: Vec<(String, String)>,
    },
    /// For CI: exits 1 when the latest runs of a series begin a regression (or any change, with
    /// --fail-on change), printing each; 0 otherwise.
    Check {
        /// Series to check (ids or prefixes; default: every series).
        series: Vec<String>,
        /// Changes that begin at a run started at or after this time (RFC 3339, e.g.
        /// 2026-11-26T00:00:00Z) count as new. Default: changes whose new level holds at most
        /// twice --min-segment runs (the latest ones), or sittings for a change between sittings.
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// What fails the check.
        #[arg(long, value_enum, default_value = "regression")]
        fail_on: FailOn,
        /// Before failing, rerun each failing change's configuration (as `history confirm`
        /// does): fail only on changes the reruns confirm (one left open is printed and looked
        /// at again the next run).
        #[arg(long)]
        confirm: bool,
        /// The most fresh runs per confirmation.
        #[arg(long, default_value_t = 5, value_name = "N")]
        confirm_runs: usize,
    },

    /// Rerun a series' configuration now to tell its latest sure regression (else its latest
    /// sure change; `--figure` to choose) from a noisy night: the runs after the change are
    /// rerun from their result.json, one at a time, recorded with the label `confirm`, until
    /// they are worse than the level before (confirmed, exit 1), better than the level after
    /// (not confirmed, exit 0), or the last run leaves it open (exit 3).
    Confirm {
        /// The series (id or prefix).
        series: String,
        /// The most fresh runs.
        #[arg(long, default_value_t = 5, value_name = "N")]
        runs: usize,
        /// Where the reruns go (default: confirm/SERIES-FIGURE-TIME in caplab's home).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },

    /// Write the history's page (offline HTML): per series, each figure over time with its
    /// levels and change points, each point linked to its run's page.
    Page {
        /// Where (default: history.html beside the SQLite file; in the current directory for
        /// a PostgreSQL history).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// Exit codes: 0, or 1 when a directory's results could not be read (the others are imported).
pub fn run(home: &Home, args: HistoryCommand) -> Result<u8> {
    let at = Location::resolve(args.history.as_deref(), &home.data);
    if let Location::Sqlite(path) = &at
        && args.command.is_none()
        && !path.exists()
    {
        bail!(
            "no history at {}: caplab run, capacity, experiment and merge record in it as they finish, or add results with `caplab history import DIR`",
            path.display()
        );
    }
    let mut store = Store::open(&at)?;
    match args.command {
        Some(HistorySub::Import { dirs, labels }) => {
            let done = import::import(&mut store, &dirs, &labels.into_iter().collect())?;
            for r in &done.added {
                println!("added  {}  {}  {}", &r.series.id()[..8], r.started_at, r.dir.display());
            }
            for (dir, why) in &done.failed {
                eprintln!("error: {}: {why}", dir.display());
            }
            println!(
                "Imported into {}: {} added, {} already there, {} unreadable",
                at.describe(),
                done.added.len(),
                done.already,
                done.failed.len()
            );
            Ok(u8::from(!done.failed.is_empty()))
        }
        Some(HistorySub::Page { out }) => {
            let all = store.records()?;
            let out = out.unwrap_or_else(|| match &at {
                Location::Sqlite(db) => db.with_file_name(crate::report::history::HISTORY_PAGE),
                Location::Postgres(_) => PathBuf::from(crate::report::history::HISTORY_PAGE),
            });
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {} for the page", dir.display()))?;
            }
            if args.detect.canary.is_some() {
                bail!(
                    "--canary is for check, the series list and a series: the page draws each figure as measured (leave --canary out)"
                );
            }
            let points = Points {
                include_unsteady: args.detect.include_unsteady,
                include_disturbed: args.detect.include_disturbed,
                canary: None,
            };
            let events = crate::history::events::all(&mut store)?;
            crate::report::history::write(
                &by_series(&all),
                &events,
                &args
                    .detect
                    .settings(1)
                    .over(crate::history::detect::family_members(&CHECKED)),
                points,
                &at.describe(),
                &out,
            )?;
            println!("History page: {}", out.display());
            Ok(0)
        }
        Some(HistorySub::Check {
            series,
            since,
            fail_on,
            confirm,
            confirm_runs,
        }) => {
            let all = store.records()?;
            drop(store);
            let confirm = confirm.then_some((home.data.as_path(), &at, confirm_runs));
            super::history_check::check(
                &all,
                &series,
                since.as_deref(),
                fail_on,
                &args.detect,
                args.json,
                confirm,
            )
        }
        Some(HistorySub::Confirm { series, runs, out }) => {
            let all = store.records()?;
            drop(store);
            let ask = super::confirm::Ask {
                runs,
                out: out.as_deref(),
                json: args.json,
            };
            super::confirm::series(&home.data, &at, &all, &series, &args.detect, ask)
        }
        None => {
            let all = store.records()?;
            match &args.series {
                None => list(&all, &args.detect, args.json),
                Some(prefix) => {
                    let events = crate::history::events::all(&mut store)?;
                    show(&all, &events, prefix, &args.detect, args.json)
                }
            }
        }
    }
}

fn list(all: &[Stored], d: &DetectArgs, json: bool) -> Result<u8> {
    let series = by_series(all);
    let canary = d.canary(&series)?;
    let changes = |id: &str, recs: &[&Stored]| match canary {
        Some((c, _)) if c == id => d.changes(recs, 1, None),
        _ => d.changes(recs, 1, canary.map(|c| c.1)),
    };
    if json {
        let doc: Vec<serde_json::Value> = series
            .iter()
            .map(|(id, recs)| {
                let last = recs.last().map(|s| &s.record);
                serde_json::json!({
                    "series": id,
                    "name": last.map(|r| r.series.name()),
                    "key": last.map(|r| &r.series),
                    "records": recs.len(),
                    "last": last.map(record_json),
                    "changes": changes(id, recs),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    println!(
        "{:<8}  {:>7}  {:<24}  {:>12}  {:>9}  {:>7}  series",
        "id", "records", "last", "throughput", "p99 ms", "changes"
    );
    for (id, recs) in &series {
        let r = &recs.last().expect("a series has a record").record;
        let value = r.figures.capacity.map_or_else(
            || r.figures.throughput.map_or("-".into(), crate::console::group),
            |c| format!("cap {}", crate::console::group(c)),
        );
        println!(
            "{:<8}  {:>7}  {:<24}  {:>12}  {:>9}  {:>7}  {}",
            &id[..8],
            recs.len(),
            r.started_at,
            value,
            r.figures.p99_ms.map_or("-".into(), |v| format!("{v:.2}")),
            changes(id, recs).iter().filter(|f| !f.weak).count(),
            r.series.name()
        );
    }
    println!("(changes per series: {})", d.settings(1).describe());
    if let Some((c, _)) = canary {
        println!("(each relative to canary {} in the same sitting)", &c[..8]);
    }
    Ok(0)
}

fn show(all: &[Stored], events: &[Event], prefix: &str, d: &DetectArgs, json: bool) -> Result<u8> {
    let series = by_series(all);
    let (id, recs) = one_series(&series, prefix)?;
    let confirmations: Vec<&Event> = events
        .iter()
        .filter(|e| e.kind == EventKind::Confirmation && e.series.as_deref() == Some(id.as_str()))
        .collect();
    let canary = d.canary(&series)?.filter(|(c, _)| c != id).map(|c| c.1);
    let first = &recs[0].record;
    if json {
        let doc = serde_json::json!({
            "series": id,
            "name": first.series.name(),
            "key": first.series,
            "records": recs.iter().map(|s| record_json(&s.record)).collect::<Vec<_>>(),
            "changes": d.changes(recs, 1, canary),
            "settings": d.settings(1).describe(),
            "confirmations": confirmations,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    println!("Series {id}: {}", first.series.name());
    println!(
        "{:<24}  {:<11}  {:<10}  {:>18}  {:>15}  {:>15}  {:>15}  {:>9}  labels",
        "started", "status", "window", "throughput", "p50 ms", "p99 ms", "p99.9 ms", "capacity"
    );
    for s in recs {
        let r = &s.record;
        let labels: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let with = |figure: &str, v: Option<f64>, text: &dyn Fn(f64) -> String| {
            v.map_or("-".into(), |v| match r.intervals.get(figure) {
                Some([lo, hi]) if v > 0.0 => format!("{} ±{:.1}%", text(v), (hi - lo) / 2.0 / v * 100.0),
                _ => text(v),
            })
        };
        let ms = |v: f64| format!("{v:.2}");
        println!(
            "{:<24}  {:<11}  {:<10}  {:>18}  {:>15}  {:>15}  {:>15}  {:>9}  {}",
            r.started_at,
            r.status,
            r.steady.as_deref().unwrap_or("not judged"),
            with("throughput", r.figures.throughput, &crate::console::group),
            with("p50_ms", r.figures.p50_ms, &ms),
            with("p99_ms", r.figures.p99_ms, &ms),
            with("p999_ms", r.figures.p999_ms, &ms),
            r.figures.capacity.map_or("-".into(), crate::console::group),
            labels.join(" ")
        );
    }
    println!("(± : half the run's own 95 % interval, sectioning its window into 10 parts)");
    let changes = d.changes(recs, 1, canary);
    println!(
        "\n{} change(s), {} of them weak ({})",
        changes.len(),
        changes.iter().filter(|f| f.weak).count(),
        d.settings(1).describe()
    );
    for f in &changes {
        println!("  {}", f.render());
    }
    if !confirmations.is_empty() {
        println!("\nConfirmations by rerunning:");
        for e in &confirmations {
            println!("  {} ({}; {})", e.summary, e.recorded_at, e.dir);
        }
    }
    Ok(0)
}

fn record_json(r: &crate::history::Record) -> serde_json::Value {
    serde_json::json!({
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "status": r.status,
        "steady": r.steady,
        "is_steady": r.is_steady,
        "labels": r.labels,
        "figures": r.figures,
        "intervals": r.intervals,
        "dir": r.dir,
        "sitting": r.sitting,
        "caplab_version": r.caplab_version,
    })
}
