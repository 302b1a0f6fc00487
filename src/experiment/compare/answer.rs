//! The answers to a measurement's question: for each primary metric and each variant against
//! the baseline, a decision (better, worse, equivalent within ±effect, or open) from
//! `stats::sequential`, with the ratio and its interval. A decision once made is final: later
//! rounds carry it as it was.

use serde::{Deserialize, Serialize};

use super::load::Observation;
use super::metrics::metrics;
use crate::stats::sequential::{Decision, Design, look, repeats_needed};

/// Repeats per variant beyond which "how many more would decide it" is not estimated.
const MORE_LIMIT: usize = 100;

/// One primary comparison's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub metric: String,
    pub variant: String,
    pub decision: Decision,
    /// The ratio of geometric means, variant / baseline, and its interval at the look's level.
    pub ratio: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// The smallest difference that matters (0.05: ±5 %).
    pub effect: f64,
    /// Repeats behind it: the baseline's and the variant's.
    pub repeats: (usize, usize),
    /// The round it was decided at, or last looked at.
    pub round: usize,
    /// Open: about how many repeats per variant would decide it at the spread measured so far
    /// (None: more than 100, or not estimable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
    /// Every look: round, ratio, interval.
    #[serde(default)]
    pub history: Vec<(usize, f64, f64, f64)>,
    /// Why it could not be looked at, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Answer {
    /// `throughput of b: BETTER ×1.481 [1.402–1.565] (±5 %, 4 and 4 repeats)`.
    pub fn line(&self) -> String {
        let ratio = match (self.ratio, self.ci) {
            (Some(r), Some((lo, hi))) if lo.is_finite() => format!(" ×{r:.3} [{lo:.3}–{hi:.3}]"),
            (Some(r), _) => format!(" ×{r:.3}"),
            _ => String::new(),
        };
        let more = match (self.decision, self.more) {
            (Decision::Open, Some(n)) => format!("; about {n} repeats per variant would decide it"),
            (Decision::Open, None) if self.note.is_none() => "; more than 100 repeats per variant would".into(),
            _ => String::new(),
        };
        format!(
            "{} of {}: {}{ratio} (±{:.0} %, {} and {} repeats{}){more}",
            self.metric,
            self.variant,
            self.decision.name().to_uppercase(),
            self.effect * 100.0,
            self.repeats.0,
            self.repeats.1,
            self.note.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
        )
    }
}

/// What the answers are to: the primary metrics and their effects, the design shared by every
/// primary comparison of the experiment, and the round just completed.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    pub primary: &'a [(String, f64)],
    pub design: Design,
    pub round: usize,
    /// Whether every step of `round` has run. A round cut short (Ctrl-C) is not looked at: its
    /// answers stay those of the last look. Looking at it, and again once it is resumed and
    /// complete, would be one look more than the design spends its error on.
    pub complete: bool,
}

/// The answers for `variants` (the observations compared: steady ones, as the comparison keeps
/// them) against `baseline`; answers decided earlier are carried over as they were.
pub fn answers(
    variants: &[(String, Vec<Observation>)],
    baseline: usize,
    q: &Question,
    earlier: &[Answer],
) -> Vec<Answer> {
    let table = metrics();
    let mut out = Vec::new();
    for (key, effect) in q.primary {
        let Some(metric) = table.iter().find(|m| m.key == key) else {
            continue;
        };
        let values: Vec<Vec<f64>> = variants
            .iter()
            .map(|(_, obs)| obs.iter().filter_map(|o| (metric.of)(o)).collect())
            .collect();
        if values.iter().all(|v| v.is_empty()) {
            // Not measured in this measurement (p99 of a capacity search).
            continue;
        }
        for (i, (name, _)) in variants.iter().enumerate() {
            if i == baseline {
                continue;
            }
            let before = earlier.iter().find(|a| &a.metric == key && &a.variant == name);
            if let Some(a) = before.filter(|a| a.decision.decided()) {
                out.push(a.clone());
                continue;
            }
            let (a, b) = (&values[baseline], &values[i]);
            // Open until looked at, with the history of the looks before.
            let mut answer = Answer {
                metric: key.clone(),
                variant: name.clone(),
                decision: Decision::Open,
                ratio: None,
                ci: None,
                effect: *effect,
                repeats: (a.len(), b.len()),
                round: q.round,
                more: None,
                history: before.map(|a| a.history.clone()).unwrap_or_default(),
                note: None,
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
            match look(&q.design, q.round, a, b, *effect, metric.higher_is_better) {
                Some(l) => {
                    answer.decision = l.decision;
                    answer.ratio = Some(l.ratio);
                    answer.ci = l.ci.0.is_finite().then_some(l.ci);
                    if l.ci.0.is_finite() {
                        // Looked at again in the same round (the final comparison after the
                        // last round): one point per round.
                        answer.history.retain(|h| h.0 != q.round);
                        answer.history.push((q.round, l.ratio, l.ci.0, l.ci.1));
                    }
                    if l.decision == Decision::Open {
                        answer.more = repeats_needed(&q.design, a, b, *effect, MORE_LIMIT);
                    }
                }
                None => {
                    answer.note = Some(if a.len() < 2 || b.len() < 2 {
                        "fewer than two repeats on a side".into()
                    } else {
                        "a value of 0: not comparable as a ratio".into()
                    });
                }
            }
            out.push(answer);
        }
    }
    out
}
