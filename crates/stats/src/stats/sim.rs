//! Helpers the statistics' simulation tests share: a seeded normal variate and the Monte Carlo
//! bound an error rate is asserted with.

pub use super::normal;

/// The eight figures a `history check` looks at, as the simulations model one series: each
/// figure's spread between runs (log-normal: throughput 3 %, p50 5 %, p99 15 %, p99.9 25 %,
/// service p99 15 %, CPU per operation 4 %, GC pause time 20 %, capacity 5 %), whether a
/// GC-paused run (×3 in one run's window) reaches it, and whether higher is worse.
pub const CHECK_FIGURES: [(f64, bool, bool); 8] = [
    (0.03, false, false),
    (0.05, false, true),
    (0.15, true, true),
    (0.25, true, true),
    (0.15, true, true),
    (0.04, false, true),
    (0.20, true, true),
    (0.05, false, false),
];

/// A share `p` estimated from `n` cases plus three of its Monte Carlo standard errors: what a
/// simulated error rate is asserted with (estimate + 3 SE ≤ the claim), so a rate that passes
/// is below the claim with high confidence, not merely not provably above it.
pub fn bound(p: f64, n: usize) -> f64 {
    p + 3.0 * (p * (1.0 - p) / n as f64).sqrt()
}

/// A share `p` from `n` cases minus three standard errors: what a simulated power is asserted
/// with (estimate − 3 SE ≥ the claim).
pub fn lower(p: f64, n: usize) -> f64 {
    p - 3.0 * (p * (1.0 - p) / n as f64).sqrt()
}
