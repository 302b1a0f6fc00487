//! Weights that set a GC-paused run aside from a series of runs' log values, for change points
//! in tail figures (p99, p99.9, a service p99, GC pause time). A G1 pause in one run's window
//! puts that run's p99 about 3 times its level, in about one run in ten on these machines.
//! Pulling such runs in to 3 SDs (`maxt::winsorize`) keeps one of them from hiding a change,
//! but two or three among twenty still inflate the pooled SD, and a doubled p99 is then found
//! by its 5th run in only 79 % of series (bench/results/gc-paused-gate.md).
//!
//! Each run is judged against the median of the five runs around it (as `winsorize` does, so a
//! new level of three or more runs is the median of its own neighbourhoods and is never set
//! aside). The spread it is judged by must not be inflated by the paused runs themselves:
//! it starts below a robust guess (the first quartile of the differences between runs at most
//! three apart) and grows by iterating a truncated SD corrected for its truncation, which
//! settles at the clean runs' SD from below, where a guess from above would settle with the
//! paused runs counted in. A run within `FULL` SDs of its median keeps its whole weight; beyond
//! it the weight falls smoothly (Tukey's biweight) to none at `NONE` SDs.

use statrs::distribution::{ContinuousCDF, Normal};

/// SDs from its neighbours' median within which a run keeps its whole weight.
pub const FULL: f64 = 3.0;
/// SDs from its neighbours' median at and beyond which a run has no weight.
pub const NONE: f64 = 5.0;
/// SDs beyond which a run is left out of the spread's estimate.
const TRUNCATE: f64 = 3.0;
/// The spread's start, as a share of the robust guess, and how many times it is refined.
const START: f64 = 0.7;
const PASSES: usize = 5;
/// For normal runs: the RMS of a run's distance to the median of five including it (in SDs,
/// simulated), and the first quartile of the distance between two runs (√2 Φ⁻¹(0.625)).
const MEDIAN5_RMS: f64 = 0.94;
const PAIR_Q1: f64 = 0.450_63;

/// Buffers for `weights`, reused across calls.
#[derive(Debug, Default)]
pub struct Buffers {
    resid: Vec<f64>,
    pairs: Vec<f64>,
}

/// The weight of each value of `x` (log values of runs in order) into `w`: 1 for most runs,
/// 0 for a run far above or below the runs around it. All 1 when `x` is too short (fewer than
/// five) or has no spread to judge by.
pub fn weights(x: &[f64], w: &mut Vec<f64>, buf: &mut Buffers) {
    w.clear();
    w.resize(x.len(), 1.0);
    let n = x.len();
    if n < 5 {
        return;
    }
    let resid = &mut buf.resid;
    resid.clear();
    let mut near = [0.0; 5];
    for (i, v) in x.iter().enumerate() {
        let from = i.saturating_sub(2).min(n - 5);
        near.copy_from_slice(&x[from..from + 5]);
        near.sort_unstable_by(f64::total_cmp);
        resid.push(v - near[2]);
    }
    let pairs = &mut buf.pairs;
    pairs.clear();
    for i in 0..n {
        pairs.extend(x[i + 1..(i + 4).min(n)].iter().map(|y| (x[i] - y).abs()));
    }
    let q1 = pairs.len() / 4;
    let (_, &mut guess, _) = pairs.select_nth_unstable_by(q1, f64::total_cmp);
    let mut sd = START * guess / PAIR_Q1;
    // A truncated normal's SD, as a share of the whole's, at the truncation the distances see
    // (`TRUNCATE` SDs of the runs are `TRUNCATE / MEDIAN5_RMS` of the distances' own).
    let h = TRUNCATE / MEDIAN5_RMS;
    let phi = (-h * h / 2.0).exp() / std::f64::consts::TAU.sqrt();
    let inside = Normal::standard().cdf(h) * 2.0 - 1.0;
    let kappa = (1.0 - 2.0 * h * phi / inside).sqrt();
    for _ in 0..PASSES {
        if !(sd > 0.0 && sd.is_finite()) {
            return;
        }
        let (mut sum, mut kept) = (0.0, 0usize);
        for r in resid.iter().filter(|r| r.abs() <= TRUNCATE * sd) {
            sum += r * r;
            kept += 1;
        }
        sd = (sum / kept.max(1) as f64).sqrt() / (MEDIAN5_RMS * kappa);
    }
    if !(sd > 0.0 && sd.is_finite()) {
        return;
    }
    for (w, r) in w.iter_mut().zip(resid.iter()) {
        let u = r.abs() / sd;
        *w = if u <= FULL {
            1.0
        } else if u >= NONE {
            0.0
        } else {
            let z = (u - FULL) / (NONE - FULL);
            (1.0 - z * z).powi(2)
        };
    }
}

/// Which runs of `x` (log values in order) `weights` sets more than half aside: those left out
/// of a tail figure's levels and spread.
pub fn set_aside(x: &[f64]) -> Vec<bool> {
    let mut w = Vec::with_capacity(x.len());
    weights(x, &mut w, &mut Buffers::default());
    w.iter().map(|w| *w < 0.5).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_run_is_set_aside_and_a_new_level_kept() {
        let (mut w, mut buf) = (Vec::new(), Buffers::default());
        // Runs at 15 % spread (as logs), two of them about 3 times the level.
        let mut x = vec![
            0.06, 0.21, 0.11, -0.11, 0.14, -0.18, 0.04, 0.16, 0.14, -0.16, 0.11, -0.08, 0.05, -0.18,
        ];
        x[4] += 3f64.ln();
        x[8] += 3f64.ln();
        weights(&x, &mut w, &mut buf);
        assert_eq!((w[4], w[8]), (0.0, 0.0), "{w:?}");
        assert!(
            w.iter().enumerate().all(|(i, w)| i == 4 || i == 8 || *w == 1.0),
            "{w:?}"
        );
        let aside = set_aside(&x);
        assert_eq!(aside.iter().filter(|a| **a).count(), 2);
        assert!(aside[4] && aside[8]);
        // A new level of three runs at the end, twice the old: every run keeps its weight.
        let mut y = x.clone();
        y[4] -= 3f64.ln();
        y[8] -= 3f64.ln();
        y.extend([0.69, 0.75, 0.62]);
        weights(&y, &mut w, &mut buf);
        assert!(w.iter().all(|w| *w == 1.0), "{w:?}");
        // Too short, or no spread: nothing set aside.
        weights(&[0.0, 5.0, 0.0, 0.0], &mut w, &mut buf);
        assert_eq!(w, [1.0; 4]);
        weights(&[1.0; 8], &mut w, &mut buf);
        assert_eq!(w, [1.0; 8]);
    }
}
