//! What a check can find in a series as noisy as the one it looks at (`history check` states
//! it): the series' spread between runs read from its own runs, and the share of simulated
//! series like it — as many runs before the change, that spread, normal on logs, the check's own
//! thresholds — in which a change of a given ratio is a sure change by its `by`-th run after.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::changes::{Settings, changes};
use super::maxt::median_in_place;

/// Runs from which a spread is read.
pub const MIN_RUNS: usize = 4;

/// A series' spread between runs, as an SD of its logs: 1.4826 × the median absolute
/// difference of successive runs / √2 (a level shift moves one difference, a GC-paused run
/// two); None with fewer than `MIN_RUNS` runs.
pub fn spread(logs: &[f64]) -> Option<f64> {
    if logs.len() < MIN_RUNS {
        return None;
    }
    let mut d: Vec<f64> = logs.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    Some(1.4826 * median_in_place(&mut d) / std::f64::consts::SQRT_2)
}

/// The share of `sims` series of `before` runs at spread `sd` (an SD of logs), then runs at
/// `ratio` times the level, in which `s`'s check finds the change — a sure one, the right way,
/// among its latest runs — by the `by`-th run after it (checked after each from the
/// `s.min_segment`-th). Seeded, so the same question gets the same answer.
pub fn found_by(before: usize, sd: f64, ratio: f64, by: usize, s: &Settings, sims: usize) -> f64 {
    let mut rng = Pcg64Mcg::seed_from_u64(0x90e3 ^ ((before as u64) << 8) ^ by as u64);
    let m = s.min_segment.max(1);
    let mut found = 0usize;
    let mut x = Vec::with_capacity(before + by);
    for _ in 0..sims {
        x.clear();
        for i in 0..before + by {
            let level = if i >= before { ratio.ln() } else { 0.0 };
            x.push((level + sd * super::normal(&mut rng)).exp());
        }
        let hit = (m..=by).any(|k| {
            let n = before + k;
            changes(&x[..n], s)
                .iter()
                .any(|c| !c.weak && (c.ratio > 1.0) == (ratio > 1.0) && n - 1 - c.at < 2 * m)
        });
        found += usize::from(hit);
    }
    found as f64 / sims.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{bound, lower};

    #[test]
    fn a_spread_is_read_from_successive_runs_and_a_level_shift_barely_moves_it() {
        let flat: Vec<f64> = (0..20).map(|i| 0.1 * ((i * 7 % 5) as f64 - 2.0)).collect();
        let sd = spread(&flat).unwrap();
        let mut shifted = flat.clone();
        shifted[10..].iter_mut().for_each(|v| *v += 2.0);
        assert!((spread(&shifted).unwrap() - sd).abs() < 0.3 * sd, "{sd}");
        assert!(spread(&flat[..3]).is_none());
    }

    /// The power it states is what a simulation of the same check finds: a ×2 tail at 15 %
    /// spread after 7 runs by the 5th run in at least 90 % (estimate − 3 SE of its 400 series),
    /// at 34 % in under 75 % (estimate + 3 SE): a series that spreads more is told it sees less.
    #[test]
    fn the_power_falls_with_the_series_spread() {
        let s = Settings::default().for_tails();
        let sims = 400;
        let quiet = found_by(7, 0.15, 2.0, 5, &s, sims);
        let noisy = found_by(7, 0.34, 2.0, 5, &s, sims);
        println!("×2 by the 5th run: at 15 % {quiet:.3}, at 34 % {noisy:.3}");
        assert!(lower(quiet, sims) >= 0.90, "{quiet}");
        assert!(bound(noisy, sims) < 0.75, "{noisy}");
    }
}
