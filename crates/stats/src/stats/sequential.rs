//! Decisions made after every round of repeats that stay valid however often they are looked at.
//!
//! A comparison of a variant B with the baseline A on one metric looks at the ratio of their
//! geometric means through a `ratio::LogRatio`: in an experiment's blocks, the mean of each
//! round's log-ratio with Student's t on n − 1 degrees of freedom (plus those of a borrowed
//! variance, `ratio::Prior`); for repeats not run in blocks, Welch's standard error with the
//! conservative degrees of freedom min(n_a, n_b) − 1. Looking after every round and stopping at
//! the first interval that excludes "no change" would inflate the false alarms several-fold
//! (five looks at 5 % each: about 14 %), so every look uses one smaller level, as Pocock's
//! (1977) boundary does: the level at which the t-statistics looked at after rounds `min..=max`
//! cross their bound at any look with probability α/m, m the comparisons that share the error
//! (Bonferroni). It is found by simulating those statistics (`pocock_level`): exactly the paired
//! design's (a one-sample t of the log-ratios, with a borrowed variance's degrees of freedom
//! when there is one), and the worst case of the unpaired one. The simulation tests below check
//! the whole procedure, borrowed variances off by a factor included.
//!
//! At a look, the comparison is **better** or **worse** when the 1 − α_k interval of d excludes
//! 0; **equivalent** when the 1 − 2α_k interval lies within ±ln(1 + effect) (two one-sided tests,
//! Schuirmann 1987: "no difference larger than the effect"); otherwise **open**. A difference
//! that is sure and also inside ±effect is better or worse *within the band* (`Look::within_band`):
//! real, and smaller than what matters. A decision is final: later rounds do not look at it again.

use serde::{Deserialize, Serialize};
use std::sync::Mutex;

use super::ratio::LogRatio;
use super::t_quantile;

/// What a comparison came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Better,
    Worse,
    /// No difference larger than the effect, either way.
    Equivalent,
    /// Not decided yet.
    Open,
}

impl Decision {
    pub fn name(self) -> &'static str {
        match self {
            Decision::Better => "better",
            Decision::Worse => "worse",
            Decision::Equivalent => "equivalent",
            Decision::Open => "open",
        }
    }

    pub fn decided(self) -> bool {
        self != Decision::Open
    }
}

/// How an experiment looks at its comparisons: the error all of them share, how many share it,
/// and the rounds between which it looks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The chance of any wrong call, over every look and comparison (0.05).
    pub alpha: f64,
    /// Comparisons sharing `alpha` (primary metrics × variants other than the baseline).
    pub comparisons: usize,
    /// The first look (rounds; at least 3: Student's t at fewer degrees of freedom is too far
    /// from the normal the level was found for).
    pub min: usize,
    /// The last look.
    pub max: usize,
    /// The two-sided level every look uses (Pocock's for these looks), without a borrowed
    /// variance; `level_for` gives it with one.
    pub level: f64,
}

impl Design {
    pub fn new(alpha: f64, comparisons: usize, min: usize, max: usize) -> Design {
        let min = min.max(3);
        let max = max.max(min);
        let comparisons = comparisons.max(1);
        let mut d = Design {
            alpha,
            comparisons,
            min,
            max,
            level: 0.0,
        };
        d.level = d.level_for(0.0);
        d
    }

    /// The per-look level when the variance borrows `prior_df` degrees of freedom (0: none).
    pub fn level_for(&self, prior_df: f64) -> f64 {
        let looks: Vec<usize> = (self.min..=self.max).collect();
        let share = if looks.len() > 1 { LEVEL_SHARE } else { 1.0 };
        pocock_level(
            self.alpha / self.comparisons as f64 * share,
            &looks,
            prior_df.round() as usize,
        )
    }

    /// The two-sided level of the look after `round` rounds (0 for a round that is not a look),
    /// for an estimate borrowing `prior_df` degrees of freedom. A fixed number of repeats is a
    /// design with one look (`min == max`): all of α/m.
    pub fn spend(&self, round: usize, prior_df: f64) -> f64 {
        if round < self.min || round > self.max {
            0.0
        } else if prior_df > 0.0 {
            self.level_for(prior_df)
        } else {
            self.level
        }
    }
}

/// The share of α/m a design of several looks is simulated for. The paired design's
/// statistic is exactly the one simulated, so at all of α/m its error would be α/m itself, give
/// or take the simulation's own Monte Carlo error and real log-ratios' departures from the
/// normal; at 85 % it stays provably below (the tests assert the rate plus three Monte Carlo
/// standard errors against α/m).
pub const LEVEL_SHARE: f64 = 0.85;

/// What a level is found for: α's bits, the first and last look, the borrowed degrees of freedom.
type LevelKey = (u64, usize, usize, usize);

/// Levels already found: each takes a simulation.
static LEVELS: Mutex<Vec<(LevelKey, f64)>> = Mutex::new(Vec::new());

/// The per-look two-sided level at which a sequence of t-statistics looked at after `looks`
/// rounds crosses its bound at any look with probability `alpha`. The sequence simulated is the
/// one-sample t of the log-ratios (n − 1 degrees of freedom at n rounds, plus `prior_df` when a
/// variance estimated on that many degrees of freedom is pooled in): the paired design's own
/// statistic, and the worst case of Welch's with the conservative degrees of freedom (when one
/// side's spread dwarfs the other's; with comparable spreads it crosses less often). Found by
/// bisection on 40,000 simulated paths (fixed seed), so it is the same on every machine.
fn pocock_level(alpha: f64, looks: &[usize], prior_df: usize) -> f64 {
    if looks.len() <= 1 {
        return alpha;
    }
    let key = (alpha.to_bits(), looks[0], looks[looks.len() - 1], prior_df);
    if let Some(&(_, l)) = LEVELS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return l;
    }
    let level = simulate_level(alpha, looks, prior_df);
    LEVELS.lock().unwrap_or_else(|e| e.into_inner()).push((key, level));
    level
}

/// How many times the variance a calibration measured the rounds' true variance may be that
/// the level with a borrowed variance is simulated for, the worst of them taken: the check
/// (`ratio::checked`) refuses a prior today's rounds outgrow, and the level covers the looks
/// before it can tell.
pub const BORROW_RANGE: [f64; 6] = [0.5, 1.0, 2.0, 4.0, 9.0, 18.0];

fn simulate_level(alpha: f64, looks: &[usize], prior_df: usize) -> f64 {
    use rand::{Rng, SeedableRng};
    const PATHS: usize = 40_000;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x90c0c);
    let mut normal = move || {
        // A normal variate (Box–Muller, one of the pair).
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let df0 = prior_df as f64;
    // Without a prior, the one case; with one, each true variance the range allows.
    let offs: &[f64] = if prior_df == 0 { &[1.0] } else { &BORROW_RANGE };
    // |t| of every path at every look, with whether the prior was borrowed there, per case.
    let bounds: Vec<f64> = looks
        .iter()
        .map(|&n| super::ratio::f_bound(n as f64 - 1.0, df0))
        .collect();
    let mut cases: Vec<Vec<(f64, bool)>> = Vec::with_capacity(offs.len());
    for &off in offs {
        let mut t = Vec::with_capacity(PATHS * looks.len());
        for _ in 0..PATHS {
            // The borrowed variance: an estimate on df0 degrees of freedom of a variance `off`
            // times smaller than the true one (1).
            let prior = (0..prior_df).map(|_| normal().powi(2)).sum::<f64>() / df0.max(1.0) / off;
            let (mut sum, mut squares, mut at) = (0.0f64, 0.0f64, 0usize);
            for (&n, &bound) in looks.iter().zip(&bounds) {
                for _ in at..n {
                    let x = normal();
                    sum += x;
                    squares += x * x;
                }
                at = n;
                let m = sum / n as f64;
                let own_df = n as f64 - 1.0;
                let own = (squares - n as f64 * m * m).max(0.0) / own_df;
                let (var, borrowed) = if prior_df == 0 {
                    (own, false)
                } else {
                    let (v, _, b) = super::ratio::checked_at(own, own_df, prior, df0, bound);
                    (v, b)
                };
                t.push((
                    if var > 0.0 {
                        m.abs() / (var / n as f64).sqrt()
                    } else {
                        0.0
                    },
                    borrowed,
                ));
            }
        }
        cases.push(t);
    }
    let crossed = |level: f64| {
        let q: Vec<(f64, f64)> = looks
            .iter()
            .map(|&n| {
                let own = n as f64 - 1.0;
                (
                    t_quantile(1.0 - level / 2.0, own),
                    t_quantile(1.0 - level / 2.0, df0 + own),
                )
            })
            .collect();
        cases
            .iter()
            .map(|t| {
                t.chunks_exact(looks.len())
                    .filter(|path| {
                        path.iter()
                            .zip(&q)
                            .any(|((t, borrowed), q)| *t > if *borrowed { q.1 } else { q.0 })
                    })
                    .count() as f64
                    / PATHS as f64
            })
            .fold(0.0, f64::max)
    };
    // Between a Bonferroni split over the looks (crosses at most alpha) and alpha itself.
    let (mut lo, mut hi) = (alpha / looks.len() as f64, alpha);
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if crossed(mid) > alpha { hi = mid } else { lo = mid }
    }
    lo
}

/// One look at one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Look {
    pub decision: Decision,
    /// The ratio of geometric means, B / A.
    pub ratio: f64,
    /// Its interval at this look's level (1 − α_k).
    pub ci: (f64, f64),
    /// The error this look spent.
    pub alpha: f64,
    /// Better or worse, and surely inside ±effect: a real difference smaller than what matters.
    pub within_band: bool,
}

/// Looks at an estimate after `round` rounds. `effect` is the smallest difference that matters
/// (0.05: 5 %); `higher_is_better` says which way is better.
pub fn look(design: &Design, round: usize, est: &LogRatio, effect: f64, higher_is_better: bool) -> Look {
    let alpha = design.spend(round, est.offered_df);
    decide(est.d, est.se, est.df, alpha, effect, higher_is_better)
}

/// The decision on a log-ratio `d` with standard error `se` on `df` degrees of freedom at the
/// two-sided level `alpha` (0: no look, open).
pub fn decide(d: f64, se: f64, df: f64, alpha: f64, effect: f64, higher_is_better: bool) -> Look {
    if alpha <= 0.0 {
        return Look {
            decision: Decision::Open,
            ratio: d.exp(),
            ci: (f64::NAN, f64::NAN),
            alpha,
            within_band: false,
        };
    }
    let half = |a: f64| {
        if se > 0.0 {
            t_quantile(1.0 - a / 2.0, df) * se
        } else {
            0.0
        }
    };
    let (wide, narrow) = (half(alpha), half(2.0 * alpha));
    decide_on(
        d,
        (d - wide, d + wide),
        (d - narrow, d + narrow),
        alpha,
        effect,
        higher_is_better,
    )
}

/// The decision on a log-ratio `d` whose two-sided interval at level 1 − α is `wide` and at
/// 1 − 2α is `narrow` (log scale; any interval, a posterior's included): better or worse when
/// `wide` excludes 0, equivalent when `narrow` lies inside ±effect (two one-sided tests).
pub fn decide_on(
    d: f64,
    wide: (f64, f64),
    narrow: (f64, f64),
    alpha: f64,
    effect: f64,
    higher_is_better: bool,
) -> Look {
    let (lo, hi) = wide;
    let margin = (1.0 + effect).ln();
    let inside = narrow.0 > -margin && narrow.1 < margin;
    let decision = if lo > 0.0 || hi < 0.0 {
        if (lo > 0.0) == higher_is_better {
            Decision::Better
        } else {
            Decision::Worse
        }
    } else if inside {
        Decision::Equivalent
    } else {
        Decision::Open
    };
    Look {
        decision,
        ratio: d.exp(),
        ci: (lo.exp(), hi.exp()),
        alpha,
        within_band: inside && matches!(decision, Decision::Better | Decision::Worse),
    }
}

/// The one-sided confidence of the bound on the spread that "about N repeats" is sized at.
pub const VAR_QUANTILE: f64 = 0.90;

/// How much larger than an estimate on `df` degrees of freedom a variance is at its
/// `VAR_QUANTILE` upper confidence bound: df / χ²(1 − VAR_QUANTILE; df).
fn upper_variance_factor(df: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    ChiSquared::new(df.max(1.0))
        .map(|c| df.max(1.0) / c.inverse_cdf(1.0 - VAR_QUANTILE))
        .unwrap_or(1.0)
}

/// The power "about N repeats would decide it" is sized for.
pub const POWER: f64 = 0.80;

/// About how many rounds (repeats per variant) would decide an open comparison with
/// probability `POWER`, were the difference and spread measured so far the truth: the fewest n
/// at which the expected difference stands `POWER`'s quantile beyond the bound of "differs"
/// (t₁₋α/₂ + t_power standard errors) or the expected interval fits inside ±effect with the same
/// room. None beyond `limit`. (Sized so, it decides by N in at least 80 % of simulated
/// experiments; sized at the bound alone, as it was, in about 57 %.)
pub fn repeats_needed(design: &Design, est: &LogRatio, effect: f64, limit: usize) -> Option<usize> {
    let (na, nb) = (est.n.0 as f64, est.n.1 as f64);
    // The standard deviation of one round's log-ratio (or, unpaired, of one repeat per side's
    // difference): what n rounds divide by √n.
    let per = if est.paired {
        est.se * na.sqrt()
    } else {
        est.se * (na * nb / (na + nb) * 2.0).sqrt()
    };
    let alpha = design.level_for(est.offered_df);
    let margin = (1.0 + effect).ln();
    let d = est.d.abs();
    // The spread measured so far is itself an estimate, on few degrees of freedom at a first
    // look: sized at it, "N" decided by N in about 57 % of simulated experiments. Sized at an
    // upper confidence bound of it (the variance's VAR_QUANTILE bound), it holds `POWER`.
    let per = per * upper_variance_factor(est.df).sqrt();
    (2..=limit).find(|&n| {
        let se_n = per / (n as f64).sqrt();
        // The degrees of freedom the look will use with n rounds (min(n) − 1 unpaired).
        let df = (n - 1) as f64 + est.borrowed_df;
        let z = t_quantile(POWER, df);
        let differs = (t_quantile(1.0 - alpha / 2.0, df) + z) * se_n < d;
        let inside = d + (t_quantile(1.0 - alpha, df) + z) * se_n < margin;
        differs || inside
    })
}

/// The chance that `design`'s looks decide a paired comparison by each round (index 0: round
/// 1), when the true log-ratio is `d` > 0 (better, higher being better) and one round's
/// log-ratio has the standard deviation `sd`: simulated, `runs` experiments from `seed`, the
/// design's own levels (no borrowed variance). What a plan is sized by: a fixed-sample formula
/// at 80 % power left the sequential design deciding by that round in 53–58 % of cases.
pub fn chance_decided(design: &Design, d: f64, sd: f64, effect: f64, runs: usize, seed: u64) -> Vec<f64> {
    use rand::SeedableRng;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut by = vec![0usize; design.max];
    for _ in 0..runs {
        let (mut sum, mut squares) = (0.0f64, 0.0f64);
        for round in 1..=design.max {
            let x = d + sd * super::normal(&mut rng);
            sum += x;
            squares += x * x;
            let alpha = design.spend(round, 0.0);
            if alpha <= 0.0 || round < 2 {
                continue;
            }
            let n = round as f64;
            let m = sum / n;
            let var = ((squares - n * m * m) / (n - 1.0)).max(0.0);
            if decide(m, (var / n).sqrt(), n - 1.0, alpha, effect, true)
                .decision
                .decided()
            {
                by[round - 1..].iter_mut().for_each(|b| *b += 1);
                break;
            }
        }
    }
    by.iter().map(|&b| b as f64 / runs as f64).collect()
}

/// The fewest rounds by which `design` decides a true difference of `effect` (one round's
/// log-ratio of SD `sd`) with probability `POWER`, and that probability; the design's last
/// round and its probability when none reaches it. 2,000 simulated experiments.
pub fn rounds_to_decide(design: &Design, sd: f64, effect: f64) -> (usize, f64) {
    let chance = chance_decided(design, (1.0 + effect).ln(), sd, effect, 2_000, 0x5e9);
    (design.min..=design.max)
        .find(|&n| chance[n - 1] >= POWER)
        .map_or((design.max, chance[design.max - 1]), |n| (n, chance[n - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ratio::{self, Prior};
    use crate::stats::sim::{bound, lower, normal};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    /// How one simulated experiment's rounds are made and analysed.
    #[derive(Clone, Copy)]
    struct Sim {
        /// B's true ratio to A.
        ratio: f64,
        /// Each step's own spread (log scale), A's and B's.
        cv: (f64, f64),
        /// A level both steps of a round share, log scale (pairing cancels it exactly).
        drift: f64,
        /// Analysed in blocks (paired), or unpaired as caplab did before blocks.
        paired: bool,
        effect: f64,
        /// A borrowed variance: its degrees of freedom and how far the truth is from it (the
        /// true variance of a round's log-ratio is `off` times the one borrowed).
        prior: Option<(f64, f64)>,
        /// The wrong setting: the prior borrowed unchecked, as it was before the check.
        unchecked: bool,
    }

    impl Sim {
        fn aa(cv: f64) -> Sim {
            Sim {
                ratio: 1.0,
                cv: (cv, cv),
                drift: 0.10,
                paired: true,
                effect: 0.05,
                prior: None,
                unchecked: false,
            }
        }

        fn estimate(&self, pairs: &[(f64, f64)], prior: Option<&Prior>) -> Option<LogRatio> {
            if let (true, Some(p)) = (self.unchecked, prior) {
                let own = ratio::paired(pairs, None)?;
                let n = pairs.len() as f64;
                let var = (p.df * p.variance * ratio::BORROW_SAFETY + own.df * own.se.powi(2) * n) / (p.df + own.df);
                return Some(LogRatio {
                    se: (var / n).sqrt(),
                    df: p.df + own.df,
                    borrowed_df: p.df,
                    offered_df: p.df,
                    ..own
                });
            }
            if self.paired {
                ratio::paired(pairs, prior)
            } else {
                let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
                ratio::unpaired(&a, &b, true)
            }
        }

        /// Rounds added one at a time, looked at after each, until a decision or the last
        /// round: the decision and its round, and the estimate at each round (for sizing).
        fn run(&self, design: &Design, rng: &mut Pcg64Mcg) -> (Decision, usize, Vec<(f64, f64)>) {
            let prior = self.prior.map(|(df, off)| {
                // A calibration's estimate of the variance of a round's log-ratio, on df
                // degrees of freedom, of a variance `off` times smaller than the truth.
                let truth = self.cv.0.powi(2) + self.cv.1.powi(2);
                let chi: f64 = (0..df as usize).map(|_| normal(rng).powi(2)).sum::<f64>() / df;
                Prior {
                    variance: truth / off * chi,
                    df,
                    source: "simulated".into(),
                }
            });
            let mut pairs = Vec::new();
            for round in 1..=design.max {
                let level = 1000.0 * (self.drift * normal(rng)).exp();
                pairs.push((
                    level * (self.cv.0 * normal(rng)).exp(),
                    level * self.ratio * (self.cv.1 * normal(rng)).exp(),
                ));
                if let Some(est) = self.estimate(&pairs, prior.as_ref())
                    && pairs.len() >= 2
                {
                    let l = look(design, round, &est, self.effect, true);
                    if l.decision.decided() {
                        return (l.decision, round, pairs);
                    }
                }
            }
            (Decision::Open, design.max, pairs)
        }
    }

    /// The share of `runs` simulated experiments that came to one of `which`, spreads from
    /// 3 % to 20 % across them.
    fn share(design: &Design, runs: usize, sim: Sim, which: &[Decision], seed: u64) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..runs)
            .filter(|i| {
                let cv = 0.03 + 0.17 * (*i as f64 / runs as f64);
                let s = Sim {
                    cv: (cv * sim.cv.0, cv * sim.cv.1),
                    ..sim
                };
                which.contains(&s.run(design, &mut rng).0)
            })
            .count() as f64
            / runs as f64
    }

    const DIFFERS: [Decision; 2] = [Decision::Better, Decision::Worse];

    #[test]
    fn every_look_uses_pococks_level_and_one_look_all_of_alpha() {
        // With t at many degrees of freedom the level nears Pocock's for z (Jennison & Turnbull,
        // table 2.1: 5 equally spaced looks at α 0.05, a nominal 0.0158); with few it is lower.
        let five = pocock_level(0.05, &[40, 80, 120, 160, 200], 0);
        assert!((five - 0.0158).abs() < 0.0015, "{five}");
        let small = pocock_level(0.05, &[3, 4, 5, 6, 7], 0);
        assert!(small < five && small > 0.01, "{small}");
        // A borrowed variance's level covers today's variance up to 18 times the calibration's,
        // so it is lower, but its degrees of freedom make the first look's bound far smaller.
        let borrowed = pocock_level(0.05, &[3, 4, 5, 6, 7], 20);
        let first = |level: f64, df: f64| t_quantile(1.0 - level / 2.0, df);
        assert!(first(borrowed, 22.0) < first(small, 2.0) / 2.0, "{borrowed} {small}");
        let d = Design::new(0.05, 2, 3, 12);
        assert_eq!((d.spend(2, 0.0), d.spend(13, 0.0)), (0.0, 0.0));
        assert_eq!(Design::new(0.05, 1, 2, 6).min, 3, "never before three repeats");
        // Ten correlated looks: more than a Bonferroni split of α/m over them, less than one look.
        assert!(
            d.spend(3, 0.0) == d.level && d.level > 0.025 / 10.0 && d.level < 0.025 / 2.0,
            "{d:?}"
        );
        // A fixed number of repeats: one look, all of it.
        assert!((Design::new(0.05, 1, 5, 5).spend(5, 0.0) - 0.05).abs() < 1e-12);
    }

    /// 10,000 A/A experiments in blocks, spreads 3–20 %, a level each round's two steps share
    /// (10 %; pairing cancels it exactly, so it tests the unpaired analysis only: a drift
    /// *within* rounds and correlated rounds are simulated through the plan's order in
    /// `experiment::plan`'s tests), looked at after every round from 3 to 12: a difference is
    /// declared at most 5 % of the time, asserted as the rate plus three Monte Carlo standard errors (the level is simulated
    /// for 85 % of α, so the rate is about 4.3 %). Unpaired with the conservative degrees of
    /// freedom, sides with different spreads (3 % against 20 %): the same. Seeds 11 and 16
    /// (the level's own simulation uses another).
    #[test]
    fn a_a_experiments_looked_at_every_round_rarely_find_a_difference() {
        let d = Design::new(0.05, 1, 3, 12);
        let runs = 10_000;
        let paired = share(&d, runs, Sim::aa(1.0), &DIFFERS, 11);
        eprintln!(
            "A/A in blocks: a difference declared in {:.2} % of {runs}",
            paired * 100.0
        );
        assert!(bound(paired, runs) <= 0.05, "{paired}");
        let uneven = Sim {
            cv: (0.15, 1.0),
            drift: 0.0,
            paired: false,
            ..Sim::aa(1.0)
        };
        let unpaired = share(&d, runs, uneven, &DIFFERS, 16);
        eprintln!(
            "A/A unpaired, spreads 1:7: a difference declared in {:.2} % of {runs}",
            unpaired * 100.0
        );
        assert!(bound(unpaired, runs) <= 0.05, "{unpaired}");
    }

    /// The same check fails a procedure that looks after every round at the one-look level
    /// (the error Pocock's boundary exists to prevent): the rate is well above 5 %.
    #[test]
    fn looking_every_round_at_the_one_look_level_would_fail_the_check() {
        let naive = Design {
            level: 0.05,
            ..Design::new(0.05, 1, 3, 12)
        };
        let runs = 4_000;
        let rate = share(&naive, runs, Sim::aa(1.0), &DIFFERS, 12);
        eprintln!("A/A at 5 % per look: {:.2} %", rate * 100.0);
        assert!(bound(rate, runs) > 0.05 && rate > 0.10, "{rate}");
    }

    /// 10,000 experiments where B is 10 % faster (or slower), spreads 3–20 %, effect ±5 %:
    /// declared equivalent at most 5 % of the time; at the margin itself (5 % apart) too.
    #[test]
    fn a_ten_percent_difference_is_rarely_called_equivalent_within_five() {
        let d = Design::new(0.05, 1, 3, 12);
        let runs = 10_000;
        let eq = [Decision::Equivalent];
        for (ratio, seed) in [(1.10, 13), (1.0 / 1.10, 14), (1.05, 15)] {
            let wrong = share(&d, runs, Sim { ratio, ..Sim::aa(1.0) }, &eq, seed);
            eprintln!(
                "x{ratio:.3}: called equivalent within ±5 % in {:.2} % of {runs}",
                wrong * 100.0
            );
            assert!(bound(wrong, runs) <= 0.05, "x{ratio}: {wrong}");
        }
    }

    /// A borrowed variance keeps the error rate whatever the truth is, from half to 18 times it
    /// (a calibration of 9 degrees of freedom; 10,000 A/A experiments each, seeds 21–23 and
    /// 25–27): the rounds' own variance is checked against it (`ratio::checked`) and the level
    /// is simulated for the checked procedure at the worst of `BORROW_RANGE`. The wrong setting,
    /// the prior borrowed unchecked as before, declares a difference in far more than 5 % when
    /// the truth is 18 times it (4,000 experiments, seed 24).
    #[test]
    fn a_borrowed_variance_keeps_the_error_rate_within_its_stated_factor() {
        let d = Design::new(0.05, 1, 3, 12);
        let runs = 10_000;
        for (off, seed) in [(0.5, 21), (1.0, 22), (1.5, 23), (4.0, 25), (9.0, 26), (18.0, 27)] {
            let sim = Sim {
                prior: Some((9.0, off)),
                ..Sim::aa(1.0)
            };
            let rate = share(&d, runs, sim, &DIFFERS, seed);
            eprintln!(
                "A/A, today's variance {off} times the borrowed one: {:.2} %",
                rate * 100.0
            );
            assert!(bound(rate, runs) <= 0.05, "{off}: {rate}");
        }
        let wrong = Sim {
            prior: Some((9.0, 18.0)),
            unchecked: true,
            ..Sim::aa(1.0)
        };
        let rate = share(&d, 4_000, wrong, &DIFFERS, 24);
        eprintln!(
            "A/A, today's variance 18 times the borrowed one, unchecked: {:.2} %",
            rate * 100.0
        );
        assert!(lower(rate, 4_000) > 0.05, "{rate}");
    }

    /// Power, for the record (README states these): what the looks decide and how soon, in
    /// blocks, without and with a borrowed variance.
    #[test]
    fn large_differences_are_decided_early_and_no_difference_is_called_equivalent() {
        let d = Design::new(0.05, 2, 3, 12);
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let x15 = Sim {
            ratio: 1.5,
            cv: (0.10, 0.10),
            ..Sim::aa(1.0)
        };
        // ×1.5 at a 10 % spread: better, and by the sixth round in nine of ten experiments.
        let runs: Vec<(Decision, usize)> = (0..1000).map(|_| x15.run(&d, &mut rng)).map(|r| (r.0, r.1)).collect();
        let better = runs.iter().filter(|r| r.0 == Decision::Better).count();
        let by = |k: usize| runs.iter().filter(|r| r.0 == Decision::Better && r.1 <= k).count();
        eprintln!(
            "x1.5 at 10 %: better in {better} of 1000; by round 3, 4, 5, 6: {}, {}, {}, {}",
            by(3),
            by(4),
            by(5),
            by(6)
        );
        assert!(better >= 990 && by(6) >= 900, "{better} {}", by(6));
        // ×1.1 at a 5 % spread: better by round 12 in four of five.
        let x11 = Sim {
            ratio: 1.1,
            cv: (0.05, 0.05),
            ..Sim::aa(1.0)
        };
        let found = (0..1000)
            .filter(|_| x11.run(&d, &mut rng).0 == Decision::Better)
            .count();
        // ×1.2 at a 5 % spread, the first look: blind on its own 2 degrees of freedom, decided
        // in about a fifth of the experiments with a calibration's variance (9 df), whose level
        // covers today's variance up to 18 times the calibration's: 21 % against 8 %.
        let x12 = Sim { ratio: 1.2, ..x11 };
        let at3 = |sim: Sim, rng: &mut Pcg64Mcg| {
            (0..1000)
                .filter(|_| matches!(sim.run(&d, rng), (Decision::Better, 3, _)))
                .count()
        };
        let alone = at3(x12, &mut rng);
        let borrowed = at3(
            Sim {
                prior: Some((9.0, 1.0)),
                ..x12
            },
            &mut rng,
        );
        eprintln!(
            "x1.1 at 5 %: better in {found} of 1000; x1.2 at 5 %: better at the first look in {alone} alone, \
             {borrowed} with a calibration"
        );
        assert!(
            found >= 780 && alone < 150 && borrowed >= 150,
            "{found} {alone} {borrowed}"
        );
        // No difference at a 3 % spread with ±5 %: equivalent in more than half by round 12.
        let same = Sim {
            cv: (0.03, 0.03),
            ..Sim::aa(1.0)
        };
        let eq = (0..1000)
            .filter(|_| same.run(&d, &mut rng).0 == Decision::Equivalent)
            .count();
        eprintln!("no difference at 3 %: equivalent in {eq} of 1000");
        assert!(eq >= 550, "{eq}");
    }

    /// "About N repeats per variant would decide it", said after an open first look, decides
    /// by round N in at least 80 % of the experiments where it is said (N within the last
    /// look), asserted as the share minus three Monte Carlo standard errors; over true ratios of
    /// 1.00–1.12 and spreads of 3–8 % a round, 4,000 experiments. The bound on the spread
    /// (`VAR_QUANTILE`) was chosen on seed 41 (sized at the spread itself: 56 %; at its 80 %
    /// bound: 80 %; at its 90 % bound: 86 %); this test runs seed 43.
    #[test]
    fn the_repeats_said_to_decide_an_open_question_decide_it_four_times_in_five() {
        let d = Design::new(0.05, 1, 3, 30);
        let mut rng = Pcg64Mcg::seed_from_u64(43);
        let (mut said, mut decided) = (0, 0);
        for i in 0..4_000 {
            let ratio = [1.0, 1.02, 1.04, 1.07, 1.09, 1.12][i % 6];
            let cv = [0.03, 0.05, 0.08][(i / 6) % 3];
            let sim = Sim {
                ratio,
                cv: (cv, cv),
                ..Sim::aa(1.0)
            };
            let (decision, round, pairs) = sim.run(&d, &mut rng);
            if round == 3 {
                continue; // decided at the first look: nothing to size
            }
            let est = ratio::paired(&pairs[..3], None).unwrap();
            let Some(n) = repeats_needed(&d, &est, 0.05, d.max) else {
                continue;
            };
            said += 1;
            decided += usize::from(decision.decided() && round <= n);
        }
        let share = decided as f64 / said as f64;
        eprintln!("N said after round 3: decided by N in {:.1} % of {said}", share * 100.0);
        assert!(said > 500 && lower(share, said) >= 0.80, "{share} of {said}");
    }

    /// `n` values whose logs have mean `mu` and sample standard deviation `sd` exactly.
    fn exact(n: usize, mu: f64, sd: f64) -> Vec<f64> {
        let z: Vec<f64> = (0..n).map(|i| i as f64 - (n - 1) as f64 / 2.0).collect();
        let s = (z.iter().map(|v| v * v).sum::<f64>() / (n - 1) as f64).sqrt();
        z.iter().map(|v| (mu + sd * v / s).exp()).collect()
    }

    #[test]
    fn the_repeats_needed_shrink_as_the_difference_grows() {
        let d = Design::new(0.05, 1, 3, 12);
        let base = exact(4, 0.0, 0.0);
        let pairs = |ratio: f64| -> Vec<(f64, f64)> {
            base.iter()
                .zip(exact(4, f64::ln(ratio), 0.05))
                .map(|(a, b)| (*a, b))
                .collect()
        };
        let small = repeats_needed(&d, &ratio::paired(&pairs(1.04), None).unwrap(), 0.01, 500).unwrap();
        let large = repeats_needed(&d, &ratio::paired(&pairs(1.5), None).unwrap(), 0.01, 500).unwrap();
        assert!(large < small, "{large} {small}");
        assert!(large <= 4, "{large}");
    }

    #[test]
    fn a_sure_difference_inside_the_band_says_so() {
        let d = Design::new(0.05, 1, 5, 5);
        let pairs: Vec<(f64, f64)> = exact(5, 0.0, 0.0)
            .into_iter()
            .zip(exact(5, f64::ln(1.02), 0.002))
            .collect();
        let l = look(&d, 5, &ratio::paired(&pairs, None).unwrap(), 0.05, true);
        assert_eq!((l.decision, l.within_band), (Decision::Better, true), "{l:?}");
        let l = look(&d, 5, &ratio::paired(&pairs, None).unwrap(), 0.01, true);
        assert_eq!((l.decision, l.within_band), (Decision::Better, false), "{l:?}");
    }

    /// A plan's rounds decide as often as it says: sized by `rounds_to_decide`, a difference of
    /// exactly the effect is decided by that round in at least `POWER` of 4,000 fresh simulated
    /// experiments (estimate − 3 SE ≥ 0.8 − 0.04, the sizing's own 2,000-case error allowed; seed
    /// 7105). The fixed-sample rounds it replaces (the wrong setting) decide by their round in
    /// well under 80 %.
    #[test]
    fn plans_sized_by_the_sequential_design_decide_by_their_round() {
        let d = Design::new(0.05, 2, 3, 12);
        for sd in [0.03, 0.05, 0.08] {
            let effect = 0.05;
            let (n, chance) = rounds_to_decide(&d, sd, effect);
            let fresh = chance_decided(&d, (1.0f64 + effect).ln(), sd, effect, 4_000, 7105)[n - 1];
            let fixed = (3..=1000)
                .find(|&k| {
                    let df = (k - 1) as f64;
                    (t_quantile(1.0 - 0.025 / 2.0, df) + t_quantile(0.8, df)) * sd / (k as f64).sqrt()
                        <= (1.0f64 + effect).ln()
                })
                .unwrap();
            let at_fixed = chance_decided(&d, (1.0f64 + effect).ln(), sd, effect, 4_000, 7106)[fixed.min(d.max) - 1];
            eprintln!(
                "sd {:.0} %: sized {n} rounds ({:.1} % said, {:.1} % fresh); fixed-sample {fixed} rounds decide by then in {:.1} %",
                sd * 100.0,
                chance * 100.0,
                fresh * 100.0,
                at_fixed * 100.0
            );
            if chance >= POWER {
                assert!(lower(fresh, 4_000) >= POWER - 0.04, "{sd}: {fresh}");
            }
            if fixed <= d.max {
                assert!(
                    at_fixed < 0.7,
                    "{sd}: the fixed-sample plan {fixed} decided in {at_fixed}"
                );
            }
        }
    }
}
