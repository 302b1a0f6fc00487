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

/// Operations per second as written on the command line: `2000`, `50k`, `1.5M`, `0` (flat out).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('m') {
            Some(n) => (n, 1e6),
            None => (t.as_str(), 1.0),
        },
    };
    match num.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!(
            "'{s}' is not a rate: write operations per second, like 2000, 50k or 0 for flat out"
        )),
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
