//! `tune`'s search and confirmation simulated on synthetic spaces, for its claims (the unit tests
//! below assert them; `examples/tune_sim.rs` prints them for seeds of one's choosing).
//!
//! A space is a baseline of capacity 1 and candidates of known true ratios to it. Each
//! measurement at fidelity f (in probes; the confirmation's at `FULL`) is the truth times a
//! log-normal error: its own, of SD σ/√2 · √(1 + (P² − 1)/f), so a probe spreads P times a
//! full measurement, and a level shared by everything measured at the same time (SD σ/√2: a
//! confirmation round's, which the blocks cancel; in the search each candidate has its own);
//! with chance `PAUSED` a measurement is GC-paused and comes out ×`PAUSE`. σ is one
//! confirmation round's log-ratio SD, drawn per space between `SPREAD`'s ends (this project's
//! rounds: bench/results/seeds.md, 9–25 %).

use super::normal;
use super::sequential::Look;
use super::tune::{Answer, Confirmation, answer, best, cost, going_on, precision, stages};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// One confirmation round's log-ratio SD, drawn uniformly between these per space.
pub const SPREAD: (f64, f64) = (0.09, 0.25);
/// How many times a probe spreads more than a full measurement.
pub const PROBE: f64 = 2.0;
/// The chance a measurement is GC-paused, and what it does to the figure.
pub const PAUSED: f64 = 0.1;
pub const PAUSE: f64 = 0.75;
/// The confirmation's fidelity, in probes.
pub const FULL: usize = 9;

/// How a simulated tune is set.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub eta: usize,
    pub finalists: usize,
    pub alpha: f64,
    pub effect: f64,
    /// The confirmation's first and last look (rounds).
    pub min: usize,
    pub max: usize,
}

/// The setting the claims hold for, tuned on seeds 7201 and on (bench/results/tune.md): halving
/// by two (by three lost the planted candidate in the search 23 % of the time), two finalists
/// (three split α further and decided fewer), up to 30 rounds (20 left 7 % of the planted
/// candidates open). The search weighs every measurement of a candidate by its precision
/// (`tune::precision`).
pub const SETUP: Setup = Setup {
    eta: 2,
    finalists: 2,
    alpha: 0.05,
    effect: 0.05,
    min: 3,
    max: 30,
};

/// What one simulated tune came to.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The candidates the search sent to the confirmation.
    pub finalists: Vec<usize>,
    /// The candidate recommended (its index in the space) and the confirmation's look at it.
    pub recommended: Option<(usize, Look)>,
    pub nothing_better: bool,
    /// The true ratio of the candidate the search ranked first, and the ratio its own last
    /// measurement showed against the baseline's truth: how much the search overstated.
    pub search_best: (f64, f64),
    /// The budget spent, in probes: the search's, then the confirmation's.
    pub probes: (usize, usize),
}

fn measure(rng: &mut Pcg64Mcg, truth: f64, fidelity: usize, sigma: f64, level: f64) -> f64 {
    let own = sigma / 2f64.sqrt() * (1.0 + (PROBE * PROBE - 1.0) / fidelity as f64).sqrt();
    let paused = if rng.random::<f64>() < PAUSED { PAUSE } else { 1.0 };
    truth * (level + own * normal(rng)).exp() * paused
}

/// A search and confirmation over the space `truth` (candidates' true ratios to the baseline),
/// higher being better, at round spread `sigma`.
pub fn tune(rng: &mut Pcg64Mcg, truth: &[f64], sigma: f64, setup: Setup) -> Outcome {
    let plan = stages(truth.len(), setup.eta, setup.finalists);
    let mut alive: Vec<usize> = (0..truth.len()).collect();
    let mut last = vec![f64::NAN; truth.len()];
    // Every measurement of a candidate so far, on the log scale, weighted by its precision.
    let mut sums = vec![(0.0f64, 0.0f64); truth.len()];
    for (at, stage) in plan.iter().enumerate() {
        let w = precision(stage.fidelity, PROBE);
        let scores: Vec<f64> = alive
            .iter()
            .map(|&c| {
                let level = sigma / 2f64.sqrt() * normal(rng);
                let m = measure(rng, truth[c], stage.fidelity, sigma, level);
                last[c] = m;
                sums[c].0 += w * m.ln();
                sums[c].1 += w;
                sums[c].0 / sums[c].1
            })
            .collect();
        alive = best(&scores, going_on(&plan, at, setup.finalists))
            .into_iter()
            .map(|i| alive[i])
            .collect();
    }
    let top = alive[0];
    let confirm = Confirmation::new(setup.alpha, alive.len(), setup.min, setup.max, setup.effect, true);
    let (mut rounds, mut looks) = (Vec::new(), Vec::new());
    while confirm.goes_on(rounds.len(), &looks) {
        let level = sigma / 2f64.sqrt() * normal(rng);
        let mut round = vec![measure(rng, 1.0, FULL, sigma, level)];
        round.extend(alive.iter().map(|&c| measure(rng, truth[c], FULL, sigma, level)));
        rounds.push(round);
        looks = confirm.looks(&rounds, &looks);
    }
    let (recommended, nothing_better) = match answer(&looks, true) {
        Answer::Recommend(i, l) => (Some((alive[i], l)), false),
        Answer::NothingBetter => (None, true),
        Answer::Open => (None, false),
    };
    Outcome {
        probes: (cost(&plan), rounds.len() * (alive.len() + 1) * FULL),
        finalists: alive,
        recommended,
        nothing_better,
        search_best: (truth[top], if last[top].is_nan() { 1.0 } else { last[top] }),
    }
}

/// "Best of single runs" on `probes` of budget: the baseline and every candidate measured once
/// at the fidelity the budget affords (at least a probe), the best kept when it beats the
/// baseline's run by more than `effect`. Its pick's true ratio and the ratio it showed.
pub fn best_of_single_runs(
    rng: &mut Pcg64Mcg,
    truth: &[f64],
    sigma: f64,
    probes: usize,
    effect: f64,
) -> Option<(usize, f64, f64)> {
    let fidelity = (probes / (truth.len() + 1)).max(1);
    let mut run = |t: f64| {
        let level = sigma / 2f64.sqrt() * normal(rng);
        measure(rng, t, fidelity, sigma, level)
    };
    let base = run(1.0);
    let runs: Vec<f64> = truth.iter().map(|&t| run(t)).collect();
    let top = best(&runs, 1)[0];
    let shown = runs[top] / base;
    (shown > 1.0 + effect).then_some((top, truth[top], shown))
}

/// A space of `n` candidates: one `ratio` times the baseline (at a random place), the others
/// log-uniform between `others`' ends.
pub fn space(rng: &mut Pcg64Mcg, n: usize, ratio: Option<f64>, others: (f64, f64)) -> Vec<f64> {
    let (lo, hi) = (others.0.ln(), others.1.ln());
    let mut truth: Vec<f64> = (0..n).map(|_| (lo + (hi - lo) * rng.random::<f64>()).exp()).collect();
    if let Some(r) = ratio {
        let at = rng.random_range(0..n);
        truth[at] = r;
    }
    truth
}

/// Rates over `spaces` simulated tunes from `seed`: 20–30 candidates, one ×`ratio` (if any),
/// the others between `others`' ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rates {
    pub spaces: usize,
    /// A recommendation of any candidate; of the planted one (`ratio`).
    pub recommended: f64,
    pub planted: f64,
    /// The planted candidate among the finalists.
    pub planted_final: f64,
    pub nothing_better: f64,
    /// Recommendations whose interval held the candidate's true ratio.
    pub covered: f64,
    /// The mean of the search's best figure over its truth (geometric), and of the single
    /// runs' pick over its truth.
    pub search_overstated: f64,
    pub single_recommended: f64,
    pub single_overstated: f64,
    /// Mean probes spent: search, confirmation.
    pub probes: (f64, f64),
}

pub fn rates(seed: u64, spaces: usize, ratio: Option<f64>, others: (f64, f64), setup: Setup) -> Rates {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut r = Rates {
        spaces,
        ..Rates::default()
    };
    let (mut recommended, mut covered, mut over, mut single_over, mut singles) = (0usize, 0usize, 0.0, 0.0, 0usize);
    for _ in 0..spaces {
        let n = rng.random_range(20..=30);
        let truth = space(&mut rng, n, ratio, others);
        let planted = ratio.and_then(|p| truth.iter().position(|&t| t == p));
        let sigma = SPREAD.0 + (SPREAD.1 - SPREAD.0) * rng.random::<f64>();
        let o = tune(&mut rng, &truth, sigma, setup);
        if let Some((c, l)) = o.recommended {
            recommended += 1;
            r.planted += (Some(c) == planted) as usize as f64;
            covered += (l.ci.0 <= truth[c] && truth[c] <= l.ci.1) as usize;
        }
        r.planted_final += planted.is_some_and(|p| o.finalists.contains(&p)) as usize as f64;
        r.nothing_better += o.nothing_better as usize as f64;
        over += (o.search_best.1 / o.search_best.0).ln();
        r.probes.0 += o.probes.0 as f64;
        r.probes.1 += o.probes.1 as f64;
        if let Some((_, t, shown)) = best_of_single_runs(&mut rng, &truth, sigma, o.probes.0 + o.probes.1, setup.effect)
        {
            singles += 1;
            single_over += (shown / t).ln();
        }
    }
    let n = spaces as f64;
    r.recommended = recommended as f64 / n;
    r.planted /= n;
    r.planted_final /= n;
    r.nothing_better /= n;
    r.covered = covered as f64 / recommended.max(1) as f64;
    r.search_overstated = (over / n).exp();
    r.single_recommended = singles as f64 / n;
    r.single_overstated = (single_over / singles.max(1) as f64).exp();
    r.probes = (r.probes.0 / n, r.probes.1 / n);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{bound, lower};

    /// The claims, on seeds 7301 and on (tuning: 7201 and on, `examples/tune_sim.rs`); each
    /// may fail by chance in about 1 run in 700 (3 Monte Carlo SEs, one-sided).
    const SPACES: usize = 1_500;

    #[test]
    fn one_candidate_far_better_is_recommended_and_its_interval_holds_it() {
        let r = rates(7301, SPACES, Some(1.3), (0.6, 1.02), SETUP);
        assert!(lower(r.planted, SPACES) >= 0.80, "{r:?}");
        // (c) the confirmed interval covers the true ratio.
        let n = (r.recommended * SPACES as f64) as usize;
        assert!(lower(r.covered, n) >= 0.95, "{r:?}");
        // The search's own best figure overstated its candidate; the confirmation's did not
        // need to.
        assert!(r.search_overstated > 1.0, "{r:?}");
    }

    #[test]
    fn nothing_better_than_two_percent_is_rarely_recommended_where_best_of_single_runs_always_is() {
        let r = rates(7302, SPACES, None, (0.98, 1.02), SETUP);
        assert!(bound(r.recommended, SPACES) <= 0.05, "{r:?}");
        // The same budget on the best of single runs recommends a candidate most of the time,
        // overstating it: the setting that must fail the claim does.
        assert!(lower(r.single_recommended, SPACES) > 0.05, "{r:?}");
        assert!(r.single_overstated > 1.05, "{r:?}");
    }

    #[test]
    fn without_a_shared_error_the_claim_fails() {
        // Each finalist at the whole α, no Pocock looks: a wrong setting must fail (b).
        let loose = Setup { alpha: 0.5, ..SETUP };
        let r = rates(7303, SPACES, None, (0.98, 1.02), loose);
        assert!(bound(r.recommended, SPACES) > 0.05, "{r:?}");
    }
}
