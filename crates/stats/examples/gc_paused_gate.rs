//! The history gate's change points with and without GC-paused runs set aside, side by side:
//! what bench/results/gc-paused-gate.md's "A gate for GC-paused runs" reports.
//!
//!     cargo run --release -p caplab-stats --example gc_paused_gate -- [SERIES] [SEED]
//!
//! SERIES series per row (default 4,000), seeds from SEED (default 7202, the tuning seed; the
//! unit tests assert on others). Each p99 series: 20 runs at 15 % spread, then a step; "GC" rows
//! put one run in ten at 3 times its level. A check is one series × 8 figures (p ≤ 0.05 / 8)
//! failing on a sure change up among its latest 6 runs.

use caplab_stats::stats::changes::{Settings, changes};
use caplab_stats::stats::normal;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// `n` runs (values, level 1,000) at spread `cv`, `paused` of them ×3, ×`ratio` from `at`.
fn series(rng: &mut Pcg64Mcg, n: usize, cv: f64, paused: f64, at: usize, ratio: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let level = if i >= at { 1000.0 * ratio } else { 1000.0 };
            let v = level * (cv * normal(rng)).exp();
            if rng.random::<f64>() < paused { v * 3.0 } else { v }
        })
        .collect()
}

fn fails(x: &[f64], s: &Settings, up: bool) -> bool {
    let n = x.len();
    changes(x, s)
        .iter()
        .any(|c| !c.weak && (!up || c.ratio > 1.0) && n - 1 - c.at < 2 * s.min_segment)
}

/// The cumulative share of series a step of `ratio` after 20 runs fails the check on, by its
/// 3rd .. `last`th run.
fn found(seed: u64, cases: usize, cv: f64, paused: f64, ratio: f64, last: usize, s: &Settings) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut by = vec![0usize; last + 1];
    for _ in 0..cases {
        let x = series(&mut rng, 20 + last, cv, paused, 20, ratio);
        if let Some(k) = (3..=last).find(|k| fails(&x[..20 + k], s, ratio > 1.0)) {
            by[k] += 1;
        }
    }
    (3..=last)
        .map(|k| 100.0 * by[3..=k].iter().sum::<usize>() as f64 / cases as f64)
        .collect()
}

/// The share of looks at 10, 15, … 30 runs with nothing changed that fail.
fn false_looks(seed: u64, cases: usize, paused: f64, s: &Settings) -> f64 {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut failed = 0usize;
    for _ in 0..cases / 5 {
        for n in [10, 15, 20, 25, 30] {
            failed += usize::from(fails(&series(&mut rng, n, 0.15, paused, n, 1.0), s, false));
        }
    }
    100.0 * failed as f64 / (cases / 5 * 5) as f64
}

fn main() {
    let arg = |i: usize, d: u64| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (cases, seed) = (arg(1, 4_000) as usize, arg(2, 7202));
    let winsorized = Settings::default().over(8);
    println!("{cases} series per row, seeds from {seed}; by the 3rd, 4th, ... run after the step (%)");
    for (name, s) in [("winsorized", winsorized), ("robust (tails)", winsorized.for_tails())] {
        println!("{name}:");
        println!(
            "  x2 p99, GC:        {:.1?}",
            found(seed, cases, 0.15, 0.10, 2.0, 5, &s)
        );
        println!(
            "  x2 p99, no GC:     {:.1?}",
            found(seed + 1, cases, 0.15, 0.0, 2.0, 5, &s)
        );
        println!(
            "  x1.3 p99, GC:      {:.1?}",
            found(seed + 2, cases, 0.15, 0.10, 1.3, 6, &s)
        );
        println!(
            "  x1.3 p99, no GC:   {:.1?}",
            found(seed + 3, cases, 0.15, 0.0, 1.3, 6, &s)
        );
        println!(
            "  -10 % at 3 %, 80 series x figures: {:.1?}",
            found(seed + 4, cases / 4, 0.03, 0.0, 0.9, 6, &s.over(80))
        );
        println!(
            "  nothing changed, looks failing: GC {:.2} %, no GC {:.2} %",
            false_looks(seed + 5, cases, 0.10, &s),
            false_looks(seed + 6, cases, 0.0, &s)
        );
    }
}
