//! Native histograms (Prometheus's sparse, exponential ones) for remote write: the text
//! exposition cannot carry them, remote write can. Schema 3: each power of two split into 8
//! buckets, each 9 % above the one before, so a `histogram_quantile` over them lies within 9 % of
//! the exact percentile (the classic buckets: 21 %), and loaders add up as the classic ones do.
//! Bucket i holds values in (2^((i-1)/8), 2^(i/8)] seconds; caplab's values run from 1 ns to an
//! hour, indices -240 to 95.

use hdrhistogram::Histogram;

use super::buckets::Buckets;
use super::wire::{BucketSpan, NativeHistogram};

pub const SCHEMA: i32 = 3;
/// The lowest index kept (values at or below 2^(-240/8) s = 1 ns land there).
const LOWEST: i32 = -240;
const BUCKETS: usize = 336;

/// Cumulative counts per bucket (bucket `LOWEST` first), and their count and sum in seconds.
#[derive(Debug, Clone)]
pub struct Native(pub Buckets);

impl Default for Native {
    fn default() -> Native {
        Native(Buckets::with(BUCKETS))
    }
}

/// The bucket index of `seconds` at schema 3 (0 and below land in the lowest).
pub fn index(seconds: f64) -> i32 {
    ((seconds.max(1e-12).log2() * f64::from(1 << SCHEMA)).ceil() as i32).clamp(LOWEST, LOWEST + BUCKETS as i32 - 1)
}

impl Native {
    /// Adds an interval's HdrHistogram (nanoseconds), each value at the highest it stands for.
    pub fn add(&mut self, h: &Histogram<u64>) {
        self.0.add_by(h, |s| (index(s) - LOWEST) as usize);
    }

    /// As remote write carries it: spans of consecutive buckets that hold something, and each
    /// bucket's count as the difference from the one before.
    pub fn to_proto(&self, timestamp: i64) -> NativeHistogram {
        let mut spans: Vec<BucketSpan> = Vec::new();
        let mut deltas = Vec::new();
        let (mut previous_count, mut next_index) = (0i64, None::<i32>);
        for (k, c) in self.0.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            let i = k as i32 + LOWEST;
            match (next_index, spans.last_mut()) {
                (Some(n), Some(span)) if n == i => span.length += 1,
                (Some(n), _) => spans.push(BucketSpan {
                    offset: i - n,
                    length: 1,
                }),
                (None, _) => spans.push(BucketSpan { offset: i, length: 1 }),
            }
            deltas.push(*c as i64 - previous_count);
            previous_count = *c as i64;
            next_index = Some(i + 1);
        }
        NativeHistogram {
            count_int: self.0.count,
            sum: self.0.sum_s,
            schema: SCHEMA,
            zero_threshold: 0.0,
            zero_count_int: 0,
            positive_spans: spans,
            positive_deltas: deltas,
            timestamp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::recorder::new_histogram;

    #[test]
    fn bucket_i_holds_values_above_two_to_the_i_minus_one_eighths() {
        assert_eq!(index(1.0), 0);
        assert_eq!(index(1.05), 1, "2^(1/8) = 1.0905");
        assert_eq!(index(1.0906), 2);
        assert_eq!(index(0.5), -8);
        assert_eq!(index(1e-9), -239);
        assert_eq!(index(3600.0), 95);
        assert_eq!(index(1e-12), LOWEST, "below 1 ns is clamped");
    }

    #[test]
    fn spans_and_deltas_give_back_every_buckets_count() {
        let mut h = new_histogram();
        for (ms, n) in [(1u64, 3u64), (2, 5), (100, 2)] {
            h.record_n(ms * 1_000_000, n).unwrap();
        }
        let mut native = Native::default();
        native.add(&h);
        let p = native.to_proto(9);
        assert_eq!((p.count_int, p.schema, p.timestamp), (10, 3, 9));
        // Decoded as Prometheus does: walk the spans, adding the deltas.
        let (mut at, mut count, mut k, mut got) = (0i32, 0i64, 0usize, Vec::new());
        for (n, s) in p.positive_spans.iter().enumerate() {
            at = if n == 0 { s.offset } else { at + s.offset };
            for _ in 0..s.length {
                count += p.positive_deltas[k];
                got.push((at, count));
                (at, k) = (at + 1, k + 1);
            }
        }
        let expected: Vec<(i32, i64)> = [(1e-3, 3), (2e-3, 5), (0.1, 2)]
            .iter()
            .map(|(s, n)| (index(s * 1.0005), *n))
            .collect();
        assert_eq!(got, expected);
        assert!((p.sum - 0.213).abs() < 1e-3, "{}", p.sum);
    }
}
