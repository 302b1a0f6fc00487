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
    /// Which measured operations are sent with the server's tracing on (`--trace-slow`).
    pub trace: Option<TraceSample>,
}

/// The operations sent traced (`--trace-slow RATE[,THRESHOLD]`): a fixed fraction of them,
/// chosen by a hash of the operation's number, so that which are traced has nothing to do with
/// their type, time or worker; and the response time over which a traced operation keeps its
/// trace (None: its type's p99 over the measured window, known when the window ends).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSample {
    pub fraction: f64,
    pub threshold: Option<Duration>,
    /// Operation `i` is traced when its hash is under this.
    cut: u64,
}

impl TraceSample {
    pub fn new(fraction: f64, threshold: Option<Duration>) -> TraceSample {
        let fraction = fraction.clamp(0.0, 1.0);
        TraceSample {
            fraction,
            threshold,
            cut: if fraction >= 1.0 {
                u64::MAX
            } else {
                (fraction * u64::MAX as f64) as u64
            },
        }
    }

    /// `RATE[,THRESHOLD]` as `--trace-slow` takes it: a share (`1%`, `0.01`) and a length of
    /// time (`20ms`).
    pub fn parse(s: &str) -> Result<TraceSample, String> {
        let (rate, threshold) = match s.split_once(',') {
            Some((r, t)) => (r.trim(), Some(t.trim())),
            None => (s.trim(), None),
        };
        let fraction = match rate.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
            None => rate.parse::<f64>(),
        };
        let fraction = match fraction {
            Ok(f) if f > 0.0 && f <= 1.0 => f,
            _ => {
                return Err(format!(
                    "'{rate}' is not a share of the operations to trace: write a percentage or a fraction above 0, like 1% or 0.01"
                ));
            }
        };
        let threshold = threshold
            .map(|t| {
                humantime::parse_duration(t).map_err(|_| {
                    format!("'{t}' is not a response time to keep traces over: write a length of time, like 20ms")
                })
            })
            .transpose()?;
        Ok(TraceSample::new(fraction, threshold))
    }

    /// Whether operation `i` is sent traced: a splitmix64 hash against the cut, no state.
    #[inline]
    pub fn picks(&self, i: u64) -> bool {
        let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) < self.cut || self.cut == u64::MAX
    }
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

    /// The hash picks the share asked, whatever the operations' numbers: of a million in a
    /// row, and of a million every 100th (a stride a workload's mix might follow), within four
    /// standard errors of the share.
    #[test]
    fn a_trace_sample_picks_its_share_of_any_run_of_operations() {
        for share in [0.01, 0.1, 0.5] {
            let t = TraceSample::new(share, None);
            let se = (share * (1.0 - share) / 1e6f64).sqrt();
            for stride in [1u64, 100] {
                let picked = (0..1_000_000u64).filter(|i| t.picks(i * stride)).count() as f64 / 1e6;
                assert!((picked - share).abs() < 4.0 * se, "{share} every {stride}: {picked}");
            }
        }
        assert!((0..1000).all(|i| TraceSample::new(1.0, None).picks(i)));
    }

    #[test]
    fn trace_slow_takes_a_share_and_a_threshold() {
        let t = TraceSample::parse("1%,20ms").unwrap();
        assert_eq!((t.fraction, t.threshold), (0.01, Some(Duration::from_millis(20))));
        assert_eq!(TraceSample::parse("0.05").unwrap().threshold, None);
        for (bad, says) in [("0", "like 1% or 0.01"), ("150%", "like 1%"), ("1%,soon", "like 20ms")] {
            let e = TraceSample::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

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
            trace: None,
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
