//! The plan of a capacity search: which rate, and which repeat of it, to run next, and what
//! the runs so far say. An adaptive plan searches (`Search`), optionally after a flat-out
//! probe that gives it a ceiling; a sweep runs a fixed list of rates, as E3 did. Either way a
//! rate passes only if every repeat passes, and after a failing repeat the rest are skipped.
//! The plan only decides; running the steps is the caller's business, so every decision here
//! is tested without a cluster.

use serde::{Deserialize, Serialize};

use super::search::Search;
use crate::console::group;
use crate::measure::result::CapacityStep;

/// What a rate came to over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateResult {
    pub rate: f64,
    pub pass: bool,
    pub repeats_run: u32,
}

#[derive(Debug, Clone)]
enum Mode {
    Adaptive {
        search: Search,
        start: Option<f64>,
        precision: f64,
        probe: bool,
    },
    Sweep {
        rates: Vec<f64>,
        next: usize,
        /// A curve's sweep: this many rates spread up to the flat-out probe's throughput,
        /// known once the probe has run.
        from_probe: Option<u32>,
    },
}

#[derive(Debug, Clone)]
pub struct Plan {
    mode: Mode,
    repeats: u32,
    /// The rate being run, its last repeat, and whether every repeat so far passed.
    current: Option<(CapacityStep, bool)>,
    rates: Vec<RateResult>,
}

/// Where the adaptive search starts without `--start` or a probe.
const DEFAULT_START: f64 = 1_000.0;

impl Plan {
    /// An adaptive search from `start` (default: half the probe's throughput, or 1,000 op/s
    /// without a probe) until the bracket is within `precision`.
    pub fn adaptive(start: Option<f64>, precision: f64, probe: bool, repeats: u32) -> Plan {
        Plan {
            mode: Mode::Adaptive {
                search: Search::new(start.unwrap_or(DEFAULT_START), precision),
                start,
                precision,
                probe,
            },
            repeats: repeats.max(1),
            current: None,
            rates: Vec::new(),
        }
    }

    /// Every rate of `rates`, in order.
    pub fn sweep(rates: Vec<f64>, repeats: u32) -> Plan {
        Plan {
            mode: Mode::Sweep {
                rates: rates.into_iter().map(|r| r.round().max(1.0)).collect(),
                next: 0,
                from_probe: None,
            },
            repeats: repeats.max(1),
            current: None,
            rates: Vec::new(),
        }
    }

    /// A curve's sweep: `points` rates, the flat-out probe's throughput × 1/points, 2/points …
    /// up to all of it (`--curve` without `--rates`).
    pub fn curve(points: u32, repeats: u32) -> Plan {
        Plan {
            mode: Mode::Sweep {
                rates: Vec::new(),
                next: 0,
                from_probe: Some(points.max(2)),
            },
            repeats: repeats.max(1),
            current: None,
            rates: Vec::new(),
        }
    }

    pub fn mode(&self) -> &'static str {
        match self.mode {
            Mode::Adaptive { .. } => "adaptive",
            Mode::Sweep { .. } => "sweep",
        }
    }

    /// "adaptive search to 5% precision", "sweeping 11 rates".
    pub fn describe(&self) -> String {
        match &self.mode {
            Mode::Adaptive { precision, .. } => format!("adaptive search to {:.0}% precision", precision * 100.0),
            Mode::Sweep {
                from_probe: Some(n), ..
            } => format!("sweeping {n} rates up to the flat-out throughput"),
            Mode::Sweep { rates, .. } => format!("sweeping {} rates", rates.len()),
        }
    }

    pub fn repeats(&self) -> u32 {
        self.repeats
    }

    /// The search's precision (sweeps have none).
    pub fn precision(&self) -> Option<f64> {
        match self.mode {
            Mode::Adaptive { precision, .. } => Some(precision),
            Mode::Sweep { .. } => None,
        }
    }

    /// Whether a flat-out probe should run before the first rate.
    pub fn wants_probe(&self) -> bool {
        let probes = matches!(
            self.mode,
            Mode::Adaptive { probe: true, .. }
                | Mode::Sweep {
                    from_probe: Some(_),
                    ..
                }
        );
        probes && self.rates.is_empty() && self.current.is_none()
    }

    /// The probe's flat-out throughput: the search starts below it and never goes above it
    /// before a run has passed there; a curve's sweep takes its rates from it.
    pub fn probed(&mut self, ceiling: f64) {
        match &mut self.mode {
            Mode::Adaptive {
                search,
                start,
                precision,
                ..
            } => *search = Search::new(start.unwrap_or(ceiling / 2.0), *precision).with_ceiling(ceiling),
            Mode::Sweep {
                rates,
                from_probe: Some(n),
                ..
            } => {
                *rates = (1..=*n)
                    .map(|i| (ceiling * f64::from(i) / f64::from(*n)).round().max(1.0))
                    .collect();
                rates.dedup();
            }
            Mode::Sweep { .. } => {}
        }
    }

    /// The next step to run, or None when the plan is done.
    pub fn next_step(&mut self) -> Option<CapacityStep> {
        if let Some((t, all_pass)) = self.current {
            if all_pass && t.repeat < self.repeats {
                let next = CapacityStep {
                    repeat: t.repeat + 1,
                    ..t
                };
                self.current = Some((next, true));
                return Some(next);
            }
            self.decide();
        }
        let rate = match &mut self.mode {
            Mode::Adaptive { search, .. } => search.next()?,
            Mode::Sweep { rates, next, .. } => {
                let r = *rates.get(*next)?;
                *next += 1;
                r
            }
        };
        let step = CapacityStep { rate, repeat: 1 };
        self.current = Some((step, true));
        Some(step)
    }

    /// Whether the step `next` gave passed. Returns the rate's result once it is decided
    /// (a repeat failed, or the last repeat passed).
    pub fn record(&mut self, pass: bool) -> Option<RateResult> {
        let (t, all_pass) = self.current.as_mut().expect("record follows next");
        *all_pass &= pass;
        if *all_pass && t.repeat < self.repeats {
            return None;
        }
        self.decide()
    }

    /// Closes the current rate (if it has not been closed yet).
    fn decide(&mut self) -> Option<RateResult> {
        let (t, pass) = self.current.take()?;
        let result = RateResult {
            rate: t.rate,
            pass,
            repeats_run: t.repeat,
        };
        if let Mode::Adaptive { search, .. } = &mut self.mode {
            search.record(t.rate, pass);
        }
        self.rates.push(result.clone());
        Some(result)
    }

    /// Every rate decided so far, in the order run.
    pub fn rates(&self) -> &[RateResult] {
        &self.rates
    }

    /// The highest rate that passed every repeat.
    pub fn capacity(&self) -> Option<f64> {
        match &self.mode {
            Mode::Adaptive { search, .. } => search.capacity(),
            Mode::Sweep { .. } => self.rates.iter().filter(|r| r.pass).map(|r| r.rate).reduce(f64::max),
        }
    }

    /// Whether no rate above the capacity failed: the search (or sweep) never found where the
    /// service level breaks, so the capacity is only a lower bound.
    pub fn capacity_is_a_lower_bound(&self) -> bool {
        self.capacity()
            .is_some_and(|cap| !self.rates.iter().any(|r| !r.pass && r.rate > cap))
    }

    /// The adaptive search's bracket, as words.
    pub fn bracket(&self) -> Option<String> {
        match &self.mode {
            Mode::Adaptive { search, .. } => Some(search.bracket()),
            Mode::Sweep { .. } => None,
        }
    }

    /// What the user should know about how the plan ended, besides the capacity: a search
    /// that could not narrow, or a sweep whose rates failed below the capacity.
    pub fn caveat(&self) -> Option<String> {
        match &self.mode {
            Mode::Adaptive { search, .. } => search.stopped_early(),
            Mode::Sweep { .. } => {
                let cap = self.capacity()?;
                let below: Vec<String> = self
                    .rates
                    .iter()
                    .filter(|r| !r.pass && r.rate < cap)
                    .map(|r| group(r.rate))
                    .collect();
                (!below.is_empty()).then(|| {
                    format!(
                        "{} op/s failed below the capacity: results at these rates vary more than the SLA's margin \
                         (add --repeats or lengthen --measure)",
                        below.join(", ")
                    )
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a plan against a cluster whose steps pass when `passes(rate, repeat)`; returns
    /// every step run.
    fn drive(plan: &mut Plan, passes: impl Fn(f64, u32) -> bool) -> Vec<(f64, u32, bool)> {
        let mut steps = Vec::new();
        while let Some(t) = plan.next_step() {
            let ok = passes(t.rate, t.repeat);
            steps.push((t.rate, t.repeat, ok));
            plan.record(ok);
        }
        steps
    }

    #[test]
    fn a_sweep_runs_every_rate_and_its_repeats_until_one_fails() {
        let mut plan = Plan::sweep(vec![1_000.0, 2_000.0, 3_000.0, 4_000.0], 3);
        assert!(!plan.wants_probe());
        // 3,000 op/s fails its second repeat; 4,000 fails at once.
        let steps = drive(&mut plan, |r, rep| r < 3_000.0 || (r == 3_000.0 && rep == 1));
        assert_eq!(
            steps,
            vec![
                (1_000.0, 1, true),
                (1_000.0, 2, true),
                (1_000.0, 3, true),
                (2_000.0, 1, true),
                (2_000.0, 2, true),
                (2_000.0, 3, true),
                (3_000.0, 1, true),
                (3_000.0, 2, false),
                (4_000.0, 1, false),
            ]
        );
        assert_eq!(plan.capacity(), Some(2_000.0));
        assert_eq!(
            plan.rates().iter().map(|r| (r.pass, r.repeats_run)).collect::<Vec<_>>(),
            vec![(true, 3), (true, 3), (false, 2), (false, 1)]
        );
        assert_eq!(plan.caveat(), None);
        assert_eq!(plan.bracket(), None);
    }

    #[test]
    fn a_curve_sweeps_evenly_up_to_the_probe_and_past_failures() {
        let mut plan = Plan::curve(4, 1);
        assert!(plan.wants_probe(), "its rates come from the flat-out throughput");
        assert_eq!(plan.describe(), "sweeping 4 rates up to the flat-out throughput");
        plan.probed(10_000.0);
        // Every rate runs, the ones above a failure too: they are the curve's points.
        let steps = drive(&mut plan, |r, _| r <= 5_000.0);
        let rates: Vec<f64> = steps.iter().map(|s| s.0).collect();
        assert_eq!(rates, [2_500.0, 5_000.0, 7_500.0, 10_000.0]);
        assert_eq!(plan.capacity(), Some(5_000.0));
        assert!(!plan.capacity_is_a_lower_bound());
    }

    #[test]
    fn a_sweep_says_when_rates_fail_below_its_capacity() {
        let mut plan = Plan::sweep(vec![1_000.0, 2_000.0, 3_000.0, 4_000.0, 5_000.0], 1);
        drive(&mut plan, |r, _| r != 2_000.0 && r != 4_000.0 && r < 5_000.0);
        assert_eq!(plan.capacity(), Some(3_000.0));
        assert!(
            plan.caveat()
                .unwrap()
                .starts_with("2,000 op/s failed below the capacity"),
            "{:?}",
            plan.caveat()
        );
        let mut none = Plan::sweep(vec![1_000.0], 1);
        drive(&mut none, |_, _| false);
        assert_eq!((none.capacity(), none.caveat()), (None, None));
    }

    #[test]
    fn the_adaptive_plan_probes_then_stays_under_the_ceiling() {
        let mut plan = Plan::adaptive(None, 0.05, true, 2);
        assert!(plan.wants_probe());
        plan.probed(10_000.0);
        let first = plan.next_step().unwrap();
        assert_eq!(
            first,
            CapacityStep {
                rate: 5_000.0,
                repeat: 1
            }
        );
        assert!(!plan.wants_probe());
        assert_eq!(plan.record(true), None, "one more repeat to go");
        assert_eq!(
            plan.next_step().unwrap(),
            CapacityStep {
                rate: 5_000.0,
                repeat: 2
            }
        );
        assert_eq!(
            plan.record(true),
            Some(RateResult {
                rate: 5_000.0,
                pass: true,
                repeats_run: 2
            })
        );
        let steps = drive(&mut plan, |r, rep| r <= 7_000.0 || (r <= 7_500.0 && rep == 1));
        assert!(steps.iter().all(|s| s.0 <= 10_000.0), "{steps:?}");
        let cap = plan.capacity().unwrap();
        assert!((6_667.0..=7_000.0).contains(&cap), "{cap}: {steps:?}");
        assert!(plan.bracket().unwrap().starts_with("passing "));
    }

    #[test]
    fn without_a_probe_the_search_starts_where_told() {
        let mut plan = Plan::adaptive(Some(200.0), 0.05, false, 1);
        assert!(!plan.wants_probe());
        assert_eq!(plan.next_step().map(|t| t.rate), Some(200.0));
        let mut plan = Plan::adaptive(None, 0.05, false, 1);
        assert_eq!(plan.next_step().map(|t| t.rate), Some(1_000.0));
    }
}
