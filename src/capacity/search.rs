//! Looking for capacity: the highest rate at which every repeat meets the service level.
//!
//! The adaptive search keeps a bracket: `lo`, the highest rate that passed every repeat, and
//! `hi`, the lowest rate that failed (or, before any failure, a ceiling the client measured
//! flat out: no rate above what the cluster does flat out can achieve its target). It grows
//! the rate until something fails, then halves the bracket until `hi - lo` is within the
//! precision of `lo`. The capacity is always a rate that was run and passed.

use crate::console::group;
use crate::engine::schedule::parse_rate;

#[derive(Debug, Clone)]
pub struct Search {
    start: f64,
    precision: f64,
    growth: f64,
    lo: Option<f64>,
    hi: Option<f64>,
    /// Whether `hi` failed a run (rather than being the measured ceiling).
    hi_ran: bool,
    steps: usize,
    max_steps: usize,
    /// A rate failed below one that passed: the bracket cannot narrow further.
    inverted: Option<(f64, f64)>,
}

/// Rates below this are not worth trying.
const MIN_RATE: f64 = 1.0;

impl Search {
    pub fn new(start: f64, precision: f64) -> Search {
        Search {
            start: start.max(MIN_RATE),
            precision,
            growth: 2.0,
            lo: None,
            hi: None,
            hi_ran: false,
            steps: 0,
            max_steps: 40,
            inverted: None,
        }
    }

    /// No rate above `ceiling` can pass (the cluster's flat-out throughput).
    pub fn with_ceiling(mut self, ceiling: f64) -> Search {
        if ceiling > MIN_RATE {
            self.hi = Some(ceiling);
            self.start = self.start.min(ceiling / 2.0).max(MIN_RATE);
        }
        self
    }

    /// The next rate to try, or None when done.
    pub fn next(&self) -> Option<f64> {
        if self.steps >= self.max_steps || self.inverted.is_some() {
            return None;
        }
        if self.steps == 0 {
            return Some(self.start.round().max(MIN_RATE));
        }
        match (self.lo, self.hi) {
            (Some(lo), None) => Some((lo * self.growth).round()),
            (None, Some(hi)) => (hi / 2.0 >= MIN_RATE).then_some((hi / 2.0).round()),
            // A bracket narrower than a whole rate (below ~20 op/s) cannot narrow further.
            (Some(lo), Some(hi)) if hi - lo > self.precision * lo => between(lo, hi),
            // Close to a ceiling no run has tried: try it, in case the flat-out probe was low.
            (Some(lo), Some(hi)) if !self.hi_ran && hi.round() > lo => Some(hi.round()),
            _ => None,
        }
    }

    /// What a rate did over all its repeats.
    pub fn record(&mut self, rate: f64, passed: bool) {
        self.steps += 1;
        if passed {
            if self.hi.is_some_and(|hi| rate >= hi) {
                if self.hi_ran {
                    self.inverted = Some((self.hi.unwrap_or(rate), rate));
                } else {
                    // The measured ceiling was too low: keep growing.
                    self.hi = None;
                }
            }
            self.lo = Some(self.lo.map_or(rate, |lo| lo.max(rate)));
        } else {
            if self.lo.is_some_and(|lo| rate <= lo) {
                self.inverted = Some((rate, self.lo.unwrap_or(rate)));
            }
            if self.hi.is_none_or(|hi| rate < hi || !self.hi_ran) {
                self.hi = Some(rate);
                self.hi_ran = true;
            }
        }
    }

    /// The highest rate that passed every repeat.
    pub fn capacity(&self) -> Option<f64> {
        self.lo
    }

    /// The current bracket, as words.
    pub fn bracket(&self) -> String {
        let lo = self.lo.map_or("none yet".into(), |r| format!("{} op/s", group(r)));
        let hi = match (self.hi, self.hi_ran) {
            (Some(r), true) => format!("{} op/s failed", group(r)),
            (Some(r), false) => format!("{} op/s flat out", group(r)),
            (None, _) => "no failure yet".into(),
        };
        format!("passing {lo}; above: {hi}")
    }

    /// Why the search stopped, when not by reaching the precision.
    pub fn stopped_early(&self) -> Option<String> {
        if let Some((failed, passed)) = self.inverted {
            return Some(format!(
                "{} op/s failed although {} op/s passed: results at these rates vary more than the precision; \
                 add --repeats or lengthen --measure",
                group(failed),
                group(passed)
            ));
        }
        if self.steps >= self.max_steps {
            return Some(format!("stopped after {} steps", self.max_steps));
        }
        if self.lo.is_none() && self.next().is_none() {
            return Some("no rate passed, down to the lowest worth trying".into());
        }
        None
    }
}

/// A round whole rate (3 significant digits if it can) strictly between `lo` and `hi`, if
/// there is one.
fn between(lo: f64, hi: f64) -> Option<f64> {
    let mid = (lo + hi) / 2.0;
    let unit = 10f64.powi(mid.log10().floor() as i32 - 2).max(1.0);
    let round = (mid / unit).round() * unit;
    [round, mid.round()].into_iter().find(|&r| r > lo && r < hi)
}

/// `20k:120k:10k` (from, to, step) or `1000,2000,5k`.
pub fn parse_rates(s: &str) -> Result<Vec<f64>, String> {
    let num = |t: &str| -> Result<f64, String> {
        match parse_rate(t) {
            Ok(v) if v > 0.0 => Ok(v),
            _ => Err(format!(
                "'{s}' is not a list of rates: write from:to:step (20k:120k:10k) or rates separated by commas"
            )),
        }
    };
    let rates: Vec<f64> = if s.contains(':') {
        let parts: Vec<&str> = s.split(':').collect();
        let [from, to, step] = parts[..] else {
            return Err(format!("'{s}': write from:to:step, e.g. 20k:120k:10k"));
        };
        let (from, to, step) = (num(from)?, num(to)?, num(step)?);
        if to < from {
            return Err(format!("'{s}': the last rate is below the first"));
        }
        let n = ((to - from) / step + 1e-9).floor() as usize;
        if n > 1000 {
            return Err(format!("'{s}' makes {n} steps: use a larger step"));
        }
        (0..=n).map(|i| from + i as f64 * step).collect()
    } else {
        s.split(',').map(num).collect::<Result<_, _>>()?
    };
    if rates.is_empty() {
        return Err(format!("'{s}' names no rate"));
    }
    Ok(rates)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a cluster whose repeats pass when `passes(rate, repeat)`;
    /// returns the capacity and every rate tried with its aggregate result.
    fn drive(mut s: Search, repeats: usize, passes: impl Fn(f64, usize) -> bool) -> (Option<f64>, Vec<(f64, bool)>) {
        let mut tried = Vec::new();
        while let Some(rate) = s.next() {
            let ok = (0..repeats).all(|r| passes(rate, r));
            tried.push((rate, ok));
            s.record(rate, ok);
        }
        (s.capacity(), tried)
    }

    #[test]
    fn converges_on_the_capacity_within_the_precision() {
        for capacity in [750.0, 9_000.0, 43_210.0, 250_000.0] {
            for start in [100.0, 5_000.0, 1_000_000.0] {
                let (found, tried) = drive(Search::new(start, 0.05), 1, |r, _| r <= capacity);
                let found = found.unwrap_or_else(|| panic!("nothing found for {capacity} from {start}: {tried:?}"));
                assert!(found <= capacity, "{found} above the capacity {capacity}");
                assert!(
                    found >= capacity / 1.05,
                    "{found} not within 5% of {capacity}: {tried:?}"
                );
                assert!(tried.len() < 20, "{} steps: {tried:?}", tried.len());
            }
        }
    }

    #[test]
    fn a_measured_ceiling_saves_the_growing_phase() {
        let capacity = 8_000.0;
        let (plain, plain_steps) = drive(Search::new(1_000.0, 0.05), 1, |r, _| r <= capacity);
        let (ceiled, ceiled_steps) = drive(Search::new(1_000.0, 0.05).with_ceiling(10_000.0), 1, |r, _| {
            r <= capacity
        });
        assert!(ceiled.unwrap() >= capacity / 1.05 && plain.unwrap() >= capacity / 1.05);
        assert!(
            ceiled_steps.len() <= plain_steps.len(),
            "{ceiled_steps:?} vs {plain_steps:?}"
        );
        // A ceiling below the real capacity (a cold probe) does not cap the answer.
        let (low, _) = drive(Search::new(1_000.0, 0.05).with_ceiling(4_000.0), 1, |r, _| {
            r <= capacity
        });
        assert!(low.unwrap() >= capacity / 1.05, "{low:?}");
    }

    #[test]
    fn never_reports_a_rate_that_failed_any_repeat() {
        // Between 6,000 and 8,000 op/s the third repeat fails.
        let passes = |r: f64, repeat: usize| r <= 6_000.0 || (r <= 8_000.0 && repeat < 2);
        let (found, tried) = drive(Search::new(1_000.0, 0.05), 3, passes);
        let found = found.unwrap();
        assert!(found <= 6_000.0, "{found}: {tried:?}");
        assert!(tried.iter().any(|&(r, ok)| r == found && ok));
        for (r, ok) in &tried {
            assert_eq!(*ok, (0..3).all(|rep| passes(*r, rep)), "{r}");
        }
    }

    #[test]
    fn rates_are_whole_and_never_tried_twice_in_a_narrow_bracket() {
        // Capacity 13 op/s at 5 % precision: the bracket 12..14 narrows to 13, then stops.
        let (found, tried) = drive(Search::new(3.3, 0.05), 1, |r, _| r <= 13.0);
        assert_eq!(found, Some(13.0), "{tried:?}");
        assert!(tried.iter().all(|(r, _)| r.fract() == 0.0), "{tried:?}");
        let mut rates: Vec<u64> = tried.iter().map(|(r, _)| *r as u64).collect();
        rates.sort_unstable();
        rates.dedup();
        assert_eq!(rates.len(), tried.len(), "a rate was tried twice: {tried:?}");
    }

    #[test]
    fn noisy_or_hopeless_clusters_stop_with_a_reason() {
        let (found, _) = drive(Search::new(1_000.0, 0.05), 1, |_, _| false);
        assert_eq!(found, None);
        let mut s = Search::new(1_000.0, 0.05);
        s.record(1_000.0, true);
        s.record(2_000.0, false);
        s.record(900.0, false);
        assert_eq!(s.next(), None);
        assert!(
            s.stopped_early()
                .unwrap()
                .contains("900 op/s failed although 1,000 op/s passed")
        );
        assert_eq!(s.capacity(), Some(1_000.0));
    }

    #[test]
    fn rate_lists_parse() {
        let r = parse_rates("20k:120k:10k").unwrap();
        assert_eq!((r.len(), r[0], r[10]), (11, 20_000.0, 120_000.0));
        assert_eq!(parse_rates("500, 1k,2.5k").unwrap(), vec![500.0, 1000.0, 2500.0]);
        assert!(parse_rates("5k:1k:1k").is_err());
        assert!(parse_rates("fast").unwrap_err().contains("from:to:step"));
        assert_eq!(between(1_000.0, 2_000.0), Some(1_500.0));
        assert_eq!(between(12_340.0, 12_360.0), Some(12_350.0));
        assert_eq!(between(12.0, 14.0), Some(13.0));
        assert_eq!(between(12.0, 13.0), None);
    }
}
