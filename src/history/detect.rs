//! Change points in a series' figures over time (`stats::changes`), told as regressions or
//! improvements at the run where each begins, and read in context: server CPU per operation
//! that falls from the run where latency or throughput got worse is a server starved of CPU
//! (its threads spin less), not an improvement. Runs are grouped by their sitting
//! (`stats::sittings`): a series whose sittings hold several runs is searched between sittings
//! (each sitting one point) and within each long sitting. Only completed runs whose window was not judged
//! unsteady, and whose machine was not busy with other work, are points, unless asked otherwise:
//! a window that was still warming up is not the configuration's level (the same rule
//! comparisons follow), nor is one that shared its cores with other work.

use serde::Serialize;
use std::collections::BTreeMap;

use super::record::{FIGURES, Record};
use super::store::Stored;
use crate::stats::changes::Settings;
use crate::stats::joint::Joint;
use crate::stats::sittings::{Scope, changes_in_sittings};

/// The figures checked by default: the ones that carry a configuration's performance (errors
/// are mostly zero, and one run's maximum is one event, not a level). Not p99.9: measured runs
/// of one configuration on both machine kinds came in two clusters, alike to 1 % or 30–50 % off
/// (a window's p99.9 is one GC pause or not), which the search takes for levels: with it a check
/// failed falsely in 4.9 % of looks, without it 3.4 % (bench/results/nights.md, measured noise).
/// `--figure p999_ms` still checks it.
pub const CHECKED: [&str; 7] = [
    "throughput",
    "p50_ms",
    "p99_ms",
    "service_p99_ms",
    "server_cpu_us_per_op",
    "gc_pause_ms",
    "capacity",
];

/// Figures that move together (a run's GC pauses and its neighbours reach them all): a look
/// tests them jointly (`stats::joint`), by their largest t with their measured correlation, and
/// counts them once in its family, so a tail that doubled in all of them is one strong change.
pub const JOINT: [&str; 4] = ["p99_ms", "p999_ms", "service_p99_ms", "max_ms"];

/// The members of a look's family for `figures`: each figure alone, the joint ones once.
pub fn family_members(figures: &[&str]) -> usize {
    let joint = figures.iter().filter(|f| JOINT.contains(f)).count();
    figures.len() - joint.saturating_sub(1)
}

/// Figures a GC-paused run reaches (about 3 times its level, in about one run in ten): their
/// change points set such runs aside (`Settings::for_tails`) rather than pull them in.
pub fn gc_reaches(figure: &str) -> bool {
    matches!(
        figure,
        "p99_ms" | "p999_ms" | "max_ms" | "service_p99_ms" | "gc_pause_ms"
    )
}

/// The thresholds `s` as `figure`'s change points take them (tail figures robust to paused runs).
pub fn settings_for(s: &Settings, figure: &str) -> Settings {
    if gc_reaches(figure) { s.for_tails() } else { *s }
}

/// Whether more of a figure is better.
pub fn higher_is_better(figure: &str) -> bool {
    matches!(figure, "throughput" | "capacity")
}

/// One change found.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub series: String,
    pub series_name: String,
    pub figure: String,
    pub kind: Kind,
    /// Likely, not yet sure (passes only the per-figure weak threshold): never fails a check.
    pub weak: bool,
    /// The first run at the new level: its row id, start, labels and directory.
    pub run_id: i64,
    pub started_at: String,
    pub labels: BTreeMap<String, String>,
    pub dir: String,
    /// The levels each side, with their intervals at `level` (95 %).
    pub before: f64,
    pub before_interval: (f64, f64),
    pub before_runs: usize,
    pub after: f64,
    pub after_interval: (f64, f64),
    pub after_runs: usize,
    pub level: f64,
    /// Runs (or sittings) each side set aside as GC-paused: a tail figure's levels leave them out.
    #[serde(skip_serializing_if = "is_zero")]
    pub before_aside: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub after_aside: usize,
    /// after / before.
    pub ratio: f64,
    pub p: f64,
    /// The figures it was tested jointly with (`JOINT`), and their correlation as the test took
    /// it (rounded down).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tested_with: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<f64>,
    /// What the points were: runs (every sitting one run), sittings (a change between sittings,
    /// each sitting's runs one point) or the runs within a sitting.
    pub scope: Scope,
    /// Sittings each side (a change between sittings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sittings: Option<(usize, usize)>,
    /// How many of the scope's points come after its first (0: it begins at the latest run or
    /// sitting): what a check's "new" is counted in.
    pub since: usize,
    /// How many of the series' points come after its first (0: it begins at the latest run).
    pub runs_since: usize,
    /// The canary the values were divided by (its id's first 8 digits): levels are then ratios
    /// to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
}

/// Which way a change went, as the person reading the gate means it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Regression,
    Improvement,
    /// Less server CPU per operation from the run where latency or throughput got worse: the
    /// server had less CPU, not an improvement.
    Starved,
    /// The level moved with the machine's other load (`--include-disturbed`): the runs on one
    /// side were mostly disturbed, on the other not. Neither better nor worse, and never failing.
    Disturbed,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Regression => "regression",
            Kind::Improvement => "improvement",
            Kind::Starved => "starved",
            Kind::Disturbed => "disturbed",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Found {
    pub fn render(&self) -> String {
        let labels: Vec<String> = self.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let kind = match (self.weak, self.kind) {
            (true, k) => format!("weak {k} (likely, not yet sure)"),
            (false, Kind::Starved) => "STARVED (less CPU per operation while latency or throughput got worse: \
                                  the server had less CPU, not an improvement)"
                .to_string(),
            (false, Kind::Disturbed) => "MOVED WITH THE MACHINE'S OTHER LOAD (the runs on one side were disturbed, on \
                                    the other not: neither better nor worse)"
                .to_string(),
            (false, k) => k.name().to_uppercase(),
        };
        let over = |runs: usize, sittings: Option<usize>, aside: usize| {
            let set_aside = match aside {
                0 => String::new(),
                n => format!(", {n} GC-paused set aside"),
            };
            match sittings {
                Some(s) => format!("{s} sittings ({runs} runs{set_aside})"),
                None => format!("{runs} runs{set_aside}"),
            }
        };
        format!(
            "{} {}: {:+.1} % ({} [{}–{}] over {} → {} [{}–{}] over {}, levels at {:.0} %; p {:.1e} after the search{}{}) from the run of {}{}",
            kind,
            self.figure,
            (self.ratio - 1.0) * 100.0,
            figure_text(self.before),
            figure_text(self.before_interval.0),
            figure_text(self.before_interval.1),
            over(self.before_runs, self.sittings.map(|s| s.0), self.before_aside),
            figure_text(self.after),
            figure_text(self.after_interval.0),
            figure_text(self.after_interval.1),
            over(self.after_runs, self.sittings.map(|s| s.1), self.after_aside),
            self.level * 100.0,
            self.p,
            match (self.tested_with.is_empty(), self.correlation) {
                (false, Some(r)) => format!(
                    " and jointly with {} (correlation ≥ {r:.2})",
                    self.tested_with.join(", ")
                ),
                _ => String::new(),
            },
            match (&self.canary, self.scope == Scope::WithinSitting) {
                (Some(c), w) => format!(
                    ", relative to canary {c}{}",
                    if w { ", within its sitting" } else { "" }
                ),
                (None, true) => ", within its sitting".into(),
                (None, false) => String::new(),
            },
            self.started_at,
            if labels.is_empty() {
                String::new()
            } else {
                format!(" ({})", labels.join(" "))
            }
        )
    }
}

fn figure_text(v: f64) -> String {
    if v >= 100.0 {
        crate::console::group(v)
    } else {
        format!("{v:.3}")
    }
}

/// The figure in column `col` of `FIGURES`, where it can be a point (positive: changes are
/// ratios).
pub fn value(r: &Record, col: usize) -> Option<f64> {
    r.figures.values()[col].filter(|v| *v > 0.0 && v.is_finite())
}

/// The label a confirmation's reruns carry (`confirm=SERIES-FIGURE`, history::confirm); such
/// runs are not points of their series.
pub const RERUN_LABEL: &str = "confirm";

/// Which records are points of a series, and what their values are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Points<'a> {
    /// Windows judged not steady are points too.
    pub include_unsteady: bool,
    /// Runs whose machine was busy with other work are points too (`disturbed`).
    pub include_disturbed: bool,
    /// A canary series (`--canary`): a fixed configuration run in the same sittings, whose
    /// level in each sitting every value is divided by, so what moves a sitting's host moves
    /// both and cancels. Runs of sittings the canary did not run in are left out.
    pub canary: Option<&'a [&'a Stored]>,
}

impl Points<'_> {
    /// Completed runs whose window was not judged unsteady and whose machine was not busy with
    /// other work (unless asked), and not a confirmation's reruns (`confirm` label): those answer
    /// one question and are kept in the history, but a series' points are its own runs, however
    /// often a change was rerun.
    pub fn admits(&self, r: &Record) -> bool {
        r.status == "completed"
            && (self.include_unsteady || r.is_steady != Some(false))
            && (self.include_disturbed || !disturbed(r))
            && !r.labels.contains_key(RERUN_LABEL)
    }

    /// The points of `recs` for the figure in column `col`: each admitted record with a value
    /// (divided by the canary's level in its sitting, when there is a canary).
    pub fn of<'r>(&self, recs: &[&'r Stored], col: usize) -> Vec<(&'r Stored, f64)> {
        let plain = recs
            .iter()
            .filter(|r| self.admits(&r.record))
            .filter_map(|r| value(&r.record, col).map(|v| (*r, v)));
        let Some(canary) = self.canary else {
            return plain.collect();
        };
        // The canary's level per sitting: the exp of its runs' mean log.
        let mut logs: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
        for r in canary.iter().filter(|r| self.admits(&r.record)) {
            if let Some(v) = value(&r.record, col) {
                let e = logs.entry(r.record.sitting.as_str()).or_default();
                *e = (e.0 + v.ln(), e.1 + 1);
            }
        }
        plain
            .filter_map(|(r, v)| {
                let (sum, n) = logs.get(r.record.sitting.as_str())?;
                Some((r, v / (sum / *n as f64).exp()))
            })
            .collect()
    }
}

/// Whether a record's machine was busy with other work (`super::disturbed`).
pub fn disturbed(r: &Record) -> bool {
    r.machine.is_some_and(|m| m.disturbed().is_some())
}

/// The changes in one series' `figures` (its records oldest first), at the thresholds of `s`
/// (whose family the caller sets: the series × figures its look covers).
pub fn series_changes(recs: &[&Stored], figures: &[&str], points: Points<'_>, s: &Settings) -> Vec<Found> {
    let Some(first) = recs.first() else { return Vec::new() };
    let id = first.record.series.id();
    let name = first.record.series.name();
    let mut out = Vec::new();
    let group: Vec<&str> = figures.iter().copied().filter(|f| JOINT.contains(f)).collect();
    let joint = joint_of(recs, &group, points);
    for figure in figures {
        let Some(col) = FIGURES.iter().position(|f| f == figure) else {
            continue;
        };
        let pts = points.of(recs, col);
        let values: Vec<f64> = pts.iter().map(|(_, v)| *v).collect();
        let sitting = sitting_ids(pts.iter().map(|(r, _)| r.record.sitting.as_str()));
        let jointly = group.contains(figure) && joint.figures > 1;
        let s = Settings {
            joint: if jointly { joint } else { Joint::default() },
            ..settings_for(s, figure)
        };
        for sc in changes_in_sittings(&values, &sitting, &s) {
            let c = sc.change;
            let (run, _) = pts[c.at];
            let better = (c.ratio > 1.0) == higher_is_better(figure);
            let share = |from: usize, to: usize| {
                let side = &pts[from.min(to)..to];
                side.iter().filter(|(r, _)| disturbed(&r.record)).count() as f64 / side.len().max(1) as f64
            };
            let (before, after) = (
                share(c.at.saturating_sub(sc.runs_before), c.at),
                share(c.at, (c.at + sc.runs_after).min(pts.len())),
            );
            let kind = match better {
                _ if (before >= 0.5) != (after >= 0.5) => Kind::Disturbed,
                true => Kind::Improvement,
                false => Kind::Regression,
            };
            out.push(Found {
                series: id.clone(),
                series_name: name.clone(),
                figure: figure.to_string(),
                kind,
                weak: c.weak,
                run_id: run.id,
                started_at: run.record.started_at.clone(),
                labels: run.record.labels.clone(),
                dir: run.record.dir.display().to_string(),
                before: c.before.value,
                before_interval: (c.before.low, c.before.high),
                before_runs: sc.runs_before,
                after: c.after.value,
                after_interval: (c.after.low, c.after.high),
                after_runs: sc.runs_after,
                level: crate::stats::changes::LEVEL_CONFIDENCE,
                before_aside: c.before.aside,
                after_aside: c.after.aside,
                ratio: c.ratio,
                p: c.p,
                tested_with: match jointly {
                    true => group.iter().filter(|g| *g != figure).map(|g| g.to_string()).collect(),
                    false => Vec::new(),
                },
                correlation: jointly.then(|| joint.rho()),
                scope: sc.scope,
                sittings: (sc.scope == Scope::Sittings).then_some((c.before.n, c.after.n)),
                since: sc.since,
                runs_since: values.len() - 1 - c.at,
                canary: points
                    .canary
                    .and_then(|c| c.first())
                    .map(|c| c.record.series.id()[..8].to_string()),
            });
        }
    }
    in_context(&mut out, recs);
    out
}

/// How the figures of `group` are tested: jointly at their correlation on the runs where every
/// one has a point (none with fewer than two of them).
fn joint_of(recs: &[&Stored], group: &[&str], points: Points<'_>) -> Joint {
    if group.len() < 2 {
        return Joint::default();
    }
    let each: Vec<BTreeMap<i64, f64>> = group
        .iter()
        .filter_map(|f| FIGURES.iter().position(|x| x == f))
        .map(|col| points.of(recs, col).into_iter().map(|(r, v)| (r.id, v.ln())).collect())
        .collect();
    let common: Vec<i64> = each[0]
        .keys()
        .copied()
        .filter(|id| each.iter().all(|m| m.contains_key(id)))
        .collect();
    let logs: Vec<Vec<f64>> = each.iter().map(|m| common.iter().map(|id| m[id]).collect()).collect();
    let refs: Vec<&[f64]> = logs.iter().map(Vec::as_slice).collect();
    Joint::of(group.len(), crate::stats::joint::correlation(&refs))
}

/// A number per distinct sitting, in order of first appearance.
fn sitting_ids<'a>(sittings: impl Iterator<Item = &'a str>) -> Vec<usize> {
    let mut seen: Vec<&str> = Vec::new();
    sittings
        .map(|s| match seen.iter().position(|x| *x == s) {
            Some(i) => i,
            None => {
                seen.push(s);
                seen.len() - 1
            }
        })
        .collect()
}

/// Figures whose getting worse starves a server of CPU rather than costing it more.
const WORSE_WHEN_STARVED: [&str; 5] = ["throughput", "p50_ms", "p99_ms", "p999_ms", "service_p99_ms"];

/// Server CPU per operation that "improves" from the run (or the one beside it) where a sure
/// latency or throughput regression begins is named `starved`.
fn in_context(found: &mut [Found], recs: &[&Stored]) {
    let position = |run: i64| recs.iter().position(|r| r.id == run);
    let worse: Vec<usize> = found
        .iter()
        .filter(|f| !f.weak && f.kind == Kind::Regression && WORSE_WHEN_STARVED.contains(&f.figure.as_str()))
        .filter_map(|f| position(f.run_id))
        .collect();
    for f in found.iter_mut() {
        if f.figure == "server_cpu_us_per_op"
            && f.kind == Kind::Improvement
            && let Some(at) = position(f.run_id)
            && worse.iter().any(|w| w.abs_diff(at) <= 1)
        {
            f.kind = Kind::Starved;
        }
    }
}

/// For serde's `skip_serializing_if`.
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}
