//! What a run asks of the engine: its rate, concurrency, length, warm-up and interval.

use super::shape::Shape;
use std::sync::Arc;
use std::time::Duration;

/// What is excluded from the results at the start of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warmup {
    None,
    Time(Duration),
    Ops(u64),
    /// Until the interval sink says the run has settled (`IntervalSink::settled`), or `max`
    /// (rounded up to whole intervals), whichever comes first. Warm-up ends at an interval
    /// boundary after the one the sink judged.
    Auto {
        max: Duration,
    },
}

impl Warmup {
    /// As results record it: `auto (max 5m)`, `30s`, `10000 ops`, `none`.
    pub fn describe(&self) -> String {
        match self {
            Warmup::None => "none".into(),
            Warmup::Time(d) => humantime::format_duration(*d).to_string(),
            Warmup::Ops(n) => format!("{n} ops"),
            Warmup::Auto { max } => format!("auto (max {})", humantime::format_duration(*max)),
        }
    }

    /// An automatic warm-up's maximum (None for any other warm-up): the one place it is read.
    pub fn auto_max(&self) -> Option<Duration> {
        match self {
            Warmup::Auto { max } => Some(*max),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Operations per second; 0 runs flat out. With a shape, its mean rate (for what is shown).
    pub rate: f64,
    /// A rate that moves through the run (`--rate ramp:…`), started after a fixed warm-up at
    /// its first rate; None for a constant rate.
    pub shape: Option<Arc<Shape>>,
    /// Operations in flight at most (one worker task each).
    pub concurrency: usize,
    /// Length of the measured window (after warm-up).
    pub duration: Option<Duration>,
    /// Measured operations (after warm-up).
    pub ops: Option<u64>,
    pub warmup: Warmup,
    pub interval: Duration,
    /// End the run when no operation has succeeded, and some failed, for this long.
    pub give_up_after: Duration,
    /// After the end or a stop, how long in-flight operations may take to finish.
    pub drain_timeout: Duration,
    pub shards: usize,
}
