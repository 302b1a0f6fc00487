//! What a check could find in each series it looked at (`history check` states it): each
//! figure's spread between runs, read from the series' own points, and the chance that a change
//! a user would want caught (`watched`) is a sure change by its fifth run after, at the check's
//! own thresholds (`stats::power`). A series that spreads 34 % run to run is told how little a
//! doubled p99 shows in it; docs/history.md says how to lower the spread.

use serde::Serialize;

use super::Stored;
use super::detect::{JOINT, Points, settings_for};
use super::record::FIGURES;
use crate::stats::changes::Settings;

/// The run after a change by which the power is stated.
pub const BY_RUN: usize = 5;

/// Simulated series per statement (its Monte Carlo error is about 3.5 points at 50 %).
pub const SIMS: usize = 200;

/// The change of `figure` a check should catch: a doubled tail, a quarter on the median, 10 %
/// less throughput or capacity, 10 % more CPU per operation (None: not stated, as for errors).
pub fn watched(figure: &str) -> Option<f64> {
    match figure {
        f if JOINT.contains(&f) || f == "gc_pause_ms" => Some(2.0),
        "p50_ms" => Some(1.25),
        "throughput" | "capacity" => Some(0.9),
        "server_cpu_us_per_op" => Some(1.1),
        _ => None,
    }
}

/// One series × figure.
#[derive(Debug, Clone, Serialize)]
pub struct Power {
    pub series: String,
    pub figure: String,
    /// The spread between runs (an SD of logs: 0.34 is about 34 %) and the points it is read from.
    pub spread: f64,
    pub runs: usize,
    /// The change watched for (a ratio), the run after it by which it is found, and how often.
    pub change: f64,
    pub by_run: usize,
    pub found: f64,
}

impl Power {
    /// `p99_ms: spreads 34 % run to run (SD of logs, 12 runs); ×2 found by the 5th run after
    /// it in about 54 %`.
    pub fn text(&self) -> String {
        format!(
            "{}: spreads {:.0} % run to run (SD of logs, {} runs); ×{} found by the {}th run after it in about {:.0} %",
            self.figure,
            self.spread * 100.0,
            self.runs,
            self.change,
            self.by_run,
            self.found * 100.0
        )
    }
}

/// The power of a look with thresholds `s` at each of `figures` of one series (`recs`, oldest
/// first), from its admitted points: each figure simulated alone at the look's threshold (a
/// figure tested jointly as if its group moved as one, which a doubled tail does).
pub fn of_series(recs: &[&Stored], figures: &[&str], points: Points<'_>, s: &Settings) -> Vec<Power> {
    let Some(first) = recs.first() else { return Vec::new() };
    let series = first.record.series.id();
    figures
        .iter()
        .filter_map(|figure| {
            let change = watched(figure)?;
            let col = FIGURES.iter().position(|f| f == figure)?;
            let logs: Vec<f64> = points.of(recs, col).iter().map(|(_, v)| v.ln()).collect();
            let spread = crate::stats::power::spread(&logs)?;
            let s = settings_for(s, figure);
            Some(Power {
                series: series.clone(),
                figure: figure.to_string(),
                spread,
                runs: logs.len(),
                change,
                by_run: BY_RUN,
                found: crate::stats::power::found_by(logs.len(), spread, change, BY_RUN, &s, SIMS),
            })
        })
        .collect()
}
