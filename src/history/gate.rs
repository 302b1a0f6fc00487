//! The gate a nightly job runs (`caplab history check`): which series are looked at, which of
//! their changes are new (in the latest runs, or since a time), which of those fail the check
//! (`--fail-on`), and, with `--confirm`, rerunning each failing series' configuration first so
//! that only a change the reruns confirm (or leave open) fails it. Confirmations are recorded in
//! the history's events. The command line only prints what this decides.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::Path;

use super::confirm::{Confirmation, Request, confirm};
use super::detect::{Found, Kind, Points};
use super::disturbed::Undecided;
use super::events::{self, Event, EventKind};
use super::look::DetectArgs;
use super::power::Power;
use super::series::by_series;
use super::{Location, Store, Stored};
use crate::stats::changes::Settings;
use crate::stats::confirm::Finding;

/// What fails the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A sure regression (worse in its figure's direction).
    Regression,
    /// Any sure change, better or worse.
    Change,
    /// Nothing: the check only reports.
    Never,
}

/// What a check asks.
pub struct Gate<'a> {
    /// Series ids or prefixes (empty: every series).
    pub wanted: &'a [String],
    /// Changes whose first run started at or after this time are new (None: those within the
    /// last two minimum segments of runs).
    pub since: Option<&'a str>,
    pub fail_on: FailOn,
    /// Rerun before failing: caplab's data directory, the history, and the most runs.
    pub confirm: Option<(&'a Path, &'a Location, usize)>,
}

/// What a check found.
#[derive(Debug, Serialize)]
pub struct Checked {
    /// The thresholds, for people.
    pub settings: String,
    pub series_checked: usize,
    /// Series with fewer runs than a change needs (`min_segment` each side): nothing can be
    /// found in them yet, so their passing says nothing.
    pub too_short: usize,
    /// The canary's series id, when there is one.
    pub canary: Option<String>,
    /// The new changes (weak ones too: they never fail the check).
    pub changes: Vec<Found>,
    pub confirmations: Vec<Confirmation>,
    /// The changes that fail it.
    #[serde(skip)]
    pub failing: Vec<Found>,
    pub fail: bool,
    /// Series whose latest run was disturbed by other work: not judged tonight (none with
    /// `--include-disturbed`).
    pub disturbed: Vec<Undecided>,
    /// What the check could find in each series at its own spread.
    pub power: Vec<Power>,
}

/// The check's exit status when nothing failed but a series could not be judged (its latest run
/// disturbed): neither green (0) nor a change (1).
pub const UNDECIDED: u8 = 3;

impl Checked {
    /// 1 when a change fails the check, else `UNDECIDED` when a series could not be judged,
    /// else 0.
    pub fn exit_code(&self) -> u8 {
        if self.fail {
            1
        } else if !self.disturbed.is_empty() {
            UNDECIDED
        } else {
            0
        }
    }
}

impl Gate<'_> {
    /// Looks at the series of `all` with `d`'s settings and decides.
    pub fn check(&self, all: &[Stored], d: &DetectArgs) -> Result<Checked> {
        let all_series = by_series(all);
        let canary = d.canary(&all_series)?;
        let mut series: Vec<(String, Vec<&Stored>)> = all_series
            .iter()
            .filter(|(id, _)| canary.is_none_or(|(c, _)| c != id.as_str()))
            .cloned()
            .collect();
        for w in self.wanted {
            if !series.iter().any(|(id, _)| id.starts_with(w.as_str())) {
                bail!("no series '{w}' in the history: `caplab history` lists them");
            }
        }
        if !self.wanted.is_empty() {
            series.retain(|(id, _)| self.wanted.iter().any(|w| id.starts_with(w.as_str())));
        }
        let recent = |f: &Found| match self.since {
            Some(t) => f.started_at.as_str() >= t,
            None => f.since < 2 * d.min_segment,
        };
        let changes: Vec<Found> = series
            .iter()
            .flat_map(|(_, recs)| d.changes(recs, series.len(), canary.map(|c| c.1)))
            .filter(recent)
            .collect();
        let mut failing: Vec<&Found> = changes
            .iter()
            .filter(|f| !f.weak)
            .filter(|f| match self.fail_on {
                FailOn::Regression => f.kind == Kind::Regression,
                FailOn::Change => !matches!(f.kind, Kind::Starved | Kind::Disturbed),
                FailOn::Never => false,
            })
            .collect();
        let mut confirmations = Vec::new();
        if let Some((data, at, runs)) = self.confirm {
            // One confirmation a series: its failing figures read from the same reruns.
            let asked = std::mem::take(&mut failing);
            for (id, recs) in &series {
                let theirs: Vec<&Found> = asked.iter().copied().filter(|f| f.series == *id).collect();
                if theirs.is_empty() {
                    continue;
                }
                let points = d.points(canary.map(|c| c.1));
                for c in confirm_and_record(data, at, recs, &theirs, points, (runs, d.settings(1)), None)? {
                    // Only a change the reruns confirm fails: one they leave open is printed and
                    // looked at again the next night (failing on open ones let GC-paused runs
                    // through: `stats::nights`, bench/results/nights.md "Nights").
                    if c.verdict == Finding::Confirmed {
                        failing.push(theirs.iter().copied().find(|f| f.figure == c.figure).expect("asked"));
                    }
                    confirmations.push(c);
                }
            }
        }
        let failing: Vec<Found> = failing.into_iter().cloned().collect();
        let disturbed = match d.include_disturbed {
            true => Vec::new(),
            false => series.iter().filter_map(|(_, recs)| latest_disturbed(recs)).collect(),
        };
        let power = series
            .iter()
            .flat_map(|(_, recs)| {
                super::power::of_series(
                    recs,
                    &d.figures(),
                    d.points(canary.map(|c| c.1)),
                    &d.settings(series.len()),
                )
            })
            .collect();
        Ok(Checked {
            disturbed,
            power,
            settings: d.settings(series.len()).describe(),
            series_checked: series.len(),
            too_short: series.iter().filter(|(_, recs)| recs.len() < 2 * d.min_segment).count(),
            canary: canary.map(|c| c.0.to_string()),
            fail: !failing.is_empty(),
            changes,
            confirmations,
            failing,
        })
    }
}

/// The series `recs` (oldest first) when its latest completed run was disturbed.
pub fn latest_disturbed(recs: &[&Stored]) -> Option<Undecided> {
    let last = recs
        .iter()
        .rev()
        .find(|r| r.record.status == "completed" && !r.record.labels.contains_key(super::detect::RERUN_LABEL))?;
    let load = last.record.machine?;
    let why = load.disturbed()?;
    Some(Undecided {
        series: last.record.series.id(),
        series_name: last.record.series.name(),
        run_id: last.id,
        started_at: last.record.started_at.clone(),
        dir: last.record.dir.display().to_string(),
        load,
        why,
        disturbed_runs: recs.iter().filter(|r| super::detect::disturbed(&r.record)).count(),
    })
}

/// The change of a series to confirm: its latest sure regression, else its latest sure change.
pub fn which(found: &[Found]) -> Option<&Found> {
    let sure = || found.iter().filter(|f| !f.weak);
    sure()
        .filter(|f| f.kind == Kind::Regression)
        .max_by_key(|f| f.run_id)
        .or_else(|| sure().max_by_key(|f| f.run_id))
}

/// Reruns to confirm `changes` of the series `recs` (those that rerun the same commands share
/// their runs), into `out` (default: a directory named for them under `confirm/` in caplab's
/// data directory `data`), saying each look on stderr; writes confirmation.json there (an
/// object for one change, else a list) and records each in the history's events.
pub fn confirm_and_record(
    data: &Path,
    at: &Location,
    recs: &[&Stored],
    changes: &[&Found],
    points: Points<'_>,
    (runs, settings): (usize, Settings),
    out: Option<&Path>,
) -> Result<Vec<Confirmation>> {
    let alpha = settings.alpha;
    let first = changes.first().context("no change to confirm")?;
    let figures: Vec<&str> = changes.iter().map(|c| c.figure.as_str()).collect();
    let out = out.map_or_else(
        || {
            let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
            data.join("confirm").join(format!(
                "{}-{}-{}",
                &first.series[..8],
                figures.join("+"),
                now.replace(':', "")
            ))
        },
        Path::to_path_buf,
    );
    let history = match at {
        Location::Sqlite(p) => p.display().to_string(),
        Location::Postgres(url) => url.clone(),
    };
    crate::console::say(&format!(
        "Confirming {} of {}: up to {runs} fresh run{} (rounds) into {}",
        changes
            .iter()
            .map(|c| format!(
                "{} {} ({:+.1} % from the run of {})",
                c.kind,
                c.figure,
                (c.ratio - 1.0) * 100.0,
                c.started_at
            ))
            .collect::<Vec<_>>()
            .join(", "),
        &first.series[..8],
        if runs == 1 { "" } else { "s" },
        out.display()
    ));
    let req = Request {
        series: recs,
        changes,
        points,
        runs,
        alpha,
        out: out.clone(),
        history,
        home: data.to_path_buf(),
        settings,
    };
    let exe = std::env::current_exe().context("cannot find caplab's own program to rerun")?;
    let done = confirm(&req, &exe, crate::console::say)?;
    let file = out.join("confirmation.json");
    match done.as_slice() {
        [one] => crate::files::write_json(&file, one)?,
        all => crate::files::write_json(&file, &all)?,
    }
    for c in &done {
        let event = Event {
            kind: EventKind::Confirmation,
            series: Some(c.series.clone()),
            figure: c.figure.clone(),
            change_at: Some(c.change.started_at.clone()),
            outcome: c.verdict.name().into(),
            summary: c.render().lines().next().unwrap_or_default().to_string(),
            dir: std::path::absolute(&out).unwrap_or(out.clone()).display().to_string(),
            recorded_at: Event::now(),
        };
        if let Err(e) = Store::open(at).and_then(|mut s| events::insert(&mut s, &event)) {
            eprintln!(
                "warning: the confirmation is not in the history ({e:#}); it is in {}",
                file.display()
            );
        }
    }
    Ok(done)
}
