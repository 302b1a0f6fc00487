//! Sittings pooled by machine: a sitting's estimate of a log-ratio is paired over its rounds;
//! sittings on one boot of one machine are one machine (`stats::machines::within_machine`, a
//! fixed effect: they share its level, and their measured spread between sittings was nil);
//! machines are pooled with a random-effects model whose between-machine spread τ has a
//! half-normal prior (`stats::machines::pool`). With one machine the interval is that
//! machine's, and says so; the prediction for a new machine of this kind adds τ either way.

use serde::{Deserialize, Serialize};

use super::units::{Unit, blocked, pairs};
use crate::stats::machines::{Study, TauPrior, pool, within_machine};
use crate::stats::meta::random_effects;
use crate::stats::ratio::{self, LogRatio};
use crate::stats::t_quantile;

/// The level of the interval a new machine of this kind will see (`Pooled::prediction`).
pub const PREDICTION_LEVEL: f64 = 0.95;

/// A sitting as pooling sees it: its name and the machine it ran on (its boot: the same boot
/// id is the same machine; a record without one falls back to its host name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SittingId {
    pub name: String,
    pub machine: String,
}

/// What several sittings say of one log-ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    /// The log-ratio across machines (one machine: that machine's).
    pub d: f64,
    /// Its interval at the level asked (log scale).
    pub ci: (f64, f64),
    /// The two-sided p-value of "no difference" (one machine: its t-test; several: twice the
    /// posterior probability of the smaller side of 0).
    pub p: f64,
    /// The 95 % interval a new machine of this kind will see (log scale).
    pub prediction: (f64, f64),
    pub sittings: usize,
    pub machines: usize,
    /// The posterior median of the between-machine SD (two machines or more).
    pub tau: Option<f64>,
    /// The moment estimate of τ from the machines alone and its degrees of freedom
    /// (machines − 1), what caplab keeps to scale later priors by.
    pub tau_estimate: Option<(f64, f64)>,
}

impl Pooled {
    /// `2 sittings on 1 machine` / `4 sittings on 2 machines`.
    pub fn covers(&self) -> String {
        format!(
            "{} sitting{} on {} machine{}",
            self.sittings,
            if self.sittings == 1 { "" } else { "s" },
            self.machines,
            if self.machines == 1 { "" } else { "s" }
        )
    }
}

/// Each sitting's estimate of `key`, other / base: paired over its rounds when they ran in
/// blocks, unpaired otherwise (`conservative`: min(n) − 1 degrees of freedom). The sitting's
/// index in `sittings`, with the estimate.
pub fn per_sitting(
    base: &[Unit],
    other: &[Unit],
    key: &str,
    sittings: usize,
    conservative: bool,
) -> Vec<(usize, LogRatio)> {
    (0..sittings)
        .filter_map(|s| {
            let b: Vec<Unit> = base.iter().filter(|u| u.sitting == s).cloned().collect();
            let o: Vec<Unit> = other.iter().filter(|u| u.sitting == s).cloned().collect();
            if blocked(&b) && blocked(&o) {
                let p = pairs(&b, &o, key).concat();
                if p.len() >= 2 {
                    return ratio::paired(&p, None).map(|e| (s, e));
                }
            }
            let values = |u: &[Unit]| u.iter().filter_map(|u| u.value(key)).collect::<Vec<f64>>();
            ratio::unpaired(&values(&b), &values(&o), conservative).map(|e| (s, e))
        })
        .collect()
}

/// Pools `estimates` (a sitting's index into `ids`, and its estimate) by machine at `level`.
/// None without an estimate.
pub fn by_machine(estimates: &[(usize, LogRatio)], ids: &[SittingId], prior: &TauPrior, level: f64) -> Option<Pooled> {
    let mut machines: Vec<(&str, Vec<Study>)> = Vec::new();
    for (s, e) in estimates {
        let machine = ids.get(*s).map_or("", |id| id.machine.as_str());
        let study = Study {
            d: e.d,
            se: e.se,
            df: e.df,
        };
        match machines.iter_mut().find(|(m, _)| *m == machine) {
            Some((_, studies)) => studies.push(study),
            None => machines.push((machine, vec![study])),
        }
    }
    let studies: Vec<Study> = machines.iter().filter_map(|(_, s)| within_machine(s)).collect();
    let predicted = pool(&studies, prior.scale, 0.95)?.prediction(PREDICTION_LEVEL);
    let mut out = Pooled {
        d: 0.0,
        ci: (f64::NAN, f64::NAN),
        p: f64::NAN,
        prediction: predicted,
        sittings: estimates.len(),
        machines: studies.len(),
        tau: None,
        tau_estimate: None,
    };
    if let [one] = studies.as_slice() {
        let half = if one.se > 0.0 {
            t_quantile(0.5 + level / 2.0, one.df.max(1.0)) * one.se
        } else {
            0.0
        };
        out.d = one.d;
        out.ci = (one.d - half, one.d + half);
        out.p = LogRatio {
            d: one.d,
            se: one.se,
            df: one.df.max(1.0),
            n: (0, 0),
            paired: true,
            borrowed_df: 0.0,
            offered_df: 0.0,
        }
        .p();
        return Some(out);
    }
    let posterior = pool(&studies, prior.scale, level)?;
    out.d = posterior.mean();
    out.ci = posterior.interval(level);
    out.p = posterior.two_sided();
    out.tau = Some(posterior.tau_median());
    let y: Vec<f64> = studies.iter().map(|s| s.d).collect();
    let v: Vec<f64> = studies.iter().map(|s| s.se * s.se).collect();
    out.tau_estimate = random_effects(&y, &v).map(|p| (p.tau, p.df));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str, machine: &str) -> SittingId {
        SittingId {
            name: name.into(),
            machine: machine.into(),
        }
    }

    fn est(ratio: f64, se: f64) -> LogRatio {
        LogRatio {
            d: f64::ln(ratio),
            se,
            df: 3.0,
            n: (4, 4),
            paired: true,
            borrowed_df: 0.0,
            offered_df: 0.0,
        }
    }

    /// Two sittings on one boot that agree within their errors are one machine: narrower than
    /// either sitting about that machine, and the prediction for another machine wider than
    /// the interval.
    #[test]
    fn sittings_on_one_boot_are_one_machine() {
        let ids = [id("a", "boot1"), id("b", "boot1")];
        let prior = TauPrior::default_for_machines();
        let p = by_machine(&[(0, est(1.04, 0.03)), (1, est(1.00, 0.03))], &ids, &prior, 0.95).unwrap();
        assert_eq!((p.sittings, p.machines, p.tau), (2, 1, None));
        assert_eq!(p.covers(), "2 sittings on 1 machine");
        let one = t_quantile(0.975, 3.0) * 0.03;
        assert!(p.ci.1 - p.ci.0 < 2.0 * one, "{p:?}");
        assert!(p.prediction.0 < p.ci.0 && p.prediction.1 > p.ci.1, "{p:?}");
        // The same sittings on two boots: two machines, a τ of their own.
        let ids = [id("a", "boot1"), id("b", "boot2")];
        let two = by_machine(&[(0, est(1.04, 0.03)), (1, est(0.945, 0.03))], &ids, &prior, 0.95).unwrap();
        assert_eq!((two.machines, two.covers().as_str()), (2, "2 sittings on 2 machines"));
        assert!(
            two.tau.is_some() && two.tau_estimate.is_some_and(|t| t.1 == 1.0),
            "{two:?}"
        );
    }
}
