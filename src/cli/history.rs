//! `caplab history [SERIES]` and `caplab history import DIR...`: the series the history holds
//! (each with its records and last figures), one series' records, or results written earlier
//! added to it.

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cluster::Home;
use crate::history::detect::{self, CHECKED, Found, Points};
use crate::history::{Location, Store, Stored, import};
use crate::stats::changes::Settings;

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

/// How change points are found.
#[derive(Debug, Clone, Args)]
pub struct DetectArgs {
    /// A figure to look for changes in (repeatable; default: throughput, p50_ms, p99_ms,
    /// p999_ms, service_p99_ms, server_cpu_us_per_op, gc_pause_ms, capacity).
    #[arg(long = "figure", value_name = "NAME", global = true, value_parser = clap::builder::PossibleValuesParser::new(crate::history::record::FIGURES))]
    pub figures: Vec<String>,
    /// The chance of any false change per look, over every series × figure it looks at (a
    /// check: the series checked × the figures; a series' listing: its figures).
    #[arg(long, value_parser = crate::sla::parse_share, default_value = "5%", global = true)]
    pub alpha: f64,
    /// A weak change's largest p-value for its own figure (reported apart; never fails a check).
    #[arg(long, default_value_t = crate::stats::changes::WEAK, global = true)]
    pub weak: f64,
    /// The smallest change, as a share of the level before it.
    #[arg(long, value_parser = crate::sla::parse_share, default_value = "2%", global = true)]
    pub min_change: f64,
    /// The fewest runs on each side of a change.
    #[arg(long, default_value_t = crate::stats::changes::MIN_SEGMENT, value_parser = parse_segment, global = true)]
    pub min_segment: usize,
    /// Windows judged not steady are points too (by default they are left out).
    #[arg(long, global = true)]
    pub include_unsteady: bool,
    /// A canary series (id or prefix): a fixed configuration the job runs in every sitting.
    /// Each run's figures are divided by the canary's in the same sitting, so a slower host or
    /// a noisy night moves both and cancels; runs of sittings without the canary are left out,
    /// and the canary itself is not checked.
    #[arg(long, value_name = "SERIES", global = true)]
    pub canary: Option<String>,
}

impl DetectArgs {
    /// The thresholds for a look over `series` series (times the figures looked at).
    fn settings(&self, series: usize) -> Settings {
        Settings {
            alpha: self.alpha,
            family: series.max(1) * self.figures().len(),
            weak: self.weak,
            min_segment: self.min_segment,
            min_change: self.min_change,
        }
    }

    fn figures(&self) -> Vec<&str> {
        if self.figures.is_empty() {
            CHECKED.to_vec()
        } else {
            self.figures.iter().map(String::as_str).collect()
        }
    }

    /// The changes of one series in a look over `series` series, relative to `canary`'s
    /// records where there is one.
    fn changes(&self, recs: &[&Stored], series: usize, canary: Option<&[&Stored]>) -> Vec<Found> {
        let points = Points {
            include_unsteady: self.include_unsteady,
            canary,
        };
        detect::series_changes(recs, &self.figures(), points, &self.settings(series))
    }

    /// The canary's id and records, where `--canary` names one series.
    fn canary<'a>(&self, series: &'a [(String, Vec<&'a Stored>)]) -> Result<Option<(&'a str, &'a [&'a Stored])>> {
        let Some(prefix) = &self.canary else { return Ok(None) };
        let (id, recs) = one_series(series, prefix).context("--canary")?;
        Ok(Some((id.as_str(), recs.as_slice())))
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Regression,
    Change,
    Never,
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
                canary: None,
            };
            crate::report::history::write(
                &by_series(&all),
                &args.detect.settings(1).over(CHECKED.len()),
                points,
                &at.describe(),
                &out,
            )?;
            println!("History page: {}", out.display());
            Ok(0)
        }
        Some(HistorySub::Check { series, since, fail_on }) => {
            let all = store.records()?;
            check(&all, &series, since.as_deref(), fail_on, &args.detect, args.json)
        }
        None => {
            let all = store.records()?;
            match &args.series {
                None => list(&all, &args.detect, args.json),
                Some(prefix) => show(&all, prefix, &args.detect, args.json),
            }
        }
    }
}

/// `caplab history check`: the new changes of each series; exit 1 when one fails the check.
fn check(
    all: &[Stored],
    wanted: &[String],
    since: Option<&str>,
    fail_on: FailOn,
    d: &DetectArgs,
    json: bool,
) -> Result<u8> {
    let all_series = by_series(all);
    let canary = d.canary(&all_series)?;
    let mut series: Vec<(String, Vec<&Stored>)> = all_series
        .iter()
        .filter(|(id, _)| canary.is_none_or(|(c, _)| c != id.as_str()))
        .cloned()
        .collect();
    if !wanted.is_empty() {
        for w in wanted {
            if !series.iter().any(|(id, _)| id.starts_with(w.as_str())) {
                bail!("no series '{w}' in the history: `caplab history` lists them");
            }
        }
        series.retain(|(id, _)| wanted.iter().any(|w| id.starts_with(w.as_str())));
    }
    let recent = |f: &Found| match since {
        Some(t) => f.started_at.as_str() >= t,
        None => f.since < 2 * d.min_segment,
    };
    let new: Vec<Found> = series
        .iter()
        .flat_map(|(_, recs)| d.changes(recs, series.len(), canary.map(|c| c.1)))
        .filter(recent)
        .collect();
    let settings = d.settings(series.len()).describe();
    let failing: Vec<&Found> = new
        .iter()
        .filter(|f| !f.weak)
        .filter(|f| match fail_on {
            FailOn::Regression => f.kind == "regression",
            FailOn::Change => f.kind != "starved",
            FailOn::Never => false,
        })
        .collect();
    if json {
        let doc = serde_json::json!({
            "settings": settings,
            "series_checked": series.len(),
            "canary": canary.map(|c| c.0),
            "changes": new,
            "fail": !failing.is_empty(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("Checked {} series ({settings}).", series.len());
        if let Some((c, _)) = canary {
            println!(
                "Each relative to canary {} in the same sitting (the canary itself not checked).",
                &c[..8]
            );
        }
        for f in new.iter().filter(|f| !f.weak) {
            println!(
                "{}  {}
  {}
  first run at the new level: {}",
                &f.series[..8],
                f.series_name,
                f.render(),
                f.dir
            );
        }
        if new.iter().all(|f| f.weak) {
            println!("No new change in the latest runs.");
        }
        let weak: Vec<&Found> = new.iter().filter(|f| f.weak).collect();
        if !weak.is_empty() {
            println!("Weak changes (likely, not yet sure; they never fail the check):");
            for f in weak {
                println!("{}  {}\n  {}", &f.series[..8], f.series_name, f.render());
            }
        }
        if !failing.is_empty() {
            println!(
                "FAIL: {} new {} (--fail-on {:?})",
                failing.len(),
                if failing.len() == 1 { "change" } else { "changes" },
                fail_on
            );
        }
    }
    Ok(u8::from(!failing.is_empty()))
}

/// Records per series, in the order of each series' first record.
fn by_series(all: &[Stored]) -> Vec<(String, Vec<&Stored>)> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Stored>> = BTreeMap::new();
    for s in all {
        let id = s.record.series.id();
        if !groups.contains_key(&id) {
            order.push(id.clone());
        }
        groups.entry(id).or_default().push(s);
    }
    order
        .into_iter()
        .map(|id| {
            let g = groups.remove(&id).unwrap_or_default();
            (id, g)
        })
        .collect()
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

fn show(all: &[Stored], prefix: &str, d: &DetectArgs, json: bool) -> Result<u8> {
    let series = by_series(all);
    let (id, recs) = one_series(&series, prefix)?;
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
    Ok(0)
}

/// The one series whose id starts with `prefix`.
fn one_series<'a>(series: &'a [(String, Vec<&'a Stored>)], prefix: &str) -> Result<&'a (String, Vec<&'a Stored>)> {
    let found: Vec<_> = series.iter().filter(|(id, _)| id.starts_with(prefix)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => bail!("no series '{prefix}' in the history: `caplab history` lists them"),
        many => bail!(
            "'{prefix}' names {} series ({}): give more of the id",
            many.len(),
            many.iter().map(|(id, _)| &id[..8]).collect::<Vec<_>>().join(", ")
        ),
    }
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

fn parse_segment(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        _ => Err(format!("'{s}' is not a number of runs of at least 2")),
    }
}
