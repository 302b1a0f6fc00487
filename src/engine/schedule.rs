//! The open-model schedule: when each operation is intended to start, at a constant rate or
//! along a rate shape (`shape.rs`).

use super::shape::Shape;
pub use super::shape::parse_rate;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where an operation a shape never reaches (a trace ending at rate 0) is put: past any run.
const NEVER: Duration = Duration::from_secs(100 * 365 * 86_400);

#[derive(Debug, Clone)]
pub struct Schedule {
    pub start: Instant,
    /// Nanoseconds between consecutive operations at a constant rate; 0 runs flat out (no
    /// schedule) unless a shape gives the times.
    pub interval_ns: f64,
    /// A rate that moves (`--rate ramp:…`); None for a constant one.
    pub shape: Option<Arc<Shape>>,
}

impl Schedule {
    pub fn new(start: Instant, rate: f64) -> Schedule {
        Schedule {
            start,
            interval_ns: if rate > 0.0 { 1e9 / rate } else { 0.0 },
            shape: None,
        }
    }

    /// Along a shape (a constant one is kept as its plain rate).
    pub fn shaped(start: Instant, shape: Arc<Shape>) -> Schedule {
        match shape.constant_rate() {
            Some(rate) => Schedule::new(start, rate),
            None => Schedule {
                start,
                interval_ns: 0.0,
                shape: Some(shape),
            },
        }
    }

    pub fn is_open(&self) -> bool {
        self.interval_ns > 0.0 || self.shape.is_some()
    }

    /// Intended start of operation `i`, or `None` when running flat out.
    pub fn intended(&self, i: u64) -> Option<Instant> {
        if let Some(shape) = &self.shape {
            let t = Duration::try_from_secs_f64(shape.time_of(i as f64)).unwrap_or(NEVER);
            return Some(self.start + t.min(NEVER));
        }
        self.is_open()
            .then(|| self.start + Duration::from_nanos((i as f64 * self.interval_ns) as u64))
    }

    /// Operations whose intended start falls before `until`.
    pub fn due_before(&self, until: Instant) -> u64 {
        if !self.is_open() {
            return 0;
        }
        let span = until.saturating_duration_since(self.start);
        match &self.shape {
            Some(shape) => shape.ops_before(span.as_secs_f64()).ceil() as u64,
            None => (span.as_nanos() as f64 / self.interval_ns).ceil() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_operations_evenly() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, 2000.0);
        assert_eq!(s.intended(0), Some(t0));
        assert_eq!(s.intended(2000), Some(t0 + Duration::from_secs(1)));
        assert_eq!(s.intended(1), Some(t0 + Duration::from_micros(500)));
        assert_eq!(s.due_before(t0 + Duration::from_secs(10)), 20_000);
        assert_eq!(Schedule::new(t0, 0.0).intended(5), None);
    }

    #[test]
    fn a_shape_gives_the_times_and_the_counts() {
        let t0 = Instant::now();
        let s = Schedule::shaped(t0, Arc::new(Shape::parse("steps:1k,3k/1s").unwrap()));
        assert!(s.is_open());
        assert_eq!(s.intended(1000), Some(t0 + Duration::from_secs(1)));
        assert_eq!(s.due_before(t0 + Duration::from_secs(2)), 4000);
        let quiet = Schedule::shaped(t0, Arc::new(Shape::from_trace("5\n0\n", "q").unwrap()));
        assert_eq!(quiet.intended(5), Some(t0 + NEVER), "never reached: past any run");
        // A constant shape is the plain schedule.
        let flat = Schedule::shaped(t0, Arc::new(Shape::parse("2k").unwrap()));
        assert!(flat.shape.is_none() && flat.interval_ns == 5e5);
    }
}
