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
    /// Where every operation is written as a row (`--ops-parquet`), if anywhere.
    pub ops_file: Option<crate::metrics::ops::OpsTarget>,
}

impl EngineConfig {
    /// The shape the schedule follows: a fixed warm-up runs at its first rate before it.
    pub fn schedule_shape(&self) -> Option<Arc<Shape>> {
        let shape = self.shape.as_ref()?;
        Some(match self.warmup {
            Warmup::Time(d) => Arc::new(shape.after(d)),
            _ => shape.clone(),
        })
    }

    /// What the schedule asks, to be written beside what was done.
    pub fn asked(&self) -> Asked {
        match self.schedule_shape() {
            Some(shape) => Asked::Shape(shape),
            None if self.rate > 0.0 => Asked::Rate(self.rate),
            None => Asked::FlatOut,
        }
    }
}

/// The rate a run's schedule asks.
#[derive(Debug, Clone)]
pub enum Asked {
    FlatOut,
    Rate(f64),
    Shape(Arc<Shape>),
}

impl Asked {
    /// Operations a second asked over `length` from `start` (after the schedule's start); None
    /// flat out.
    pub fn over(&self, start: Duration, length: Duration) -> Option<f64> {
        match self {
            Asked::FlatOut => None,
            Asked::Rate(r) => Some(*r),
            Asked::Shape(s) if length.is_zero() => Some(s.rate_at(start.as_secs_f64())),
            Asked::Shape(s) => {
                let (from, to) = (start.as_secs_f64(), (start + length).as_secs_f64());
                Some((s.ops_before(to) - s.ops_before(from)) / (to - from))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_asked_follows_the_shape_after_its_warm_up() {
        let cfg = |warmup, shape: Option<&str>| EngineConfig {
            rate: 1000.0,
            shape: shape.map(|s| Arc::new(Shape::parse(s).unwrap())),
            concurrency: 8,
            duration: None,
            ops: None,
            warmup,
            interval: Duration::from_secs(1),
            give_up_after: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(2),
            shards: 1,
            ops_file: None,
        };
        let s = Duration::from_secs;
        let steps = cfg(Warmup::Time(s(2)), Some("steps:1k,3k/5s"));
        // The warm-up at the first rate, then the steps, then the last rate held.
        let asked: Vec<Option<f64>> = [0, 1, 2, 6, 7, 11, 20]
            .iter()
            .map(|&t| steps.asked().over(s(t), s(1)))
            .collect();
        assert_eq!(
            asked,
            [1000.0, 1000.0, 1000.0, 1000.0, 3000.0, 3000.0, 3000.0].map(Some)
        );
        assert_eq!(cfg(Warmup::None, None).asked().over(s(5), s(1)), Some(1000.0));
        let flat = EngineConfig {
            rate: 0.0,
            ..cfg(Warmup::None, None)
        };
        assert_eq!(flat.asked().over(s(5), s(1)), None);
        // Half a second of each step: the mean.
        let edge = steps.asked().over(Duration::from_millis(6500), s(1));
        assert_eq!(edge, Some(2000.0));
    }
}
