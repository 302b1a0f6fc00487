//! What a team sees over nights (simulations only): a nightly `history check` of one series,
//! each night one more run, nothing changed, with and without a confirmation by rerunning
//! before the check fails (`stats::confirm`, as `history check --confirm` uses it).

use super::changes::{Settings, changes};
use super::confirm::{Finding, Levels, NIGHTLY_FALSE_CONFIRMED, Spread, look};
use super::robust::set_aside;
use super::sim::{CHECK_FIGURES, bound, lower, normal};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// One run of figure `f` with nothing changed, as a log; `gc` the share of GC-paused runs.
fn run(rng: &mut Pcg64Mcg, f: usize, gc: f64) -> f64 {
    let (cv, paused, _) = CHECK_FIGURES[f];
    let wild = paused && rng.random::<f64>() < gc;
    cv * normal(rng) + if wild { 3f64.ln() } else { 0.0 }
}

/// How a failing check is confirmed: by up to `reruns` fresh runs (0: not at all), a tail
/// figure's judged by their median from the third (`history check --confirm`), or, the wrong
/// setting, by their mean from the first.
#[derive(Debug, Clone, Copy)]
struct Confirm {
    reruns: usize,
    median: bool,
}

const CONFIRMED: Confirm = Confirm {
    reruns: 5,
    median: true,
};
const UNCONFIRMED: Confirm = Confirm {
    reruns: 0,
    median: true,
};
const BY_MEAN: Confirm = Confirm {
    reruns: 5,
    median: false,
};

/// Whether the check of the first `n` runs fails: a sure regression among the latest runs, and
/// with `confirm`'s fresh runs, one they confirm (one they leave open does not fail).
fn fails(rng: &mut Pcg64Mcg, runs: &[Vec<f64>], n: usize, s: &Settings, confirm: Confirm, gc: f64) -> bool {
    fails_with(rng, runs, n, s, confirm, &|rng: &mut Pcg64Mcg, f: usize| {
        run(rng, f, gc)
    })
}

/// `fails`, the fresh runs drawn by `fresh_run`.
fn fails_with(
    rng: &mut Pcg64Mcg,
    runs: &[Vec<f64>],
    n: usize,
    s: &Settings,
    confirm: Confirm,
    fresh_run: &dyn Fn(&mut Pcg64Mcg, usize) -> f64,
) -> bool {
    let m = s.min_segment;
    runs.iter().enumerate().any(|(f, logs)| {
        let values: Vec<f64> = logs[..n].iter().map(|l| l.exp()).collect();
        let (_, paused, worse) = CHECK_FIGURES[f];
        let s = if paused { s.for_tails() } else { *s };
        changes(&values, &s)
            .iter()
            .filter(|c| !c.weak && n - 1 - c.at < 2 * m && (c.ratio > 1.0) == worse)
            .any(|c| {
                if confirm.reruns == 0 {
                    return true;
                }
                // Every night its own sitting: the spread between runs is the sittings' too.
                // A tail figure's is read without its GC-paused runs, as its levels are.
                let base = &logs[..c.at];
                let aside = if paused {
                    set_aside(base)
                } else {
                    vec![false; base.len()]
                };
                let kept: Vec<f64> = base.iter().zip(&aside).filter(|(_, a)| !**a).map(|(l, _)| *l).collect();
                let Some(spread) = Spread::of(&kept, &(0..kept.len()).collect::<Vec<_>>(), None) else {
                    return true;
                };
                let levels = Levels {
                    before: c.before.value.ln(),
                    before_se: spread.level_se(c.before.n, c.before.n),
                    after: c.after.value.ln(),
                    after_se: spread.level_se(c.after.n, c.after.n),
                    higher_is_worse: worse,
                    paused_runs: paused && confirm.median,
                };
                let mut fresh = Vec::new();
                for _ in 0..confirm.reruns {
                    fresh.push(fresh_run(rng, f));
                    let l = look(&levels, &spread, &fresh, confirm.reruns, 0.05);
                    if l.verdict != Finding::Open {
                        return l.verdict == Finding::Confirmed;
                    }
                }
                false
            })
    })
}

/// `series` series of one configuration checked every night from run 10 to run 39 (30 nights),
/// nothing changed: (false failures per 100 nights, share of series with at least one).
fn nights(seed: u64, series: usize, gc: f64, confirm: Confirm) -> (f64, f64, usize) {
    let s = Settings::default().over(CHECK_FIGURES.len());
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let (mut failed, mut any) = (0usize, 0usize);
    for _ in 0..series {
        let runs: Vec<Vec<f64>> = (0..CHECK_FIGURES.len())
            .map(|f| (0..40).map(|_| run(&mut rng, f, gc)).collect())
            .collect();
        let mut this = 0;
        for n in 10..40 {
            this += usize::from(fails(&mut rng, &runs, n, &s, confirm, gc));
        }
        failed += this;
        any += usize::from(this > 0);
    }
    let nights = series * 30;
    (failed as f64 / nights as f64, any as f64 / series as f64, nights)
}

/// What a team sees, the claim `history check --confirm` states: a nightly check of one series
/// (8 figures, GC-paused runs ×3 in one run in ten of the four tail figures), nothing changed,
/// each sure regression rerun up to 5 times (the default) and failing only when confirmed,
/// fails falsely on at most `NIGHTLY_FALSE_CONFIRMED` of nights (0.5 in 100; estimate + 3 SE;
/// 400 series of 30 nights, seed 7321). The wrong setting, no confirmation, fails the same
/// check (seed 7322). Printed: without GC runs (seeds 7323, 7324), and a tail figure's fresh
/// runs judged by their mean from the first (seed 7329: one paused rerun then confirms noise).
#[test]
fn a_confirmed_nightly_check_fails_falsely_at_most_half_a_time_in_a_hundred_nights() {
    let (rate, any, n) = nights(7321, 400, 0.10, CONFIRMED);
    let (plain, plain_any, _) = nights(7322, 400, 0.10, UNCONFIRMED);
    let (quiet, _, _) = nights(7323, 400, 0.0, CONFIRMED);
    let (quiet_plain, _, _) = nights(7324, 400, 0.0, UNCONFIRMED);
    let (by_mean, _, _) = nights(7329, 400, 0.10, BY_MEAN);
    println!(
        "nightly check of one series, GC-paused runs in 10 %: confirmed by up to 5 reruns {:.2} false failures per 100 nights \
         (at least one in 30 nights in {:.1} % of series); unconfirmed {:.2} ({:.1} %); by the reruns' mean {:.2}; \
         without GC runs {:.2} and {:.2}",
        rate * 100.0,
        any * 100.0,
        plain * 100.0,
        plain_any * 100.0,
        by_mean * 100.0,
        quiet * 100.0,
        quiet_plain * 100.0
    );
    assert!(bound(rate, n) <= NIGHTLY_FALSE_CONFIRMED, "{rate}");
    assert!(lower(plain, n) > NIGHTLY_FALSE_CONFIRMED, "unconfirmed: {plain}");
}

/// A regression of figure `f` by `ratio` from run 20: the share of `series` series whose check
/// fails on it by its 5th run, confirmed by `confirm` fresh runs (at the new level).
fn found_by_fifth(seed: u64, series: usize, f: usize, ratio: f64, gc: f64, confirm: Confirm) -> f64 {
    let s = Settings::default().over(CHECK_FIGURES.len());
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut found = 0usize;
    for _ in 0..series {
        let runs: Vec<Vec<f64>> = (0..CHECK_FIGURES.len())
            .map(|g| {
                (0..25)
                    .map(|i| run(&mut rng, g, gc) + if g == f && i >= 20 { ratio.ln() } else { 0.0 })
                    .collect()
            })
            .collect();
        let shifted = |rng: &mut Pcg64Mcg, g: usize| run(rng, g, gc) + if g == f { ratio.ln() } else { 0.0 };
        let hit = (23..=25).any(|n| fails_with(&mut rng, &runs, n, &s, confirm, &shifted));
        found += usize::from(hit);
    }
    found as f64 / series as f64
}

/// The power, stated beside the claim: a regression found by its 5th run and confirmed by up
/// to 5 reruns at its new level, with GC-paused runs in one run in ten (800 and 400 series,
/// seeds 7325–7328): ×2 p99 about 91 % (94 % unconfirmed; a tail figure's reruns are judged by
/// their median against a spread read without the paused runs), −10 % throughput about 98 %.
/// Asserted below what was measured by more than 3 SE.
#[test]
fn a_confirmed_regression_fails_the_check_by_its_fifth_run() {
    let p99 = found_by_fifth(7325, 800, 2, 2.0, 0.10, CONFIRMED);
    let p99_plain = found_by_fifth(7326, 400, 2, 2.0, 0.10, UNCONFIRMED);
    let tput = found_by_fifth(7327, 400, 0, 0.9, 0.10, CONFIRMED);
    let tput_plain = found_by_fifth(7328, 400, 0, 0.9, 0.10, UNCONFIRMED);
    println!(
        "found and confirmed by its 5th run, GC-paused runs in 10 %: x2 p99 {:.1} % (unconfirmed {:.1} %), \
         -10 % throughput {:.1} % ({:.1} %)",
        p99 * 100.0,
        p99_plain * 100.0,
        tput * 100.0,
        tput_plain * 100.0
    );
    assert!(lower(p99, 800) >= 0.85, "{p99}");
    assert!(lower(tput, 400) >= 0.95, "{tput}");
}
