//! Change points in a series of results over time (one value per run), in the manner of Apache
//! Otava (Hunter): binary segmentation on the log values, each split where Student's t between
//! the two sides is largest; then every change is tested again against only its neighbouring
//! segments, and those that no longer pass are dropped (until none is). Logs, because
//! performance changes are ratios and spreads grow with the level.
//!
//! Unlike Otava's, a split's p-value accounts for the search (`maxt`: the largest |t| over every
//! split, against its own null distribution), a run more than 3 robust SDs from the median of
//! the five around it is pulled in first (so one wild p99 cannot hide a real shift, and a new
//! level is left whole), and the threshold is a share of
//! an error rate per *look*: `alpha` spread over the `family` of series × figures one look
//! covers (Bonferroni), so a check of 10 series × 8 figures fails falsely in at most 5 % of
//! checks. Changes that pass a per-figure `weak` threshold but not that one are **weak**: likely,
//! not yet sure, reported apart. Tail figures, where one run in ten may be GC-paused, take
//! `Statistic::Robust` (`Settings::for_tails`), which sets such runs aside rather than pulling
//! them in. The error rates are simulated in the tests below.

use super::joint::Joint;
use super::maxt::{self, Scratch, Statistic};
use super::{t_quantile, variance};

/// The detector's thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The chance of any false change in one look over the `family` (series × figures).
    pub alpha: f64,
    /// How many series × figures one look covers: a change needs p ≤ `alpha / family`.
    pub family: usize,
    /// A weak change's largest p-value (for its own figure and series, not corrected).
    pub weak: f64,
    /// The fewest points each side of a change (a change is found once this many runs follow it).
    pub min_segment: usize,
    /// The smallest change kept, as a share of the level before it.
    pub min_change: f64,
    /// The split statistic: winsorized, or robust to GC-paused runs (tail figures).
    pub statistic: Statistic,
    /// Tested alone, or as one of a group of figures that move together (`joint`: the group's
    /// largest |t| is the statistic, and the group counts once in `family`).
    pub joint: Joint,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            alpha: ALPHA,
            family: 1,
            weak: WEAK,
            min_segment: MIN_SEGMENT,
            min_change: MIN_CHANGE,
            statistic: Statistic::Winsorized,
            joint: Joint::default(),
        }
    }
}

/// Defaults (the simulations below measure their error rates).
pub const ALPHA: f64 = 0.05;
pub const WEAK: f64 = 0.01;
pub const MIN_SEGMENT: usize = 3;
pub const MIN_CHANGE: f64 = 0.02;

impl Settings {
    /// The same thresholds for a look over `family` series × figures.
    pub fn over(self, family: usize) -> Settings {
        Settings {
            family: family.max(1),
            ..self
        }
    }

    /// The same thresholds for a tail figure (a p99, GC pause time): runs unlike their
    /// neighbours set aside (`Statistic::Robust`), since one in ten may be GC-paused.
    pub fn for_tails(self) -> Settings {
        Settings {
            statistic: Statistic::Robust,
            ..self
        }
    }

    /// The largest p-value of a (sure) change.
    pub fn p_max(&self) -> f64 {
        self.alpha / self.family.max(1) as f64
    }

    /// For outputs: what the detector did.
    pub fn describe(&self) -> String {
        // One text for both statistics: a look covers throughput and tail figures alike.
        let wild = format!(
            "a run 3 robust SDs from its neighbours' median pulled in; in tail figures one {} to {} SDs away \
             weighed down to nothing, as a GC-paused run",
            super::robust::FULL,
            super::robust::NONE
        );
        format!(
            "change points: binary segmentation on log values ({wild}), the largest t \
             over every split against its own null (p after the search; figures that move together, p99, p99.9, \
             service p99 and max, tested jointly by their largest t with their measured correlation, one member of the \
             family), false changes in at most {:.0} % of looks \
             over {} series × figure(s) (p ≤ {:.1e} each), weak ones at p ≤ {} reported apart and never failing, \
             at least {} runs each side, changes of at least {:.0} %",
            self.alpha * 100.0,
            self.family.max(1),
            self.p_max(),
            self.weak,
            self.min_segment,
            self.min_change * 100.0
        )
    }
}

/// The confidence of a level's interval.
pub const LEVEL_CONFIDENCE: f64 = 0.95;

/// A level: the mean of a segment's log values, winsorized, as a value with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    pub n: usize,
    /// Of the `n`, set aside as GC-paused (`Statistic::Robust`) and not part of the level.
    pub aside: usize,
}

/// One change: the series' level changes at point `at` (the first point of the new level).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    pub at: usize,
    pub before: Level,
    pub after: Level,
    /// after / before.
    pub ratio: f64,
    /// After the search (`maxt`), within the neighbouring segments.
    pub p: f64,
    /// Passes only the per-figure `weak` threshold: likely, not yet sure.
    pub weak: bool,
}

/// The change points of `values` (all > 0), in order: the sure ones, and weak ones apart from them.
pub fn changes(values: &[f64], s: &Settings) -> Vec<Change> {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    if logs.iter().any(|l| !l.is_finite()) {
        return Vec::new();
    }
    let mut scratch = Scratch::default();
    let mut out = segment(&logs, s.p_max(), s, &mut scratch);
    if s.weak > s.p_max() {
        let sure: Vec<usize> = out.iter().map(|c| c.at).collect();
        let weak = segment(&logs, s.weak, s, &mut scratch)
            .into_iter()
            .filter(|c| sure.iter().all(|&at| at.abs_diff(c.at) >= s.min_segment.max(1)))
            .map(|c| Change { weak: true, ..c });
        out.extend(weak);
        out.sort_by_key(|c| c.at);
    }
    out
}

/// Binary segmentation of `logs` at `p_max`, each change then tested again within its
/// neighbouring segments until every one passes.
fn segment(logs: &[f64], p_max: f64, s: &Settings, scratch: &mut Scratch) -> Vec<Change> {
    let mut cuts = Vec::new();
    split(logs, 0, logs.len(), p_max, s, &mut cuts, scratch);
    cuts.sort_unstable();
    loop {
        let tested: Vec<Option<Change>> = (0..cuts.len())
            .map(|i| {
                let (from, to) = neighbours(&cuts, i, logs.len());
                test(logs, from, cuts[i], to, s, scratch)
            })
            .collect();
        let failed: Vec<usize> = (0..cuts.len())
            .filter(|&i| !tested[i].is_some_and(|c| passes(&c, p_max, s)))
            .collect();
        if failed.is_empty() {
            return tested.into_iter().flatten().collect();
        }
        // The failed change whose own test is weakest goes first (re-testing may save others).
        let p = |i: usize| tested[i].map_or(1.0, |c| c.p);
        let weakest = failed
            .iter()
            .copied()
            .max_by(|&a, &b| p(a).total_cmp(&p(b)))
            .expect("one failed");
        cuts.remove(weakest);
    }
}

fn neighbours(cuts: &[usize], i: usize, len: usize) -> (usize, usize) {
    let from = if i == 0 { 0 } else { cuts[i - 1] };
    (from, cuts.get(i + 1).copied().unwrap_or(len))
}

fn passes(c: &Change, p_max: f64, s: &Settings) -> bool {
    c.p <= p_max && (c.ratio - 1.0).abs() >= s.min_change
}

/// Finds the best split of `logs[from..to]`, keeps it if it passes, and looks within each side.
fn split(logs: &[f64], from: usize, to: usize, p_max: f64, s: &Settings, cuts: &mut Vec<usize>, scratch: &mut Scratch) {
    let Some((k, _)) = maxt::best_split(&logs[from..to], s.min_segment, s.statistic, scratch) else {
        return;
    };
    let at = from + k;
    if test(logs, from, at, to, s, scratch).is_some_and(|c| passes(&c, p_max, s)) {
        cuts.push(at);
        split(logs, from, at, p_max, s, cuts, scratch);
        split(logs, at, to, p_max, s, cuts, scratch);
    }
}

/// The change at `at` between the segments `[from, at)` and `[at, to)`, its p-value the
/// search's over `[from, to)`.
fn test(logs: &[f64], from: usize, at: usize, to: usize, s: &Settings, scratch: &mut Scratch) -> Option<Change> {
    let m = s.min_segment.max(2);
    let t = maxt::t_at(&logs[from..to], at - from, m, s.statistic, scratch)?;
    let (before, after) = (level(&logs[from..at], s.statistic), level(&logs[at..to], s.statistic));
    Some(Change {
        at,
        before,
        after,
        ratio: after.value / before.value,
        p: super::joint::p_value(to - from, m, s.statistic, t, s.joint),
        weak: false,
    })
}

/// The level of a segment of (positive) values, as changes give them by `stat`.
pub fn level_of(values: &[f64], stat: Statistic) -> Level {
    level(&values.iter().map(|v| v.ln()).collect::<Vec<_>>(), stat)
}

/// The mean of `logs` and its 95 % t interval, as values: winsorized against neighbours (one
/// wild run moves it little), or for `Statistic::Robust` without the runs `robust` sets aside
/// (a GC-paused run is not part of the level). `n` counts every run.
fn level(logs: &[f64], stat: Statistic) -> Level {
    let n = logs.len();
    let (mut w, mut buf) = (Vec::with_capacity(n), Vec::with_capacity(n));
    match stat {
        Statistic::Winsorized => maxt::winsorize(logs, &mut w, &mut buf),
        // (`w` then holds every run.)
        Statistic::Robust => {
            let aside = super::robust::set_aside(logs);
            w.extend(logs.iter().zip(&aside).filter(|(_, a)| !**a).map(|(l, _)| *l));
        }
    }
    let m = super::mean(&w);
    let k = w.len();
    let half = if k >= 2 {
        t_quantile(0.5 + LEVEL_CONFIDENCE / 2.0, k as f64 - 1.0) * (variance(&w) / k as f64).sqrt()
    } else {
        f64::NAN
    };
    Level {
        value: m.exp(),
        low: (m - half).exp(),
        high: (m + half).exp(),
        n,
        aside: n - k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{CHECK_FIGURES, bound, lower, normal};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    /// A series of `n` runs with a coefficient of variation `cv` and, in `outliers` of them, a
    /// run `wild` times the level (a G1 pause in a p99, a neighbour met by one run), its level
    /// times `ratio` from point `at` on.
    fn series(rng: &mut Pcg64Mcg, n: usize, cv: f64, outliers: f64, wild: f64, at: usize, ratio: f64) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let level = if i >= at { 1000.0 * ratio } else { 1000.0 };
                let v = level * (cv * normal(rng)).exp();
                if rng.random::<f64>() < outliers { v * wild } else { v }
            })
            .collect()
    }

    /// The look of `history check`: 10 series × 8 figures.
    const FAMILY: usize = 80;

    #[test]
    fn a_clear_change_is_found_where_it_starts_with_its_levels() {
        let s = Settings::default().over(FAMILY);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let x = series(&mut rng, 40, 0.03, 0.0, 1.0, 25, 0.8);
        let c = changes(&x, &s);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].at, c[0].weak), (25, false));
        assert!((c[0].ratio - 0.8).abs() < 0.03, "{c:?}");
        assert!(c[0].before.low < 1000.0 && 1000.0 < c[0].before.high * 1.01, "{c:?}");
        assert!(c[0].after.n == 15 && c[0].before.n == 25);
        // Flat: nothing; too short a tail: not yet.
        assert!(changes(&series(&mut rng, 40, 0.03, 0.0, 1.0, 40, 1.0), &s).is_empty());
        let tail = series(&mut rng, 40, 0.03, 0.0, 1.0, 38, 0.8);
        assert!(changes(&tail, &s).iter().all(|c| c.at != 38));
        // Values that cannot be logged give nothing rather than a wrong answer.
        assert!(changes(&[1.0, 0.0, 2.0, 3.0, 4.0, 5.0, 6.0], &s).is_empty());
    }

    /// Issue 45's example: a p99 that doubled in every run after a real slowdown, in a series
    /// where one earlier run was a GC pause 30 times the others. The t-test on plain logs was
    /// swamped by that run; on winsorized logs the doubling is a sure change, where it began,
    /// and the wild run moves the level before it by little. Over 1,000 series (seed 4502, the
    /// wild run the fourth), found where it began in at least 85 % (estimate − 3 SE), by both
    /// statistics (the tail figures' sets the run aside); on plain logs, the wrong setting, the
    /// wild run hides it far more often.
    #[test]
    fn one_wild_run_does_not_hide_a_doubling() {
        let s = Settings::default().over(FAMILY);
        let mut rng = Pcg64Mcg::seed_from_u64(4502);
        let cases = 1_000;
        let (mut found, mut plain, mut level_ok) = (0usize, 0usize, 0usize);
        let mut robust = 0usize;
        for _ in 0..cases {
            let mut x = series(&mut rng, 16, 0.10, 0.0, 1.0, 8, 2.0);
            x[3] *= 30.0;
            let found_at_8 = |s: &Settings| {
                let c = changes(&x, s);
                match c.iter().filter(|c| !c.weak).collect::<Vec<_>>()[..] {
                    [one] if one.at == 8 && (1.6..2.5).contains(&one.ratio) => Some(one.before.value),
                    _ => None,
                }
            };
            if let Some(before) = found_at_8(&s) {
                found += 1;
                level_ok += usize::from(before < 1300.0);
            }
            robust += usize::from(found_at_8(&s.for_tails()).is_some_and(|before| before < 1300.0));
            // Plain logs: Student's t at the true split, its p after the search.
            let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
            let (a, b) = (&logs[..8], &logs[8..]);
            let t = (super::super::mean(b) - super::super::mean(a)).abs()
                / ((variance(a) + variance(b)) / 2.0 * (1.0 / 8.0 + 1.0 / 8.0)).sqrt();
            plain += usize::from(maxt::p_value(16, s.min_segment, Statistic::Winsorized, t) <= s.p_max());
        }
        let (rate, plain) = (found as f64 / cases as f64, plain as f64 / cases as f64);
        let robust = robust as f64 / cases as f64;
        println!(
            "a doubling behind one x30 run: found {:.1} % (robust {:.1} %), on plain logs {:.1} %",
            rate * 100.0,
            robust * 100.0,
            plain * 100.0
        );
        assert!(lower(rate, cases) >= 0.85, "{rate}");
        assert!(lower(robust, cases) >= 0.85, "robust: {robust}");
        assert!(
            level_ok == found,
            "the wild run moved the level before: {level_ok} of {found}"
        );
        assert!(bound(plain, cases) < 0.85, "plain logs: {plain}");
    }

    /// Every run a point of a check: does any of `family` series, its `n` first runs, show a
    /// sure change among its latest runs (whose new level holds under twice `min_segment` runs),
    /// as `history check` fails on?
    fn check_fails(runs: &[Vec<f64>], n: usize, s: &Settings) -> bool {
        runs.iter().enumerate().any(|(i, r)| {
            // The figures in `CHECK_FIGURES`' order, series after series; tail ones as the gate
            // takes them.
            let s = if CHECK_FIGURES[i % CHECK_FIGURES.len()].1 {
                s.for_tails()
            } else {
                *s
            };
            changes(&r[..n], &s)
                .iter()
                .any(|c| !c.weak && n - 1 - c.at < 2 * s.min_segment)
        })
    }

    /// The figures of one series as a check sees them: log-normal spreads between runs as
    /// this machine shows them (throughput 3 %, p50 5 %, p99 15 %, p99.9 25 %, service p99
    /// 15 %, CPU per operation 4 %, GC pause time 20 %, capacity 5 %), and in the four
    /// tail figures `wild` of the runs 3 times their level (a G1 pause in one run's window).
    fn figures(rng: &mut Pcg64Mcg, n: usize, wild: f64) -> Vec<Vec<f64>> {
        CHECK_FIGURES
            .iter()
            .map(|&(cv, paused, _)| series(rng, n, cv, if paused { wild } else { 0.0 }, 3.0, n, 1.0))
            .collect()
    }

    /// Checks of 10 series × 8 figures after 25, 50, 75 and 100 runs of `histories` histories
    /// with nothing changed: (checks, failed at `s`, failed at `wrong` on a quarter of them).
    fn false_checks(seed: u64, histories: usize, wild: f64, s: &Settings, wrong: &Settings) -> (usize, usize, usize) {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let (mut checks, mut failed, mut failed_wrong) = (0, 0, 0);
        for h in 0..histories {
            let runs: Vec<Vec<f64>> = (0..10).flat_map(|_| figures(&mut rng, 100, wild)).collect();
            for n in [25usize, 50, 75, 100] {
                checks += 1;
                failed += usize::from(check_fails(&runs, n, s));
                if h % 4 == 0 {
                    failed_wrong += usize::from(check_fails(&runs, n, wrong));
                }
            }
        }
        (checks, failed, failed_wrong)
    }

    /// Issue 45's proof: a check of 10 series × 8 figures after 25, 50, 75 and 100 runs, nothing
    /// changed, each figure with its own spread and the tail figures with an isolated wild run
    /// in 1 % of runs, fails in at most 5 % of checks (estimate + 3 Monte Carlo SEs; 800 checks
    /// on new seeds; checks of one history share earlier runs, so the SE is a little
    /// optimistic). The wrong setting, no correction for the 80 series × figures (family 1),
    /// must fail it. Printed beside, not asserted: wild runs in 5 % of runs, where three in a
    /// row sometimes fall among the latest runs and are, by `min_segment`'s definition, a level.
    #[test]
    fn a_check_of_ten_series_by_eight_figures_fails_falsely_in_at_most_five_percent() {
        let s = Settings::default().over(FAMILY);
        let uncorrected = Settings::default();
        let (checks, failed, failed_wrong) = false_checks(4503, 200, 0.01, &s, &uncorrected);
        let rate = failed as f64 / checks as f64;
        let wrong_checks = checks / 4;
        let wrong = failed_wrong as f64 / wrong_checks as f64;
        let (heavy_checks, heavy, _) = false_checks(4506, 100, 0.05, &s, &uncorrected);
        println!(
            "checks of 80 series × figures failing with nothing changed: {:.2} % of {checks}; uncorrected: {:.1} % \
             of {wrong_checks}; wild runs in 5 % of runs: {:.1} % of {heavy_checks}",
            100.0 * rate,
            100.0 * wrong,
            100.0 * heavy as f64 / heavy_checks as f64
        );
        assert!(bound(rate, checks) <= 0.05, "{rate}");
        assert!(lower(wrong, wrong_checks) > 0.05, "the uncorrected check: {wrong}");
    }

    /// Whether a check of the first `n` runs of one figure, at `s`, fails on a sure change up
    /// among its latest runs (as `history check` does on a tail figure getting worse).
    fn fails_up(x: &[f64], n: usize, s: &Settings) -> bool {
        changes(&x[..n], s)
            .iter()
            .any(|c| !c.weak && c.ratio > 1.0 && n - 1 - c.at < 2 * s.min_segment)
    }

    /// The share of `cases` p99 series (15 % spread, one run in ten ×`paused`) whose level moves
    /// by `ratio` after 20 runs that a check of one series × 8 figures at `s` fails on by the
    /// `by`th run after it.
    fn found_by(seed: u64, cases: usize, ratio: f64, paused: f64, by: usize, s: &Settings) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let found = (0..cases)
            .filter(|_| {
                let x = series(&mut rng, 20 + by, 0.15, 0.10, paused, 20, ratio);
                (23..=20 + by).any(|n| fails_up(&x, n, s))
            })
            .count();
        found as f64 / cases as f64
    }

    /// Issue 72's item 1: a p99 that doubles, among runs one in ten of which is GC-paused (×3)
    /// at 15 % spread, fails a check of one series × 8 figures by its 5th run in at least 90 %
    /// of series (estimate − 3 SE; 4,000 series, seed 7211, not the tuning seeds 7202–7205;
    /// measured 92.8 %: a seed fails when its estimate is under 91.2 %, about one in 1,000 at
    /// that rate).
    /// The wrong setting, the winsorized statistic the tail figures took before, must fall
    /// short of it (measured 79.5 %: two or three paused runs among twenty, pulled in to 3 SDs,
    /// still double the pooled SD). The price, printed: a ×1.3 step with no paused run.
    #[test]
    fn a_doubled_p99_among_gc_paused_runs_is_found_by_its_fifth_run() {
        let s = Settings::default().over(8);
        let cases = 4_000;
        let robust = found_by(7211, cases, 2.0, 3.0, 5, &s.for_tails());
        let winsorized = found_by(7211, cases, 2.0, 3.0, 5, &s);
        let price = found_by(7212, 1_000, 1.3, 1.0, 6, &s.for_tails());
        let before = found_by(7212, 1_000, 1.3, 1.0, 6, &s);
        println!(
            "x2 p99 among 10 % GC-paused runs found by its 5th run: robust {:.1} %, winsorized {:.1} %; \
             x1.3 with none paused by its 6th: robust {:.1} %, winsorized {:.1} %",
            100.0 * robust,
            100.0 * winsorized,
            100.0 * price,
            100.0 * before
        );
        assert!(lower(robust, cases) >= 0.90, "{robust}");
        assert!(bound(winsorized, cases) < 0.90, "winsorized: {winsorized}");
    }

    /// ... and it holds its level: a check of one series × 8 figures, nothing changed, one run
    /// in ten GC-paused in the tail figures, of 10, 15, … 30 runs, fails in at most 5 % of
    /// looks (estimate + 3 SE; 10,000 looks at independent series, seed 7213; measured about
    /// 4 %). Three paused runs in a row among the latest are, by `min_segment`'s definition, a
    /// new level; that is most of what fails. The wrong setting, no correction for the 8
    /// figures, must fail it (on every tenth look).
    #[test]
    fn a_check_among_gc_paused_runs_fails_falsely_at_its_stated_level() {
        let (s, uncorrected) = (Settings::default().over(8), Settings::default());
        let mut rng = Pcg64Mcg::seed_from_u64(7213);
        let (mut looks, mut failed, mut wrong_looks, mut failed_wrong) = (0usize, 0usize, 0usize, 0usize);
        for i in 0..2_000 {
            for n in [10usize, 15, 20, 25, 30] {
                let runs = figures(&mut rng, n, 0.10);
                looks += 1;
                failed += usize::from(check_fails(&runs, n, &s));
                if i % 10 == 0 {
                    wrong_looks += 1;
                    failed_wrong += usize::from(check_fails(&runs, n, &uncorrected));
                }
            }
        }
        let (rate, wrong) = (failed as f64 / looks as f64, failed_wrong as f64 / wrong_looks as f64);
        println!(
            "one series x 8 figures, 10 % GC-paused runs, nothing changed: {:.2} % of {looks} looks fail; uncorrected {:.1} %",
            100.0 * rate,
            100.0 * wrong
        );
        assert!(bound(rate, looks) <= 0.05, "{rate}");
        assert!(lower(wrong, wrong_looks) > 0.05, "uncorrected: {wrong}");
    }

    /// What the gate buys: a 10 % regression of one figure (3 % spread), 20 runs before it, is
    /// a sure change in a check of 80 series × figures by its 6th run in most series; weak
    /// changes never count, and a 4 % change in 3 % noise is at most weak at first. Printed for
    /// README; asserted loosely (measured 0.9+; fails by chance far less than once in 1,000).
    #[test]
    fn a_ten_percent_regression_is_found_within_six_runs() {
        let s = Settings::default().over(FAMILY);
        let mut rng = Pcg64Mcg::seed_from_u64(4504);
        let cases = 500;
        let mut found_by = [0usize; 7];
        for _ in 0..cases {
            let x = series(&mut rng, 26, 0.03, 0.0, 1.0, 20, 0.9);
            for after in 3..=6 {
                let c = changes(&x[..20 + after], &s);
                if c.iter().any(|c| !c.weak && c.at.abs_diff(20) <= 1 && c.ratio < 1.0) {
                    found_by[after] += 1;
                    break;
                }
            }
        }
        let cum: Vec<f64> = (3..=6)
            .map(|a| found_by[3..=a].iter().sum::<usize>() as f64 / cases as f64)
            .collect();
        println!("a 10 % regression at 3 % spread found by its 3rd..6th run: {cum:?}");
        assert!(lower(cum[3], cases) >= 0.8, "{cum:?}");
    }

    #[test]
    fn a_likely_change_is_weak_and_reported_apart() {
        let s = Settings::default().over(FAMILY);
        // A 5 % step in 2 % noise, 8 runs each side: likely, not sure over 80 series × figures.
        let mut rng = Pcg64Mcg::seed_from_u64(4505);
        let mut weak = 0;
        for _ in 0..200 {
            let c = changes(&series(&mut rng, 16, 0.02, 0.0, 1.0, 8, 1.05), &s);
            weak += usize::from(c.iter().any(|c| c.weak && c.at.abs_diff(8) <= 1));
            assert!(c.iter().filter(|c| !c.weak).all(|c| c.p <= s.p_max()), "{c:?}");
            // A weak change's own p may pass the look's threshold against neighbours that only
            // the weak pass found; it stays weak, so the look's error rate holds.
            assert!(c.iter().filter(|c| c.weak).all(|c| c.p <= s.weak), "{c:?}");
        }
        assert!(weak >= 20, "weak in {weak} of 200");
        assert!(s.describe().contains("5 % of looks over 80 series"), "{}", s.describe());
    }
}
