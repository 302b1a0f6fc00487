//! The answers to a measurement's question: for each primary metric and each variant against
//! the baseline, a decision (better, worse, equivalent within ±effect, or open) with the ratio
//! and its interval, and what the interval covers.
//!
//! - **One sitting** (`sitting_answers`): the rounds are blocks, so each round gives one
//!   log-ratio and the decision is `stats::sequential`'s on their mean, looked at after every
//!   round, the variance borrowed from a calibration where the file names one. It covers this
//!   sitting only: another day may differ by more than its interval. A decision once made is
//!   final: later rounds carry it as it was.
//! - **Several sittings** (`pooled_answers`): each sitting's estimate pooled by machine
//!   (`pool`: sittings on one boot are one machine, machines pooled with random effects and a
//!   prior on their spread), decided at the level this look across sittings may spend; it says
//!   how many sittings on how many machines it covers, and what a new machine will see.
//!
//! Either way, the steady-only analysis (the rounds whose windows were all steady) is kept
//! beside as a check of sensitivity, and each round's ratio for the page.

use serde::{Deserialize, Serialize};

use super::metrics::{Metric, metrics};
use super::pool::{PREDICTION_LEVEL, SittingId, by_machine, per_sitting};
use super::units::{Unit, blocked, pairs};
use crate::stats::machines::{TauPrior, look_alpha};
use crate::stats::ratio::{self, LogRatio, Prior};
use crate::stats::sequential::{Decision, Design, decide_on, look, repeats_needed};

/// Repeats per variant beyond which "how many more would decide it" is not estimated.
const MORE_LIMIT: usize = 100;

/// The steady-only analysis beside an answer: the ratio of the rounds whose windows were all
/// steady, with its fixed-sample 95 % interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyCheck {
    pub ratio: f64,
    pub ci: (f64, f64),
    #[serde(default = "fixed_level")]
    pub level: f64,
    /// Rounds kept, and left out for a window that was not steady.
    pub rounds: usize,
    pub left_out: usize,
}

/// One sitting's part in a pooled answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SittingPart {
    pub sitting: String,
    /// Its own decision (None when it was never looked at).
    pub decision: Option<Decision>,
    pub ratio: f64,
    /// Its fixed-sample 95 % interval.
    pub ci: (f64, f64),
    #[serde(default = "fixed_level")]
    pub level: f64,
    pub rounds: usize,
}

/// The level of the fixed-sample intervals shown beside an answer.
pub const FIXED_LEVEL: f64 = 0.95;

fn fixed_level() -> f64 {
    FIXED_LEVEL
}

/// One primary comparison's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub metric: String,
    pub variant: String,
    pub decision: Decision,
    /// The ratio of geometric means, variant / baseline, and its interval at the look's level
    /// (`level`: 0.9988 is a two-sided 99.88 % interval; a sequential look spends only part of
    /// the question's α).
    pub ratio: Option<f64>,
    pub ci: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    /// The smallest difference that matters (0.05: ±5 %).
    pub effect: f64,
    /// Repeats behind it: the baseline's and the variant's (rounds paired, twice).
    pub repeats: (usize, usize),
    /// The round it was decided at, or last looked at.
    pub round: usize,
    /// Open: about how many repeats per variant would decide it, with 80 % probability, at
    /// the spread measured so far (None: more than 100, or not estimable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
    /// Every look: round, ratio, interval.
    #[serde(default)]
    pub history: Vec<(usize, f64, f64, f64)>,
    /// Why it could not be looked at, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Better or worse, and surely inside ±effect.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub within_band: bool,
    /// What the interval covers: `this sitting only` or `across N sittings`.
    #[serde(default)]
    pub covers: String,
    /// Where its variance comes from, and its degrees of freedom.
    #[serde(default)]
    pub variance: String,
    /// Each round's ratio (this sitting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<(u32, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_check: Option<SteadyCheck>,
    /// Each sitting's part (pooled answers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sittings: Vec<SittingPart>,
    /// The between-machine standard deviation of the log-ratio, its posterior median (pooled
    /// answers on two machines or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<f64>,
    /// The machines the pooled sittings ran on (sittings on one boot are one machine).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub machines: usize,
    /// The interval of the ratio a new machine of this kind will see (pooled answers), at
    /// `prediction_level` (95 %): what to plan by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction_level: Option<f64>,
    /// τ estimated from the machines alone, with its degrees of freedom (machines − 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau_estimate: Option<(f64, f64)>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Answer {
    /// An answer not looked at yet.
    pub fn open(metric: &str, variant: &str, effect: f64, round: usize) -> Answer {
        Answer {
            metric: metric.into(),
            variant: variant.into(),
            decision: Decision::Open,
            ratio: None,
            ci: None,
            level: None,
            effect,
            repeats: (0, 0),
            round,
            more: None,
            history: Vec::new(),
            note: None,
            within_band: false,
            covers: String::new(),
            variance: String::new(),
            pairs: Vec::new(),
            steady_check: None,
            sittings: Vec::new(),
            tau: None,
            machines: 0,
            prediction: None,
            prediction_level: None,
            tau_estimate: None,
        }
    }
}

/// What the answers are to: the primary metrics and their effects, the design shared by every
/// primary comparison of the experiment, the round just completed, and variances to borrow.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    pub primary: &'a [(String, f64)],
    pub design: Design,
    pub round: usize,
    /// Whether every step of `round` has run. A round cut short (Ctrl-C) is not looked at: its
    /// answers stay those of the last look. Looking at it, and again once it is resumed and
    /// complete, would be one look more than the design spends its error on.
    pub complete: bool,
    /// Borrowed variances of one round's log-ratio, by metric.
    pub priors: &'a [(String, Prior)],
    /// The priors on the between-machine spread pooled answers use, by metric (the default
    /// for a metric not named).
    pub tau_priors: &'a [(String, TauPrior)],
}

/// Each primary question: its metric, its effect and the variant asked about (every variant
/// but the baseline), for the metrics some unit measured.
fn questions(variants: &[(String, Vec<Unit>)], baseline: usize, q: &Question) -> Vec<(Metric, f64, usize)> {
    let table = metrics();
    let mut out = Vec::new();
    for (key, effect) in q.primary {
        let Some(metric) = table.iter().find(|m| m.key == key) else {
            continue;
        };
        // Not measured in this measurement (p99 of a capacity search): no question.
        if !variants.iter().any(|(_, u)| u.iter().any(|u| u.value(key).is_some())) {
            continue;
        }
        out.extend(
            (0..variants.len())
                .filter(|&i| i != baseline)
                .map(|i| (*metric, *effect, i)),
        );
    }
    out
}

/// The sequential answers of one sitting (every unit of `variants` is of it); answers decided
/// earlier are carried over as they were.
pub fn sitting_answers(
    variants: &[(String, Vec<Unit>)],
    baseline: usize,
    q: &Question,
    earlier: &[Answer],
) -> Vec<Answer> {
    let mut out = Vec::new();
    for (metric, effect, i) in questions(variants, baseline, q) {
        let name = &variants[i].0;
        let before = earlier.iter().find(|a| a.metric == metric.key && &a.variant == name);
        if let Some(a) = before.filter(|a| a.decision.decided()) {
            out.push(a.clone());
            continue;
        }
        let (base, other) = (&variants[baseline].1, &variants[i].1);
        let prior = q.priors.iter().find(|(k, _)| k == metric.key).map(|(_, p)| p);
        let est = estimate(base, other, metric.key, prior);
        let mut answer = Answer {
            repeats: (count(base, metric.key), count(other, metric.key)),
            history: before.map(|a| a.history.clone()).unwrap_or_default(),
            covers: "this sitting only".into(),
            pairs: round_ratios(base, other, metric.key),
            steady_check: steady_check(base, other, metric.key),
            ..Answer::open(metric.key, name, effect, q.round)
        };
        if !q.complete {
            out.push(before.cloned().unwrap_or_else(|| Answer {
                note: Some(format!(
                    "not looked at yet: round {} did not complete (cut short, or the budget ended the rounds)",
                    q.round
                )),
                ..answer
            }));
            continue;
        }
        let Some(est) = est else {
            answer.note = Some(if answer.repeats.0 < 2 || answer.repeats.1 < 2 {
                "fewer than two repeats on a side".into()
            } else {
                "a value of 0: not comparable as a ratio".into()
            });
            out.push(answer);
            continue;
        };
        answer.variance = variance_text(&est, prior);
        let l = look(&q.design, q.round, &est, effect, metric.higher_is_better);
        answer.decision = l.decision;
        answer.within_band = l.within_band;
        answer.ratio = Some(l.ratio);
        answer.ci = l.ci.0.is_finite().then_some(l.ci);
        answer.level = answer.ci.map(|_| 1.0 - l.alpha);
        if l.ci.0.is_finite() {
            // Looked at again in the same round (the final comparison after the last round):
            // one point per round.
            answer.history.retain(|h| h.0 != q.round);
            answer.history.push((q.round, l.ratio, l.ci.0, l.ci.1));
        }
        if l.decision == Decision::Open {
            answer.more = repeats_needed(&q.design, &est, effect, MORE_LIMIT);
        }
        out.push(answer);
    }
    out
}

/// The answers pooled across sittings: each sitting's estimate (paired over its rounds),
/// sittings on one boot pooled as one machine, machines pooled with a random-effects model
/// whose τ has the half-normal prior `q.tau_priors` gives its metric (`pool::by_machine`).
/// Adding a sitting is a look: at k sittings the level is `stats::machines::look_alpha` of the
/// question's share of the design's α, so the chance of a false "differs" over every number of
/// sittings stays within that share. `own` holds each sitting's own answers (its last look),
/// shown beside.
pub fn pooled_answers(
    variants: &[(String, Vec<Unit>)],
    baseline: usize,
    q: &Question,
    sittings: &[SittingId],
    own: &[Vec<Answer>],
) -> Vec<Answer> {
    let share = q.design.alpha / q.design.comparisons as f64;
    let mut out = Vec::new();
    for (metric, effect, i) in questions(variants, baseline, q) {
        let prior = &tau_prior(q.tau_priors, metric.key);
        let name = &variants[i].0;
        let (base, other) = (&variants[baseline].1, &variants[i].1);
        let estimates = per_sitting(base, other, metric.key, sittings.len(), true);
        let parts: Vec<SittingPart> = estimates
            .iter()
            .map(|(s, est)| SittingPart {
                sitting: sittings[*s].name.clone(),
                decision: own
                    .get(*s)
                    .and_then(|a| a.iter().find(|a| a.metric == metric.key && &a.variant == name))
                    .map(|a| a.decision),
                ratio: est.ratio(),
                ci: est.interval(FIXED_LEVEL),
                level: FIXED_LEVEL,
                rounds: est.n.0,
            })
            .collect();
        let alpha = look_alpha(share, parts.len());
        let mut answer = Answer {
            repeats: (count(base, metric.key), count(other, metric.key)),
            round: parts.len(),
            steady_check: steady_check(base, other, metric.key),
            ..Answer::open(metric.key, name, effect, parts.len())
        };
        let wide = by_machine(&estimates, sittings, prior, 1.0 - alpha);
        let narrow = by_machine(&estimates, sittings, prior, 1.0 - 2.0 * alpha);
        match (wide, narrow) {
            (Some(w), Some(n)) if parts.len() >= 2 => {
                let l = decide_on(w.d, w.ci, n.ci, alpha, effect, metric.higher_is_better);
                answer.decision = l.decision;
                answer.within_band = l.within_band;
                answer.ratio = Some(l.ratio);
                answer.ci = Some(l.ci);
                answer.level = Some(1.0 - alpha);
                answer.tau = w.tau;
                answer.covers = format!("across {}", w.covers());
                answer.machines = w.machines;
                answer.prediction = Some((w.prediction.0.exp(), w.prediction.1.exp()));
                answer.prediction_level = Some(PREDICTION_LEVEL);
                answer.tau_estimate = w.tau_estimate;
                answer.variance = format!(
                    "{}; look {} of the sittings at {:.2} % (of {:.2} %); {}",
                    if w.machines == 1 {
                        "one machine: its sittings pooled (fixed effect)".to_string()
                    } else {
                        "machines pooled with random effects".to_string()
                    },
                    parts.len() - 1,
                    alpha * 100.0,
                    share * 100.0,
                    prior.text()
                );
            }
            _ => {
                answer.note = Some(format!(
                    "{} of {} sittings could be estimated: pooling needs two",
                    parts.len(),
                    sittings.len()
                ));
            }
        }
        answer.sittings = parts;
        out.push(answer);
    }
    out
}

/// The prior on τ for `key`: the one given, else the default for this kind of machine.
pub fn tau_prior(priors: &[(String, TauPrior)], key: &str) -> TauPrior {
    priors
        .iter()
        .find(|(k, _)| k == key)
        .map_or_else(TauPrior::default_for_machines, |(_, p)| p.clone())
}

fn count(units: &[Unit], key: &str) -> usize {
    units.iter().filter(|u| u.value(key).is_some()).count()
}

/// The estimate of one sitting's units: paired over its rounds when they ran in blocks,
/// unpaired (conservative degrees of freedom) otherwise.
pub fn estimate(base: &[Unit], other: &[Unit], key: &str, prior: Option<&Prior>) -> Option<LogRatio> {
    if blocked(base) && blocked(other) {
        let p = pairs(base, other, key).concat();
        return ratio::paired(&p, prior);
    }
    let values = |u: &[Unit]| u.iter().filter_map(|u| u.value(key)).collect::<Vec<f64>>();
    ratio::unpaired(&values(base), &values(other), true)
}

/// Each round's ratio, variant / baseline, in round order.
fn round_ratios(base: &[Unit], other: &[Unit], key: &str) -> Vec<(u32, f64)> {
    let mut out: Vec<(u32, f64)> = base
        .iter()
        .filter_map(|b| {
            let round = b.round?;
            let o = other
                .iter()
                .find(|o| o.sitting == b.sitting && o.round == Some(round))?;
            let (bv, ov) = (b.value(key)?, o.value(key)?);
            (bv > 0.0).then(|| (round, ov / bv))
        })
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

/// The steady-only analysis: rounds whose windows were all steady, when some were not.
fn steady_check(base: &[Unit], other: &[Unit], key: &str) -> Option<SteadyCheck> {
    let left_out = base.iter().chain(other).filter(|u| u.unsteady()).count();
    if left_out == 0 || !blocked(base) || !blocked(other) {
        return None;
    }
    let keep = |u: &[Unit]| u.iter().filter(|u| !u.unsteady()).cloned().collect::<Vec<Unit>>();
    let est = estimate(&keep(base), &keep(other), key, None)?;
    Some(SteadyCheck {
        ratio: est.ratio(),
        ci: est.interval(FIXED_LEVEL),
        level: FIXED_LEVEL,
        rounds: est.n.0,
        left_out,
    })
}

/// `own 4 rounds, paired (3 df)`, `own 3 rounds, paired, and calibration … (2 + 9 df)`.
fn variance_text(est: &LogRatio, prior: Option<&Prior>) -> String {
    let own = est.df - est.borrowed_df;
    let how = if est.paired { "paired" } else { "unpaired" };
    match prior.filter(|_| est.borrowed_df > 0.0) {
        Some(p) => format!(
            "{} rounds {how}, {own:.0} df, and {} ({:.0} df, its variance ×{})",
            est.n.0,
            p.source,
            est.borrowed_df,
            crate::stats::ratio::BORROW_SAFETY
        ),
        None if est.offered_df > 0.0 => format!(
            "{} and {} repeats {how}, {own:.0} df; the calibration's variance not borrowed: these rounds spread more \
             than it allows (×{} it, F test at {:.0} %)",
            est.n.0,
            est.n.1,
            crate::stats::ratio::BORROW_SAFETY,
            crate::stats::ratio::BORROW_CHECK * 100.0
        ),
        None => format!("{} and {} repeats {how}, {own:.0} df", est.n.0, est.n.1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal;
    use crate::steady::{Load, SecondFigures, judge};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    /// A 60 s flat-out window: per-second throughput around `level` (CV 15 %) and p50
    /// following it; with `flushes`, half the windows hold a flush somewhere in them that
    /// costs 35 % of throughput (and raises p50 by half) for 20 s, as memtable flushes can
    /// on two shared cores. Its mean throughput and whether the verdict calls it steady.
    fn window(rng: &mut Pcg64Mcg, level: f64, flushes: bool, judged: bool) -> (f64, bool) {
        let flush = (flushes && rng.random::<f64>() < 0.5).then(|| rng.random_range(0..60) as f64);
        let seconds: Vec<SecondFigures> = (0..60)
            .map(|t| {
                let t = t as f64;
                let hit = flush.is_some_and(|f| t >= f && t < f + 20.0);
                let ops = level * if hit { 0.65 } else { 1.0 } * (1.0 + 0.15 * normal(rng)).max(0.1);
                let p50 = 3.0 * (level / ops).powf(0.8) * if hit { 1.5 } else { 1.0 };
                SecondFigures {
                    at_s: t,
                    ops_per_s: ops,
                    p50_ms: Some(p50),
                    p99_ms: Some(p50 * 4.0),
                }
            })
            .collect();
        let mean = seconds.iter().map(|s| s.ops_per_s).sum::<f64>() / 60.0;
        (mean, judged && judge(&seconds, Load::FlatOut).steady)
    }

    /// A variant whose flushes cost throughput in some windows, against one without: 2,000
    /// rounds (seed 71). Keeping every window, the paired ratio is the true one (the mean
    /// log-ratio within three standard errors of the truth, from 20,000 windows a side, both
    /// errors counted); the
    /// steady-only analysis leaves out more of the variant's flush windows than of the
    /// baseline's and flatters it (its estimate is more than three standard errors off).
    #[test]
    fn windows_with_flushes_kept_give_an_unbiased_ratio_and_left_out_a_flattering_one() {
        let mut rng = Pcg64Mcg::seed_from_u64(71);
        let (truth, truth_se) = {
            let n = 20_000;
            let a: Vec<f64> = (0..n)
                .map(|_| window(&mut rng, 50_000.0, false, false).0.ln())
                .collect();
            let b: Vec<f64> = (0..n).map(|_| window(&mut rng, 50_000.0, true, false).0.ln()).collect();
            let se = ((crate::stats::variance(&a) + crate::stats::variance(&b)) / n as f64).sqrt();
            (crate::stats::mean(&b) - crate::stats::mean(&a), se)
        };
        let rounds: Vec<((f64, bool), (f64, bool))> = (0..2_000)
            .map(|_| {
                let drift = (0.1 * normal(&mut rng)).exp();
                (
                    window(&mut rng, 50_000.0 * drift, false, true),
                    window(&mut rng, 50_000.0 * drift, true, true),
                )
            })
            .collect();
        let all: Vec<(f64, f64)> = rounds.iter().map(|(a, b)| (a.0, b.0)).collect();
        let steady: Vec<(f64, f64)> = rounds
            .iter()
            .filter(|(a, b)| a.1 && b.1)
            .map(|(a, b)| (a.0, b.0))
            .collect();
        let (kept, left) = (
            ratio::paired(&all, None).unwrap(),
            ratio::paired(&steady, None).unwrap(),
        );
        eprintln!(
            "flushes: truth x{:.4}; every window x{:.4} (se {:.4}); steady only x{:.4} (se {:.4}, {} of {} rounds)",
            truth.exp(),
            kept.ratio(),
            kept.se,
            left.ratio(),
            left.se,
            steady.len(),
            all.len()
        );
        let off = |e: &ratio::LogRatio| (e.d - truth).abs() / e.se.hypot(truth_se);
        assert!(off(&kept) <= 3.0, "every window: {kept:?} against {truth}");
        assert!(off(&left) > 3.0, "steady only: {left:?} against {truth}");
    }
}
