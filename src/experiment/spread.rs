//! The spread between machines, read from and kept in the history: before pooling, each primary
//! metric's prior on τ is scaled from what other experiments measured of it (the default for
//! this kind of machine until there is something); after, every pooled answer over two machines
//! or more records its own estimate (`history::spreads`). A history that cannot be opened
//! leaves the defaults and says so: the comparison itself needs nothing stored.

use std::collections::BTreeSet;

use super::Experiment;
use super::compare::{Comparison, SittingId};
use crate::console::say;
use crate::history::spreads::{self, Spread};
use crate::history::store::{Location, Store};
use crate::stats::machines::TauPrior;

/// The history, opened, or None with a warning naming the fix.
fn open(history: Option<&Location>) -> Option<Store> {
    let at = history?;
    Store::open(at)
        .map_err(|e| {
            say(&format!(
                "the spread between machines was not read from or kept in the history at {} ({e:#}); the default prior \
                 stands (--history names another, --no-history leaves it)",
                at.describe()
            ))
        })
        .ok()
}

/// The prior on τ for each primary metric of `exp` from the history's estimates of experiments
/// other than `name` (the default where there are none, or no history).
pub fn priors(exp: &Experiment, name: &str, history: Option<&Location>) -> Vec<(String, TauPrior)> {
    let Some(mut store) = open(history) else {
        return Vec::new();
    };
    let metrics: BTreeSet<String> = (0..exp.file.measure.len()).flat_map(|m| exp.primary(m)).collect();
    metrics
        .into_iter()
        .filter_map(|metric| {
            let stored = spreads::of_metric(&mut store, &metric, name).ok()?;
            if stored.is_empty() {
                return None;
            }
            let estimates: Vec<(f64, f64)> = stored.iter().map(|s| (s.tau, s.df)).collect();
            let source = format!("{} pooled estimate(s) in the history", stored.len());
            Some((metric, TauPrior::from_estimates(&estimates, &source)))
        })
        .collect()
}

/// Keeps the spread every pooled answer of experiment `name`'s `comparisons` measured over two
/// machines or more.
pub fn record(name: &str, sittings: &[SittingId], comparisons: &[Comparison], history: Option<&Location>) {
    let pooled: Vec<_> = comparisons
        .iter()
        .flat_map(|c| c.answers.iter().map(move |a| (c, a)))
        .filter(|(_, a)| a.machines >= 2 && a.tau_estimate.is_some())
        .collect();
    if pooled.is_empty() {
        return;
    }
    let Some(mut store) = open(history) else {
        return;
    };
    let machines: BTreeSet<&str> = sittings.iter().map(|s| s.machine.as_str()).collect();
    let machines = machines.into_iter().collect::<Vec<_>>().join(",");
    for (c, a) in pooled {
        let (tau, df) = a.tau_estimate.unwrap_or_default();
        let s = Spread {
            key: format!("{name}/{}/{}/{}/{machines}", c.measurement, a.variant, a.metric),
            experiment: name.to_string(),
            measurement: c.measurement.clone(),
            variant: a.variant.clone(),
            metric: a.metric.clone(),
            tau,
            df,
            machines: a.machines as i64,
            recorded_at: crate::history::events::Event::now(),
        };
        if let Err(e) = spreads::record(&mut store, &s) {
            say(&format!(
                "the spread between machines was not kept in the history: {e:#}"
            ));
            return;
        }
    }
}
