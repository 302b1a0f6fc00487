//! Merging loaders' results (`caplab merge`): several `caplab run --loader i/n` processes, on
//! one machine or many, each wrote a results directory; this writes one that holds them all,
//! which `report`, `compare` and experiments read like any run's.
//!
//! Merging is exact: the interval logs' histograms are added interval by interval on their
//! wall-clock start times (every loader's intervals are whole wall-clock seconds), and the
//! summary's percentiles come from the loaders' whole-window histograms added together, never
//! from averaged percentiles. Counts (operations, rows, errors by kind) are summed; rates are
//! summed, each loader's over its own window. Seconds in which only some loaders reported are
//! in the merged figures and named in result.json's `merged.partial`. Loaders that ran
//! different workloads or schemas, whose intervals do not share a grid, or that ran the same
//! slice, are refused before anything is written.
//!
//! The loaders' operations files (`--ops-parquet`) are kept side by side as one Parquet dataset
//! (`operations.rs`).
//!
//! Not merged: the service-level verdict (judge the merged run with `compare`, or read each
//! loader's) and server profiles. The server's facts are the first loader's (every loader
//! watched the same cluster).

use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::measure::result::RunResult;

mod loader;
mod logs;
mod merged;
mod operations;
mod refusals;

use loader::Loader;
use logs::{measured_span, partial, write_logs};
use merged::merged_result;
use refusals::{check, check_grid};

/// Merges the loaders' results in `dirs` into `out` (created; caplab's result files in it are
/// replaced only with `force`), and returns the merged result.
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    force: bool,
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<RunResult> {
    if dirs.len() < 2 {
        bail!("merge needs the results directories of at least two loaders (caplab run --loader i/n)");
    }
    let mut loaders = dirs.iter().map(|d| Loader::read(d)).collect::<Result<Vec<_>>>()?;
    loaders.sort_by_key(|l| l.slice);
    check(&loaders)?;
    let interval_ms = (loaders[0].result.config.engine.interval_s * 1000.0).round() as i64;
    check_grid(
        &loaders.iter().map(|l| (l.name(), l.base_ms)).collect::<Vec<_>>(),
        interval_ms,
    )?;

    crate::measure::out::claim(out, force)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let base_ms = loaders.iter().map(|l| l.base_ms).min().expect("two loaders");
    let entries = loaders.iter().map(|l| l.entries()).collect::<Result<Vec<_>>>()?;
    let mut merged = merged_result(&loaders, dirs, base_ms)?;
    merged.labels.extend(labels.clone());
    merged.files.operations = operations::gather(&loaders, out)?;
    let span = measured_span(&loaders, base_ms);
    let seconds = write_logs(&loaders, &entries, out, base_ms, span)?;
    let reported: Vec<(String, &BTreeSet<i64>)> = loaders.iter().map(|l| (l.slice.to_string(), &l.seconds)).collect();
    merged.merged.as_mut().expect("set").partial = partial(&reported, base_ms, interval_ms);
    if let Some((from, _)) = span {
        let mut verdict = crate::steady::judge(&seconds, crate::steady::Load::of(merged.config.engine.rate));
        if merged.warmup.as_ref().is_some_and(|w| w.settled == Some(false)) {
            verdict.steady = false;
            verdict
                .summary
                .push_str("; a loader's warm-up did not settle within its maximum");
        }
        merged.steady_state = Some(verdict);
        if let Some(w) = &mut merged.warmup {
            w.length_s = Some(from);
        }
    }
    merged.save(out)?;
    Ok(merged)
}
