//! What one repeat of a variant left on disk, read for comparing: a run's result with its
//! per-second series and merged response histogram, or a capacity search's report.

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::Path;

use crate::measure::{CapacityReport, RunResult};
use crate::metrics::hdrlog::{self, TagKind};

/// A run's per-second values over its measured window.
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub throughput: Vec<f64>,
    pub p50: Vec<f64>,
    pub p99: Vec<f64>,
    pub server_cpu: Vec<f64>,
    pub gc_pause_ms: Vec<f64>,
}

/// What one repeat of a variant measured.
#[derive(Debug, Clone)]
pub enum Observation {
    Run {
        /// Its results directory, as given.
        dir: String,
        result: Box<RunResult>,
        series: Series,
        /// Every operation type's response times, merged.
        response: Box<Histogram<u64>>,
    },
    Capacity(Box<CapacityReport>),
}

impl Observation {
    /// Reads a step's results directory (a run's or a capacity search's). A run whose interval
    /// log cannot be read is an error naming the file: a comparison without its per-second
    /// series would test one repeat on nothing.
    pub fn load(dir: &Path) -> Result<Observation> {
        if dir.join(crate::measure::result::CAPACITY_FILE).exists() {
            return Ok(Observation::Capacity(Box::new(CapacityReport::load(dir)?)));
        }
        let result = RunResult::load(dir)?;
        let response = result.response_histogram();
        let series =
            series(dir, &result).with_context(|| format!("cannot read the per-second series of {}", dir.display()))?;
        Ok(Observation::Run {
            dir: dir.display().to_string(),
            result: Box::new(result),
            series,
            response: Box::new(response),
        })
    }

    /// The run's result (None for a capacity search).
    pub fn result(&self) -> Option<&RunResult> {
        match self {
            Observation::Run { result, .. } => Some(result),
            Observation::Capacity(_) => None,
        }
    }

    /// Whether a run is known not to have been steady (capacity searches are compared whole).
    pub fn unsteady(&self) -> bool {
        self.result().is_some_and(RunResult::unsteady)
    }
}

/// The measured window's per-second throughput and percentiles (from the interval log) and
/// server CPU and GC pause time (from the server's timeline). Seconds shorter than half a
/// second (a partial last one) are left out.
fn series(dir: &Path, r: &RunResult) -> Result<Series> {
    let mut s = Series::default();
    // Per interval: the untagged histogram, then its tags; an interval is known by its start.
    let mut ok_at: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    hdrlog::each(&dir.join(&r.files.hdr_log), |l| {
        let key = l.start.as_millis() as u64;
        let secs = l.length.as_secs_f64();
        if secs < 0.5 {
            return Ok(());
        }
        match l.tag.as_deref() {
            None => {
                s.p50.push(l.histogram.value_at_quantile(0.5) as f64 / 1e6);
                s.p99.push(l.histogram.value_at_quantile(0.99) as f64 / 1e6);
            }
            Some(t) if TagKind::Ok.is(t) => {
                ok_at.entry(key).or_insert((0.0, secs)).0 += l.histogram.len() as f64;
            }
            _ => {}
        }
        Ok(())
    })?;
    s.throughput = ok_at.values().map(|(n, secs)| n / secs).collect();
    if let Some(server) = &r.server {
        for sec in server.timeline.iter().filter(|s| s.measured && s.length_s >= 0.5) {
            s.server_cpu.push(sec.server_cpu_cores);
            s.gc_pause_ms.push(sec.gc_pause_ms);
        }
    }
    Ok(s)
}
