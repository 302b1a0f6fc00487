//! The open-model schedule: when each operation is intended to start.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub start: Instant,
    /// Nanoseconds between consecutive operations; 0 runs flat out (no schedule).
    pub interval_ns: f64,
}

impl Schedule {
    pub fn new(start: Instant, rate: f64) -> Schedule {
        Schedule {
            start,
            interval_ns: if rate > 0.0 { 1e9 / rate } else { 0.0 },
        }
    }

    pub fn is_open(&self) -> bool {
        self.interval_ns > 0.0
    }

    /// Intended start of operation `i`, or `None` when running flat out.
    pub fn intended(&self, i: u64) -> Option<Instant> {
        self.is_open()
            .then(|| self.start + Duration::from_nanos((i as f64 * self.interval_ns) as u64))
    }

    /// Operations whose intended start falls before `until`.
    pub fn due_before(&self, until: Instant) -> u64 {
        if !self.is_open() {
            return 0;
        }
        let span = until.saturating_duration_since(self.start).as_nanos() as f64;
        (span / self.interval_ns).ceil() as u64
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
}
