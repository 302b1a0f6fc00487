//! How a look for change points is made: the options every `caplab history` command takes
//! (`--figure`, `--alpha`, `--weak`, `--min-change`, `--min-segment`, `--include-unsteady`,
//! `--include-disturbed`, `--canary`), and the thresholds, points and canary they make.

use anyhow::{Context, Result};
use clap::Args;

use super::Stored;
use super::detect::{self, CHECKED, Found, Points};
use super::series::one_series;
use crate::stats::changes::Settings;

/// How change points are found.
#[derive(Debug, Clone, Args)]
pub struct DetectArgs {
    /// A figure to look for changes in (repeatable; default: throughput, p50_ms, p99_ms,
    /// service_p99_ms, server_cpu_us_per_op, gc_pause_ms, capacity; p999_ms only when asked, its
    /// runs cluster: docs/history.md).
    #[arg(long = "figure", value_name = "NAME", global = true, value_parser = clap::builder::PossibleValuesParser::new(crate::history::record::FIGURES))]
    pub figures: Vec<String>,
    /// The chance of any false change per look, over every series × figure it looks at (a
    /// check: the series checked × the figures; a series' listing: its figures; p99, p99.9,
    /// service p99 and max, tested jointly, count once).
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
    /// Runs whose machine was busy with other work are points too, and a series whose latest run
    /// was is judged all the same (by default they are left out of its levels, and `check` ends
    /// with status 3 naming the other load: a night that cannot be judged is not green). For a
    /// series that always runs beside other work, such as a test suite's.
    #[arg(long, global = true)]
    pub include_disturbed: bool,
    /// A canary series (id or prefix): a fixed configuration the job runs in every sitting.
    /// Each run's figures are divided by the canary's in the same sitting, so a slower host or
    /// a noisy night moves both and cancels; runs of sittings without the canary are left out,
    /// and the canary itself is not checked.
    #[arg(long, value_name = "SERIES", global = true)]
    pub canary: Option<String>,
}

impl DetectArgs {
    /// The thresholds for a look over `series` series (times the figures looked at).
    pub fn settings(&self, series: usize) -> Settings {
        Settings {
            alpha: self.alpha,
            family: series.max(1) * detect::family_members(&self.figures()),
            weak: self.weak,
            min_segment: self.min_segment,
            min_change: self.min_change,
            ..Settings::default()
        }
    }

    pub fn figures(&self) -> Vec<&str> {
        if self.figures.is_empty() {
            CHECKED.to_vec()
        } else {
            self.figures.iter().map(String::as_str).collect()
        }
    }

    /// The changes of one series in a look over `series` series, relative to `canary`'s
    /// records where there is one.
    pub fn changes(&self, recs: &[&Stored], series: usize, canary: Option<&[&Stored]>) -> Vec<Found> {
        detect::series_changes(recs, &self.figures(), self.points(canary), &self.settings(series))
    }

    pub fn points<'a>(&self, canary: Option<&'a [&'a Stored]>) -> Points<'a> {
        Points {
            include_unsteady: self.include_unsteady,
            include_disturbed: self.include_disturbed,
            canary,
        }
    }

    /// The canary's id and records, where `--canary` names one series.
    pub fn canary<'a>(&self, series: &'a [(String, Vec<&'a Stored>)]) -> Result<Option<(&'a str, &'a [&'a Stored])>> {
        let Some(prefix) = &self.canary else { return Ok(None) };
        let (id, recs) = one_series(series, prefix).context("--canary")?;
        Ok(Some((id.as_str(), recs.as_slice())))
    }
}

fn parse_segment(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        _ => Err(format!("'{s}' is not a number of runs of at least 2")),
    }
}
