//! What one repeat of a variant left on disk, read for comparing: a run's result with its
//! per-second series and merged response histogram, or a capacity search's report.

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use std::path::Path;

use crate::capacity::CapacityResult;
use crate::measure::RunResult;

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
    Capacity(Box<CapacityResult>),
}

impl Observation {
    /// Reads a step's results directory (a run's or a capacity search's). A run whose interval
    /// log cannot be read is an error naming the file: a comparison without its per-second
    /// series would test one repeat on nothing.
    pub fn load(dir: &Path) -> Result<Observation> {
        if dir.join(crate::measure::result::CAPACITY_FILE).exists() {
            return Ok(Observation::Capacity(Box::new(CapacityResult::load(dir)?)));
        }
        let mut result = RunResult::load(dir)?;
        let response = result.response_histogram();
        let seconds = result
            .seconds(dir)
            .with_context(|| format!("cannot read the per-second series of {}", dir.display()))?;
        if result.steady_state.is_none() {
            // Written before verdicts existed: judged now, from its seconds, never assumed steady.
            let mut verdict = crate::steady::judge(&seconds, crate::steady::Load::of(result.config.engine.rate));
            verdict.summary = format!("{} (judged when compared: the result had no verdict)", verdict.summary);
            result.steady_state = Some(verdict);
        }
        let series = series(&seconds, &result);
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

/// The measured window's per-second throughput and percentiles (its `seconds`, as the
/// steady-state verdict reads them) and server CPU and GC pause time (from the server's
/// timeline).
fn series(seconds: &[crate::steady::SecondFigures], r: &RunResult) -> Series {
    let mut s = Series::default();
    for sec in seconds {
        s.throughput.push(sec.ops_per_s);
        if let (Some(p50), Some(p99)) = (sec.p50_ms, sec.p99_ms) {
            s.p50.push(p50);
            s.p99.push(p99);
        }
    }
    if let Some(server) = &r.server {
        for sec in server.timeline.iter().filter(|s| s.measured && s.length_s >= 0.5) {
            s.server_cpu.push(sec.server_cpu_cores);
            s.gc_pause_ms.push(sec.gc_pause_ms);
        }
    }
    s
}
