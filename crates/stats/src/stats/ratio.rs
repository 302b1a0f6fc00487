//! The ratio of two configurations on the log scale, where every figure compared (a rate, a
//! percentile, CPU per operation) is positive and its spread is a share of its level.
//!
//! - **Paired** (`paired`): when the variants ran in blocks (each round runs every variant once,
//!   in a random order), each round gives one log-ratio, ln(b_r) − ln(a_r); whatever moved the
//!   whole round (the machine's level, a neighbour) cancels in it. The estimate is their mean,
//!   Student's t on n − 1 degrees of freedom: exact for normal log-ratios.
//! - **Unpaired** (`unpaired`): repeats not run in blocks (results directories given by hand):
//!   Welch's t on the logs, with the Welch–Satterthwaite degrees of freedom for a fixed-sample
//!   interval, or the conservative min(n) − 1 for decisions looked at after every round.
//!
//! A `Prior` is a variance of one log-ratio known from elsewhere (an A/A calibration of the
//! same machine and configuration), with its degrees of freedom: `paired` combines it with the
//! rounds' own spread, so a first look at three rounds does not rest on 2 degrees of freedom.
//! The borrowed variance is inflated by `BORROW_SAFETY` first: decisions keep their error rates
//! while the true variance is at most that many times the calibration's (simulated in
//! `sequential`'s tests).

use serde::{Deserialize, Serialize};

use super::{mean, t_quantile, variance};

/// How much larger than a borrowed variance the true one may be with the error rates still
/// holding: the borrowed variance is multiplied by it before use.
pub const BORROW_SAFETY: f64 = 2.0;

/// A variance of one log-ratio (one round's ln b − ln a) known before the rounds, and how much
/// it is worth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prior {
    /// The variance as measured (before `BORROW_SAFETY`).
    pub variance: f64,
    /// Its degrees of freedom.
    pub df: f64,
    /// Where it comes from, for people (`calibration DIR, 9 df`).
    pub source: String,
}

/// A log-ratio's estimate: d = mean log-ratio (the ratio is e^d), its standard error and
/// degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogRatio {
    pub d: f64,
    pub se: f64,
    pub df: f64,
    /// Values behind it (baseline, variant): rounds twice when paired.
    pub n: (usize, usize),
    pub paired: bool,
    /// Degrees of freedom borrowed from a prior (0: none), part of `df`.
    #[serde(default)]
    pub borrowed_df: f64,
    /// The degrees of freedom of a prior offered (0: none), borrowed or not: a look's level is
    /// the one simulated for the checked procedure with a prior of that many.
    #[serde(default)]
    pub offered_df: f64,
}

impl LogRatio {
    pub fn ratio(&self) -> f64 {
        self.d.exp()
    }

    /// The two-sided `level` interval of the ratio (level 0.95: the 95 % interval).
    pub fn interval(&self, level: f64) -> (f64, f64) {
        let half = if self.se > 0.0 {
            t_quantile(0.5 + level / 2.0, self.df) * self.se
        } else {
            0.0
        };
        ((self.d - half).exp(), (self.d + half).exp())
    }

    /// The two-sided p-value of "no difference".
    pub fn p(&self) -> f64 {
        use statrs::distribution::{ContinuousCDF, StudentsT};
        if self.se <= 0.0 {
            return if self.d == 0.0 { 1.0 } else { 0.0 };
        }
        let t = (self.d / self.se).abs();
        StudentsT::new(0.0, 1.0, self.df)
            .map(|s| 2.0 * (1.0 - s.cdf(t)))
            .unwrap_or(f64::NAN)
    }
}

fn positive(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite() && *x > 0.0)
}

/// The paired estimate from one (baseline, variant) pair per round, with a prior variance
/// when given. None with fewer than two pairs (and no prior), or a value that is not positive.
pub fn paired(pairs: &[(f64, f64)], prior: Option<&Prior>) -> Option<LogRatio> {
    let n = pairs.len();
    let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    if n == 0 || !positive(&a) || !positive(&b) {
        return None;
    }
    let d: Vec<f64> = pairs.iter().map(|(a, b)| b.ln() - a.ln()).collect();
    let own_df = n as f64 - 1.0;
    let own = if n >= 2 { variance(&d) } else { 0.0 };
    let offered = prior.filter(|p| p.df > 0.0 && p.variance.is_finite());
    let (var, df, borrowed) = match offered {
        Some(p) => match checked(own, own_df, p.variance, p.df) {
            (var, df, true) => (var, df, p.df),
            (_, _, false) if n < 2 => return None,
            (var, df, false) => (var, df, 0.0),
        },
        None if n >= 2 => (own, own_df, 0.0),
        None => return None,
    };
    Some(LogRatio {
        d: mean(&d),
        se: (var / n as f64).sqrt(),
        df,
        n: (n, n),
        paired: true,
        borrowed_df: borrowed,
        offered_df: offered.map_or(0.0, |p| p.df),
    })
}

/// The one-sided level at which today's rounds are found to spread more than a borrowed
/// variance allows (`BORROW_SAFETY` times the calibration's): an F test of their variance
/// against it. Then nothing is borrowed and the look uses the rounds' own variance and level.
pub const BORROW_CHECK: f64 = 0.5;

/// The `1 − BORROW_CHECK` quantile of F(own_df, prior_df): the ratio of today's variance to the
/// allowed one above which nothing is borrowed.
pub fn f_bound(own_df: f64, prior_df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, FisherSnedecor};
    FisherSnedecor::new(own_df, prior_df).map_or(f64::INFINITY, |f| f.inverse_cdf(1.0 - BORROW_CHECK))
}

/// The variance a round's log-ratio is taken to have, and its degrees of freedom, from the
/// rounds' own (`own` on `own_df`) and a prior offered (`prior` as measured, on `prior_df`):
/// pooled with the prior times `BORROW_SAFETY`, never below the rounds' own, unless the rounds
/// spread more than the prior allows (then their own alone). The one rule `paired` and the
/// sequential level's simulation share.
pub fn checked(own: f64, own_df: f64, prior: f64, prior_df: f64) -> (f64, f64, bool) {
    checked_at(own, own_df, prior, prior_df, f_bound(own_df, prior_df))
}

/// `checked` with its F bound (`f_bound(own_df, prior_df)`) given: simulations reuse it.
pub fn checked_at(own: f64, own_df: f64, prior: f64, prior_df: f64, bound: f64) -> (f64, f64, bool) {
    let allowed = prior * BORROW_SAFETY;
    if own_df >= 1.0 && (allowed <= 0.0 && own > 0.0 || allowed > 0.0 && own / allowed > bound) {
        return (own, own_df, false);
    }
    (
        ((prior_df * allowed + own_df * own) / (prior_df + own_df)).max(own),
        prior_df + own_df,
        true,
    )
}

/// The unpaired estimate (Welch on the logs). `conservative` takes min(n) − 1 degrees of
/// freedom (for decisions looked at every round, where one side's spread may dwarf the
/// other's), else Welch–Satterthwaite's. None with fewer than two positive values a side.
pub fn unpaired(a: &[f64], b: &[f64], conservative: bool) -> Option<LogRatio> {
    if a.len() < 2 || b.len() < 2 || !positive(a) || !positive(b) {
        return None;
    }
    let (la, lb): (Vec<f64>, Vec<f64>) = (a.iter().map(|v| v.ln()).collect(), b.iter().map(|v| v.ln()).collect());
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let (sa, sb) = (variance(&la) / na, variance(&lb) / nb);
    let se2 = sa + sb;
    let df = if conservative || se2 <= 0.0 {
        na.min(nb) - 1.0
    } else {
        se2.powi(2) / (sa.powi(2) / (na - 1.0) + sb.powi(2) / (nb - 1.0))
    };
    Some(LogRatio {
        d: mean(&lb) - mean(&la),
        se: se2.sqrt(),
        df: df.max(1.0),
        n: (a.len(), b.len()),
        paired: false,
        borrowed_df: 0.0,
        offered_df: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{bound, lower, normal};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    // Reference values from SciPy 1.16:
    //   a=[100,104,98,101]; b=[110,113,109,108]; d=log(b)-log(a)
    //   stats.ttest_rel(log(b), log(a)) -> statistic 10.405234378637234, pvalue 0.0018943487272620417
    //   stats.ttest_ind(log(b), log(a), equal_var=False) -> statistic 5.57979081043613,
    //     pvalue 0.001674101771181907, df 5.693272377052161
    #[test]
    fn paired_and_welch_on_logs_match_scipy() {
        let a = [100.0, 104.0, 98.0, 101.0];
        let b = [110.0, 113.0, 109.0, 108.0];
        let pairs: Vec<(f64, f64)> = a.iter().copied().zip(b.iter().copied()).collect();
        let p = paired(&pairs, None).unwrap();
        assert!((p.d / p.se - 10.405_234_378_637_234).abs() < 1e-9, "{p:?}");
        assert!((p.p() - 0.001_894_348_727_262_041_7).abs() < 1e-9, "{}", p.p());
        assert_eq!(p.df, 3.0);
        let w = unpaired(&a, &b, false).unwrap();
        assert!((w.d / w.se - 5.579_790_810_436_13).abs() < 1e-9, "{w:?}");
        assert!((w.df - 5.693_272_377_052_161).abs() < 1e-9, "{w:?}");
        assert!((w.p() - 0.001_674_101_771_181_907).abs() < 1e-9, "{}", w.p());
        assert_eq!(unpaired(&a, &b, true).unwrap().df, 3.0);
        assert!(paired(&[(1.0, 2.0)], None).is_none(), "one pair has no spread");
        assert!(unpaired(&[0.0, 1.0], &[1.0, 2.0], false).is_none(), "0 has no log");
    }

    #[test]
    fn a_prior_adds_its_degrees_of_freedom_and_its_inflated_variance() {
        let pairs = [(100.0, 110.0), (100.0, 112.0), (100.0, 108.0)];
        let prior = Prior {
            variance: 0.01,
            df: 9.0,
            source: "test".into(),
        };
        let p = paired(&pairs, Some(&prior)).unwrap();
        assert_eq!((p.df, p.borrowed_df), (11.0, 9.0));
        let own = variance(&pairs.iter().map(|(a, b)| f64::ln(b / a)).collect::<Vec<_>>());
        let want = ((9.0 * 0.01 * BORROW_SAFETY + 2.0 * own) / 11.0 / 3.0).sqrt();
        assert!((p.se - want).abs() < 1e-12, "{p:?}");
        // One round and a prior: an estimate, on the prior's degrees of freedom alone.
        let one = paired(&pairs[..1], Some(&prior)).unwrap();
        assert_eq!(one.df, 9.0);
    }

    /// Fixed-sample 95 % intervals, 10,000 simulated comparisons at each of 2–6 repeats a side
    /// (log-normal values, spreads 3–30 %, the two sides' spreads up to 4 times apart, true
    /// ratios 0.8–1.25): the interval misses the true ratio at most 6 % of the time, asserted as
    /// the miss rate plus three Monte Carlo standard errors (0.7 %). The paired t is exact (5 %);
    /// Welch's degrees of freedom are an approximation (5.3 % at 4 a side), and 6 % is the
    /// nearest claim above 5 % that an exact method passes at this many cases. The percentile
    /// bootstrap these replace missed 26 % at 2 against 3 and 11 % at 6 against 6. Seeds 101–105
    /// here; the intervals have no tuned constant.
    #[test]
    fn fixed_sample_intervals_cover_at_two_to_six_repeats() {
        let cases = 10_000;
        for n in 2..=6usize {
            let mut rng = Pcg64Mcg::seed_from_u64(100 + n as u64);
            let (mut miss_w, mut miss_p) = (0, 0);
            for i in 0..cases {
                let cv = 0.03 + 0.27 * (i % 10) as f64 / 9.0;
                let (sa, sb) = if i % 2 == 0 { (cv, cv / 4.0) } else { (cv / 2.0, cv) };
                let truth = 0.8 + 0.45 * (i % 7) as f64 / 6.0;
                let a: Vec<f64> = (0..n).map(|_| 1000.0 * (sa * normal(&mut rng)).exp()).collect();
                // Blocked: a round effect common to both, which pairing removes.
                let round: Vec<f64> = (0..n).map(|_| (0.2 * normal(&mut rng)).exp()).collect();
                let b: Vec<f64> = (0..n).map(|_| 1000.0 * truth * (sb * normal(&mut rng)).exp()).collect();
                let (lo, hi) = unpaired(&a, &b, false).unwrap().interval(0.95);
                miss_w += usize::from(!(lo <= truth && truth <= hi));
                let pairs: Vec<(f64, f64)> = (0..n).map(|r| (a[r] * round[r], b[r] * round[r])).collect();
                let (lo, hi) = paired(&pairs, None).unwrap().interval(0.95);
                miss_p += usize::from(!(lo <= truth && truth <= hi));
            }
            let (w, p) = (miss_w as f64 / cases as f64, miss_p as f64 / cases as f64);
            eprintln!(
                "{n} a side: Welch on logs misses {:.1} %, paired {:.1} %",
                w * 100.0,
                p * 100.0
            );
            assert!(bound(w, cases) <= 0.06, "Welch, {n} a side: {w}");
            assert!(bound(p, cases) <= 0.06, "paired, {n} rounds: {p}");
        }
    }

    /// The check above fails a method that does not cover: Welch's statistic with a normal
    /// quantile (1.96) in place of Student's misses far more than 6 % at two repeats.
    #[test]
    fn a_normal_quantile_at_two_repeats_would_fail_the_coverage_check() {
        let cases = 2_000;
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let mut miss = 0;
        for _ in 0..cases {
            let a: Vec<f64> = (0..2).map(|_| (0.1 * normal(&mut rng)).exp()).collect();
            let b: Vec<f64> = (0..2).map(|_| (0.1 * normal(&mut rng)).exp()).collect();
            let w = unpaired(&a, &b, false).unwrap();
            miss += usize::from(w.d.abs() > 1.96 * w.se);
        }
        let rate = miss as f64 / cases as f64;
        assert!(lower(rate, cases) > 0.06, "{rate}");
    }
}
