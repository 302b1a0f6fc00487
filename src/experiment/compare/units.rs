//! What a comparison reads: units, one per node a variant ran on (a step of an experiment, or a
//! results directory given by hand), each with its sitting, its round (its block: every round
//! runs every variant once, so units of one round are paired) and the value of every metric. The
//! values come from the experiment's record (experiment.json keeps them for every step), so a
//! comparison needs no step's files; when those are at hand, a unit also carries its per-second
//! series (which stand in for repeats when a variant has one) and its merged response
//! histogram (the percentile of every repeat merged, shown beside).

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::load::{Observation, Series};
use super::metrics::metrics;

/// What a unit's files add to its values.
#[derive(Debug)]
pub struct Detail {
    pub series: Series,
    pub response: Histogram<u64>,
}

/// One node's measurement of a variant.
#[derive(Debug, Clone)]
pub struct Unit {
    /// Its sitting's index (0 when there is one).
    pub sitting: usize,
    /// Its round within the sitting (None: not run in blocks).
    pub round: Option<u32>,
    /// Its results directory, as recorded.
    pub dir: String,
    /// Metric key → value (a metric it did not measure is absent).
    pub values: BTreeMap<String, f64>,
    /// Whether its measured window was steady (None: not judged, or a capacity search).
    pub steady: Option<bool>,
    /// Its steady-state verdict in words.
    pub why: String,
    pub detail: Option<Arc<Detail>>,
}

impl Unit {
    /// A unit from what a step left on disk.
    pub fn from_observation(o: &Observation, sitting: usize, round: Option<u32>) -> Unit {
        let (dir, steady, why, detail) = match o {
            Observation::Run {
                dir,
                result,
                series,
                response,
            } => (
                dir.clone(),
                result.steady_state.as_ref().map(|s| s.steady),
                result
                    .steady_state
                    .as_ref()
                    .map_or_else(String::new, |s| s.summary.clone()),
                Some(Arc::new(Detail {
                    series: series.clone(),
                    response: (**response).clone(),
                })),
            ),
            Observation::Capacity(_) => (String::new(), None, String::new(), None),
        };
        Unit {
            sitting,
            round,
            dir,
            values: values_of(o),
            steady,
            why,
            detail,
        }
    }

    pub fn value(&self, key: &str) -> Option<f64> {
        self.values.get(key).copied()
    }

    pub fn unsteady(&self) -> bool {
        self.steady == Some(false)
    }
}

/// Every metric's value in one observation.
pub fn values_of(o: &Observation) -> BTreeMap<String, f64> {
    metrics()
        .iter()
        .filter_map(|m| (m.of)(o).filter(|v| v.is_finite()).map(|v| (m.key.to_string(), v)))
        .collect()
}

/// The mean of several windows' values on one node, metric by metric: the geometric mean when
/// every window's value is positive (what the log-scale comparison of nodes then reads), the
/// arithmetic mean otherwise (counts that can be 0). A metric some window lacks is left out.
pub fn node_mean(windows: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let Some(first) = windows.first() else {
        return BTreeMap::new();
    };
    first
        .keys()
        .filter_map(|k| {
            let v: Vec<f64> = windows.iter().filter_map(|w| w.get(k).copied()).collect();
            if v.len() != windows.len() {
                return None;
            }
            let n = v.len() as f64;
            let m = if v.iter().all(|x| *x > 0.0) {
                (v.iter().map(|x| x.ln()).sum::<f64>() / n).exp()
            } else {
                v.iter().sum::<f64>() / n
            };
            Some((k.clone(), m))
        })
        .collect()
}

/// Per sitting (by index, up to the highest present), the (baseline, variant) values of `key`
/// of each round both ran: the blocks of a paired comparison. Empty for units not run in blocks.
pub fn pairs(base: &[Unit], other: &[Unit], key: &str) -> Vec<Vec<(f64, f64)>> {
    let sittings = base.iter().chain(other).map(|u| u.sitting + 1).max().unwrap_or(1);
    let mut out = vec![Vec::new(); sittings];
    for b in base {
        let Some(round) = b.round else { continue };
        let Some(bv) = b.value(key) else { continue };
        if let Some(ov) = other
            .iter()
            .find(|o| o.sitting == b.sitting && o.round == Some(round))
            .and_then(|o| o.value(key))
            && let Some(slot) = out.get_mut(b.sitting)
        {
            slot.push((bv, ov));
        }
    }
    out
}

/// Whether these units were run in blocks (every one has a round).
pub fn blocked(units: &[Unit]) -> bool {
    !units.is_empty() && units.iter().all(|u| u.round.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(sitting: usize, round: u32, v: f64) -> Unit {
        Unit {
            sitting,
            round: Some(round),
            dir: String::new(),
            values: BTreeMap::from([("throughput".to_string(), v)]),
            steady: Some(true),
            why: String::new(),
            detail: None,
        }
    }

    #[test]
    fn units_pair_by_sitting_and_round() {
        let a = [unit(0, 1, 10.0), unit(0, 2, 11.0), unit(1, 1, 20.0)];
        // b's round 2 of sitting 0 is missing (its step failed): that round has no pair.
        let b = [unit(0, 1, 12.0), unit(1, 1, 25.0), unit(1, 2, 26.0)];
        let p = pairs(&a, &b, "throughput");
        assert_eq!(p, vec![vec![(10.0, 12.0)], vec![(20.0, 25.0)]]);
        assert!(pairs(&a, &b, "p99").iter().all(Vec::is_empty));
    }

    #[test]
    fn a_node_mean_is_geometric_for_positive_values() {
        let w = [
            BTreeMap::from([("t".to_string(), 100.0), ("gc".to_string(), 0.0)]),
            BTreeMap::from([("t".to_string(), 400.0), ("gc".to_string(), 2.0)]),
        ];
        let m = node_mean(&w);
        assert!((m["t"] - 200.0).abs() < 1e-9 && (m["gc"] - 1.0).abs() < 1e-12, "{m:?}");
    }
}
