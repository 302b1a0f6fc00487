//! The HTML report: one self-contained page (report.html) per run, capacity search and
//! experiment, built only from the files those commands write (result.json, latency.hlog,
//! capacity.json, experiment.json), so `caplab report DIR` rebuilds it at any time.
//!
//! Rust computes every number on the page (tables, per-second series, percentile curves, bar
//! geometry) and renders the HTML with minijinja templates; the page's own script only draws
//! the interactive charts with uPlot, embedded in the binary, so the page opens offline and
//! makes no network request (its Content-Security-Policy forbids any).

mod answers;
pub mod bisect;
mod capacity;
mod experiment;
pub mod history;
mod html;
mod run;
mod series;

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

use crate::capacity::CapacityResult;
use crate::experiment::record::{EXPERIMENT_FILE, ExperimentRecord};
use crate::measure::result::{CAPACITY_FILE, RESULT_FILE};

/// The file name of a results directory's page.
pub const REPORT_FILE: &str = "report.html";

/// What a results directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsKind {
    Run,
    Capacity,
    Experiment,
}

/// The kind of results in `dir`, from the files in it.
pub fn kind(dir: &Path) -> Result<ResultsKind> {
    if dir.join(EXPERIMENT_FILE).is_file() {
        Ok(ResultsKind::Experiment)
    } else if dir.join(CAPACITY_FILE).is_file() {
        Ok(ResultsKind::Capacity)
    } else if dir.join(RESULT_FILE).is_file() {
        Ok(ResultsKind::Run)
    } else {
        bail!(
            "{} holds no caplab results (result.json, capacity.json or experiment.json): give a \
             directory that 'caplab run', 'capacity' or 'experiment' wrote",
            dir.display()
        )
    }
}

/// Writes `dir/report.html` for the results in `dir` (and, for a capacity search or an
/// experiment, the page of each of its steps first, so the links work); returns its path.
pub fn write(dir: &Path) -> Result<PathBuf> {
    write_with(dir, None)
}

/// `write`, an experiment's page drawing `comparison` instead of the one its record holds
/// (`caplab report` draws the comparison as this caplab makes it from the record).
pub fn write_with(dir: &Path, comparison: Option<Vec<crate::experiment::compare::Comparison>>) -> Result<PathBuf> {
    let page = match kind(dir)? {
        ResultsKind::Run => run::page(&[dir.to_path_buf()])?,
        ResultsKind::Capacity => {
            let report = CapacityResult::load(dir)?;
            for step in capacity::step_dirs(dir, &report) {
                write_step(&step);
            }
            capacity::page(dir, &report)?
        }
        ResultsKind::Experiment => {
            let mut record = ExperimentRecord::load(dir)?;
            if let Some(c) = comparison {
                record.comparison = c;
            }
            for step in experiment::step_dirs(dir, &record) {
                write_step(&step);
            }
            experiment::page(dir, &record)?
        }
    };
    let path = dir.join(REPORT_FILE);
    write_file(&path, &page)?;
    Ok(path)
}

/// One page overlaying several run directories, written to `out`.
pub fn overlay(dirs: &[PathBuf], out: &Path) -> Result<PathBuf> {
    for dir in dirs {
        if kind(dir)? != ResultsKind::Run {
            bail!(
                "{} is not a run's results directory: only runs can be overlaid (a capacity \
                 search or experiment has its own page: caplab report {0})",
                dir.display()
            );
        }
    }
    write_file(out, &run::page(dirs)?)?;
    Ok(out.to_path_buf())
}

/// A step's page, best effort: a step whose files cannot be read (an interrupted step) is
/// listed on the parent page without a page of its own, and said so here.
fn write_step(dir: &Path) {
    if let Err(e) = write(dir) {
        crate::console::say(&format!("  (no report page for {}: {e:#})", dir.display()));
    }
}

/// A link from a page in `dir` to the page of the results in `step` (None: it has none).
fn link(dir: &Path, step: &Path) -> Option<String> {
    if !step.join(REPORT_FILE).is_file() {
        return None;
    }
    let base = dir.canonicalize().ok()?;
    let target = step.canonicalize().ok()?;
    Some(match target.strip_prefix(&base) {
        Ok(rel) => format!("{}/{REPORT_FILE}", rel.display()),
        Err(_) => format!("file://{}/{REPORT_FILE}", target.display()),
    })
}

fn write_file(path: &Path, page: &str) -> Result<()> {
    crate::files::write_atomic(path, page.as_bytes())
}
