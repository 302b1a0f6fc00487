//! Helpers the statistics' simulation tests share: a seeded normal variate and the Monte Carlo
//! bound an error rate is asserted with.

pub use super::normal;

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
