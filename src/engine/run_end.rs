//! How a run ended: why, its measured span, and the measured totals.

use std::time::Duration;

use crate::metrics::OpStats;

#[derive(Debug, Clone, PartialEq)]
pub enum EndReason {
    /// The configured duration or operation count was reached.
    Completed,
    /// Stopped from outside (Ctrl-C).
    Interrupted,
    /// Nothing succeeded for `give_up_after`.
    ClusterLost { last_errors: String },
    /// Results could not be written.
    OutputFailed(String),
}

/// The part of a run that is measured, from the anchor: from the end of warm-up until the end
/// of the schedule (or the stop, or the last completion of a run without a schedule). Prose
/// calls it the measured window; code calls it a span, because a `window` is a service level's
/// judging window (`sla::Window`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub from: Duration,
    pub to: Duration,
}

impl Span {
    pub fn length(&self) -> Duration {
        self.to.saturating_sub(self.from)
    }
}

#[derive(Debug)]
pub struct RunEnd {
    pub reason: EndReason,
    /// The measured span only, per operation type.
    pub totals: Vec<OpStats>,
    /// None when nothing was measured (a stop during warm-up).
    pub measured: Option<Span>,
    /// Operations sent, warm-up included.
    pub started_ops: u64,
    /// Operations still in flight when the drain timed out: never completed, never recorded.
    pub abandoned: u64,
    /// How an automatic warm-up ended: Some(true) it settled, Some(false) it reached its
    /// maximum; None for other warm-ups, or one still going when the run ended.
    pub settled: Option<bool>,
    /// The operations file, as written (`--ops-parquet`).
    pub ops_file: Option<crate::metrics::ops::OpsFile>,
    /// The measured operations kept as slow (`metrics::slow`), and the client's own stalls.
    pub slow: crate::metrics::slow::Kept,
    /// The slow operations sent traced (`--trace-slow`), with their traces' ids.
    pub traced: crate::metrics::slow::Kept,
    pub stalls: Vec<super::canary::Stall>,
    /// The client's thread's waits for a CPU, tick by tick (`engine::canary`).
    pub waits: Vec<super::canary::Wait>,
}

impl RunEnd {
    /// Length of the measured span (zero when nothing was measured).
    pub fn measured_length(&self) -> Duration {
        self.measured.map(|s| s.length()).unwrap_or_default()
    }
}
