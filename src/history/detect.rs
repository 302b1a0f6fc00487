//! Change points in a series' figures over time (`stats::changes`), told as regressions or
//! improvements at the run where each begins, and read in context: server CPU per operation
//! that falls from the run where latency or throughput got worse is a server starved of CPU
//! (its threads spin less), not an improvement. Only completed runs whose window was not judged
//! unsteady are points, unless asked otherwise: a window that was still warming up is not the
//! configuration's level (the same rule comparisons follow).

use serde::Serialize;
use std::collections::BTreeMap;

use super::record::{FIGURES, Record};
use super::store::Stored;
use crate::stats::changes::{Settings, changes};

/// The figures checked by default: the ones that carry a configuration's performance (errors
/// are mostly zero, and one run's maximum is one event, not a level).
pub const CHECKED: [&str; 8] = [
    "throughput",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "service_p99_ms",
    "server_cpu_us_per_op",
    "gc_pause_ms",
    "capacity",
];

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
    /// `regression`, `improvement`, or `starved` (less server CPU per operation from the run
    /// where latency or throughput got worse).
    pub kind: &'static str,
    /// Likely, not yet sure (passes only the per-figure weak threshold): never fails a check.
    pub weak: bool,
    /// The first run at the new level: its row id, start, labels and directory.
    pub run_id: i64,
    pub started_at: String,
    pub labels: BTreeMap<String, String>,
    pub dir: String,
    pub before: f64,
    pub before_interval: (f64, f64),
    pub before_runs: usize,
    pub after: f64,
    pub after_interval: (f64, f64),
    pub after_runs: usize,
    /// after / before.
    pub ratio: f64,
    pub p: f64,
    /// How many of the series' points come after its first (0: it begins at the latest run).
    pub runs_since: usize,
}

impl Found {
    pub fn render(&self) -> String {
        let labels: Vec<String> = self.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let kind = match (self.weak, self.kind) {
            (true, k) => format!("weak {k} (likely, not yet sure)"),
            (false, "starved") => "STARVED (less CPU per operation while latency or throughput got worse: \
                                  the server had less CPU, not an improvement)"
                .to_string(),
            (false, k) => k.to_uppercase(),
        };
        format!(
            "{} {}: {:+.1} % ({} [{}–{}] over {} runs → {} [{}–{}] over {}; p {:.1e} after the search) from the run of {}{}",
            kind,
            self.figure,
            (self.ratio - 1.0) * 100.0,
            figure_text(self.before),
            figure_text(self.before_interval.0),
            figure_text(self.before_interval.1),
            self.before_runs,
            figure_text(self.after),
            figure_text(self.after_interval.0),
            figure_text(self.after_interval.1),
            self.after_runs,
            self.p,
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

/// Which records are points of a series.
#[derive(Debug, Clone, Copy)]
pub struct Points {
    /// Windows judged not steady are points too.
    pub include_unsteady: bool,
}

impl Points {
    pub fn admits(&self, r: &Record) -> bool {
        r.status == "completed" && (self.include_unsteady || r.is_steady != Some(false))
    }
}

/// The changes in one series' `figures` (its records oldest first), at the thresholds of `s`
/// (whose family the caller sets: the series × figures its look covers).
pub fn series_changes(recs: &[&Stored], figures: &[&str], points: Points, s: &Settings) -> Vec<Found> {
    let Some(first) = recs.first() else { return Vec::new() };
    let id = first.record.series.id();
    let name = first.record.series.name();
    let mut out = Vec::new();
    for figure in figures {
        let Some(col) = FIGURES.iter().position(|f| f == figure) else {
            continue;
        };
        let pts: Vec<(&Stored, f64)> = recs
            .iter()
            .filter(|r| points.admits(&r.record))
            .filter_map(|r| value(&r.record, col).map(|v| (*r, v)))
            .collect();
        let values: Vec<f64> = pts.iter().map(|(_, v)| *v).collect();
        for c in changes(&values, s) {
            let (run, _) = pts[c.at];
            let better = (c.ratio > 1.0) == higher_is_better(figure);
            out.push(Found {
                series: id.clone(),
                series_name: name.clone(),
                figure: figure.to_string(),
                kind: if better { "improvement" } else { "regression" },
                weak: c.weak,
                run_id: run.id,
                started_at: run.record.started_at.clone(),
                labels: run.record.labels.clone(),
                dir: run.record.dir.display().to_string(),
                before: c.before.value,
                before_interval: (c.before.low, c.before.high),
                before_runs: c.before.n,
                after: c.after.value,
                after_interval: (c.after.low, c.after.high),
                after_runs: c.after.n,
                ratio: c.ratio,
                p: c.p,
                runs_since: values.len() - 1 - c.at,
            });
        }
    }
    in_context(&mut out, recs);
    out
}

/// Figures whose getting worse starves a server of CPU rather than costing it more.
const WORSE_WHEN_STARVED: [&str; 5] = ["throughput", "p50_ms", "p99_ms", "p999_ms", "service_p99_ms"];

/// Server CPU per operation that "improves" from the run (or the one beside it) where a sure
/// latency or throughput regression begins is named `starved`.
fn in_context(found: &mut [Found], recs: &[&Stored]) {
    let position = |run: i64| recs.iter().position(|r| r.id == run);
    let worse: Vec<usize> = found
        .iter()
        .filter(|f| !f.weak && f.kind == "regression" && WORSE_WHEN_STARVED.contains(&f.figure.as_str()))
        .filter_map(|f| position(f.run_id))
        .collect();
    for f in found.iter_mut() {
        if f.figure == "server_cpu_us_per_op"
            && f.kind == "improvement"
            && let Some(at) = position(f.run_id)
            && worse.iter().any(|w| w.abs_diff(at) <= 1)
        {
            f.kind = "starved";
        }
    }
}
