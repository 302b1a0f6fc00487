//! Changepoints in the mean of a series by PELT (Killick, Fearnhead & Eckley, "Optimal
//! detection of changepoints with a linear computational cost", JASA 2012): the partition of
//! the series into segments of at least `min_len` values that minimises the sum of squared
//! deviations from each segment's mean plus `penalty` per changepoint. Exact (the same answer
//! as trying every partition), in about linear time thanks to pruning. The penalty decides how
//! large a change must be to pay for itself: `noise_sigma` estimates the noise it is scaled by.

/// The first index of every segment after the first, in order.
pub fn changepoints(x: &[f64], penalty: f64, min_len: usize) -> Vec<usize> {
    let n = x.len();
    let min_len = min_len.max(1);
    if n < 2 * min_len {
        return Vec::new();
    }
    let cost = SegmentCost::new(x);
    // best[t]: the least cost of x[..t] (with a penalty per segment, so the first one's is taken
    // back by starting at -penalty); last[t]: where its last segment starts.
    let mut best = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    best[0] = -penalty;
    let mut starts: Vec<usize> = vec![0];
    let mut kept = Vec::with_capacity(n);
    for t in min_len..=n {
        let mut min = f64::INFINITY;
        let mut arg = 0;
        for &s in starts.iter().filter(|&&s| t - s >= min_len) {
            let c = best[s] + cost.of(s, t) + penalty;
            if c < min {
                min = c;
                arg = s;
            }
        }
        best[t] = min;
        last[t] = arg;
        // A start that cannot beat the best even without paying for a changepoint never will
        // later (the cost of adding values to a segment never falls): pruned.
        kept.clear();
        kept.extend(
            starts
                .iter()
                .copied()
                .filter(|&s| t - s < min_len || best[s] + cost.of(s, t) <= min),
        );
        std::mem::swap(&mut starts, &mut kept);
        // x[..t] can be split into whole segments: t may start the next one.
        if min.is_finite() {
            starts.push(t);
        }
    }
    let mut cps = Vec::new();
    let mut t = n;
    while t > 0 {
        let s = last[t];
        if s > 0 {
            cps.push(s);
        }
        t = s;
    }
    cps.reverse();
    cps
}

/// Sums of values and of their squares so far, for the cost of any segment in O(1).
struct SegmentCost {
    sum: Vec<f64>,
    squares: Vec<f64>,
}

impl SegmentCost {
    fn new(x: &[f64]) -> SegmentCost {
        // Centred first: sums of squares of large values (op/s) lose precision otherwise.
        let centre = x.iter().sum::<f64>() / x.len().max(1) as f64;
        let mut sum = Vec::with_capacity(x.len() + 1);
        let mut squares = Vec::with_capacity(x.len() + 1);
        let (mut a, mut b) = (0.0, 0.0);
        sum.push(0.0);
        squares.push(0.0);
        for v in x {
            let d = v - centre;
            a += d;
            b += d * d;
            sum.push(a);
            squares.push(b);
        }
        SegmentCost { sum, squares }
    }

    /// Sum of squared deviations from the mean of x[s..t].
    fn of(&self, s: usize, t: usize) -> f64 {
        let n = (t - s) as f64;
        let a = self.sum[t] - self.sum[s];
        (self.squares[t] - self.squares[s] - a * a / n).max(0.0)
    }
}

/// The noise's standard deviation, robustly: the median absolute deviation of successive
/// differences, scaled to a normal's σ and divided by √2 (a difference of two values has twice
/// the variance of one). Shifts of the mean touch one difference each, and spikes two, so
/// neither inflates it the way the plain standard deviation would be.
pub fn noise_sigma(x: &[f64]) -> f64 {
    if x.len() < 3 {
        return 0.0;
    }
    let d: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    1.4826 * mad(&d) / std::f64::consts::SQRT_2
}

pub fn median(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Median absolute deviation from the median.
pub fn mad(x: &[f64]) -> f64 {
    let m = median(x);
    median(&x.iter().map(|v| (v - m).abs()).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Annual flow of the Nile at Aswan, 1871–1970 (R's `datasets::Nile`, from Durbin & Koopman
    /// 2001), "with apparent changepoint near 1898" (Cobb 1978, Biometrika 65, 243–51): the
    /// mean drops from 1097.75 (1871–1898) to 849.97 (1899–1970) when the Aswan dam was begun;
    /// Zeileis et al. (strucchange, 2002) and R's changepoint package find the break after
    /// observation 28 too.
    const NILE: [f64; 100] = [
        1120., 1160., 963., 1210., 1160., 1160., 813., 1230., 1370., 1140., 995., 935., 1110., 994., 1020., 960.,
        1180., 799., 958., 1140., 1100., 1210., 1150., 1250., 1260., 1220., 1030., 1100., 774., 840., 874., 694., 940.,
        833., 701., 916., 692., 1020., 1050., 969., 831., 726., 456., 824., 702., 1120., 1100., 832., 764., 821., 768.,
        845., 864., 862., 698., 845., 744., 796., 1040., 759., 781., 865., 845., 944., 984., 897., 822., 1010., 771.,
        676., 649., 846., 812., 742., 801., 1040., 860., 874., 848., 890., 744., 749., 838., 1050., 918., 986., 797.,
        923., 975., 815., 1020., 906., 901., 1170., 912., 746., 919., 718., 714., 740.,
    ];

    #[test]
    fn the_nile_changes_after_1898() {
        let sigma = noise_sigma(&NILE);
        assert!((100.0..130.0).contains(&sigma), "{sigma}");
        for min_len in [1, 2, 5] {
            let cps = changepoints(&NILE, 3.0 * sigma * sigma * (100f64).ln(), min_len);
            assert_eq!(
                cps,
                vec![28],
                "min_len {min_len}: 1871 + 28 = 1899 starts the second segment"
            );
        }
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        assert!((mean(&NILE[..28]) - 1097.75).abs() < 1e-9);
        assert!((mean(&NILE[28..]) - 849.9722).abs() < 1e-3);
    }

    /// The optimal partition by trying every last changepoint (no pruning): O(n²), obviously
    /// right.
    fn optimal(x: &[f64], penalty: f64, min_len: usize) -> Vec<usize> {
        let n = x.len();
        let cost = SegmentCost::new(x);
        let mut best = vec![f64::INFINITY; n + 1];
        let mut last = vec![0; n + 1];
        best[0] = -penalty;
        for t in min_len..=n {
            for s in 0..=t - min_len {
                if best[s].is_finite() {
                    let c = best[s] + cost.of(s, t) + penalty;
                    if c < best[t] {
                        best[t] = c;
                        last[t] = s;
                    }
                }
            }
        }
        let mut cps = Vec::new();
        let mut t = n;
        while t > 0 {
            if last[t] > 0 {
                cps.push(last[t]);
            }
            t = last[t];
        }
        cps.reverse();
        cps
    }

    #[test]
    fn pruning_never_changes_the_answer() {
        // Series with steps, ramps and noise, from a fixed generator.
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut noise = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 10_000) as f64 / 10_000.0 - 0.5
        };
        for case in 0..40 {
            let n = 20 + case * 3;
            let x: Vec<f64> = (0..n)
                .map(|i| {
                    let level = if i < n / 3 {
                        10.0
                    } else if i < 2 * n / 3 {
                        14.0 + (case % 5) as f64
                    } else {
                        11.0
                    };
                    level + i as f64 * 0.02 * (case % 3) as f64 + noise() * (1 + case % 4) as f64
                })
                .collect();
            for (pen, min_len) in [(1.0, 1), (4.0, 2), (10.0, 5), (30.0, 3)] {
                assert_eq!(
                    changepoints(&x, pen, min_len),
                    optimal(&x, pen, min_len),
                    "case {case}, penalty {pen}, min_len {min_len}"
                );
            }
        }
    }

    #[test]
    fn short_and_constant_series_have_no_changepoints() {
        assert!(changepoints(&[1.0, 2.0, 3.0], 1.0, 2).is_empty());
        assert!(changepoints(&[5.0; 40], 1.0, 5).is_empty());
        assert_eq!(noise_sigma(&[5.0; 40]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
