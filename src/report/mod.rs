//! The HTML report: one self-contained page (report.html) per run, capacity search and
//! experiment, built only from the files those commands write (result.json, latency.hlog,
//! capacity.json, experiment.json), so `caplab report DIR` rebuilds it at any time.
//!
//! Rust computes every number on the page (tables, per-second series, percentile curves, bar
//! geometry) and renders the HTML with minijinja templates; the page's own script only draws
//! the interactive charts with uPlot, embedded in the binary, so the page opens offline and
//! makes no network request (its Content-Security-Policy forbids any).

mod capacity;
mod experiment;
mod html;
mod run;
mod series;

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// The file name of a results directory's page.
pub const REPORT_FILE: &str = "report.html";

/// What a results directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    Capacity,
    Experiment,
}

/// The kind of results in `dir`, from the files in it.
pub fn kind(dir: &Path) -> Result<Kind> {
    if dir.join("experiment.json").is_file() {
        Ok(Kind::Experiment)
    } else if dir.join("capacity.json").is_file() {
        Ok(Kind::Capacity)
    } else if dir.join("result.json").is_file() {
        Ok(Kind::Run)
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
    let page = match kind(dir)? {
        Kind::Run => run::page(&[dir.to_path_buf()])?,
        Kind::Capacity => {
            for step in capacity::step_dirs(dir)? {
                write_step(&step);
            }
            capacity::page(dir)?
        }
        Kind::Experiment => {
            for step in experiment::step_dirs(dir)? {
                write_step(&step);
            }
            experiment::page(dir)?
        }
    };
    let path = dir.join(REPORT_FILE);
    write_file(&path, &page)?;
    Ok(path)
}

/// One page overlaying several run directories, written to `out`.
pub fn overlay(dirs: &[PathBuf], out: &Path) -> Result<PathBuf> {
    for dir in dirs {
        if kind(dir)? != Kind::Run {
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

fn write_file(path: &Path, page: &str) -> Result<()> {
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, page)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("cannot write {}: {e}", path.display())
        })
}
