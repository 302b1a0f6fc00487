//! The classic histogram buckets the live metrics keep, the same on every loader so that their
//! counts add up across loaders (quantiles from several loaders cannot be averaged; bucket counts
//! can be summed): upper bounds 100 µs × 10^(k/12), k = 0..=69 (100 µs to 56 s, twelve a decade,
//! each 21 % above the one before, so a `histogram_quantile` lies within 21 % of the exact
//! percentile, and every power of ten, 1 ms, 10 ms, 100 ms, 1 s, is a bound a service level can
//! be read at), and +Inf. Native histograms (native.rs) keep their counts in the same type.

use hdrhistogram::Histogram;

/// Buckets' upper bounds, seconds (+Inf is implicit).
pub fn bounds() -> &'static [f64] {
    static BOUNDS: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    // Four significant digits, so that the `le` labels read as written here.
    let round = |x: f64| format!("{x:.3e}").parse::<f64>().expect("a number");
    BOUNDS.get_or_init(|| (0..=69).map(|k| round(1e-4 * 10f64.powf(k as f64 / 12.0))).collect())
}

/// A histogram in Prometheus's terms: counts per bucket (not cumulative; the last is +Inf),
/// their sum in seconds, and their count.
#[derive(Debug, Clone)]
pub struct Buckets {
    pub counts: Vec<u64>,
    pub sum_s: f64,
    pub count: u64,
}

impl Default for Buckets {
    /// The classic buckets.
    fn default() -> Buckets {
        Buckets::with(bounds().len() + 1)
    }
}

impl Buckets {
    /// `n` empty buckets.
    pub fn with(n: usize) -> Buckets {
        Buckets {
            counts: vec![0; n],
            sum_s: 0.0,
            count: 0,
        }
    }

    /// Adds an interval's HdrHistogram (nanoseconds) to the classic buckets: each distinct
    /// recorded value, at the highest value it stands for, goes to the first bucket whose bound
    /// holds it.
    pub fn add(&mut self, h: &Histogram<u64>) {
        let bounds = bounds();
        self.add_by(h, |s| bounds.partition_point(|b| *b < s));
    }

    /// Adds an interval's HdrHistogram (nanoseconds), each distinct recorded value, at the
    /// highest value it stands for, to the bucket `slot` gives its seconds.
    pub fn add_by(&mut self, h: &Histogram<u64>, slot: impl Fn(f64) -> usize) {
        if h.is_empty() {
            return;
        }
        for v in h.iter_recorded() {
            self.counts[slot(v.value_iterated_to() as f64 / 1e9)] += v.count_at_value();
        }
        self.count += h.len();
        self.sum_s += h.mean() * h.len() as f64 / 1e9;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::recorder::new_histogram;

    #[test]
    fn bounds_rise_twelve_a_decade_from_100_us_to_56_s() {
        let b = bounds();
        assert_eq!(b.len(), 70);
        assert_eq!((b[0], b[12], b[24], b[36], b[48]), (1e-4, 1e-3, 1e-2, 0.1, 1.0));
        assert_eq!(b[1].to_string(), "0.0001212");
        assert_eq!(b[69], 56.23);
        assert!(b.windows(2).all(|w| w[1] / w[0] < 1.22));
    }

    #[test]
    fn each_value_lands_in_the_first_bucket_that_holds_it() {
        let mut h = new_histogram();
        h.record(1_000_000).unwrap(); // 1 ms
        h.record(1_000_000).unwrap();
        h.record(90_000).unwrap(); // below the first bound
        h.record(3_600_000_000_000).unwrap(); // an hour: +Inf
        let mut b = Buckets::default();
        b.add(&h);
        assert_eq!(b.count, 4);
        assert_eq!(b.counts[0], 1);
        let one_ms = bounds().partition_point(|x| *x < 1.0005e-3);
        assert!(bounds()[one_ms] >= 1.0005e-3 && bounds()[one_ms - 1] < 1.0005e-3);
        assert_eq!(b.counts[one_ms], 2);
        assert_eq!(*b.counts.last().unwrap(), 1);
        assert!((b.sum_s - (3600.0 + 0.002 + 0.00009)).abs() < 4.0, "{}", b.sum_s);
    }
}
