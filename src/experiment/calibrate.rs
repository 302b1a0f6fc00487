//! An A/A calibration of this machine for an experiment (`caplab experiment --calibrate FILE`):
//! the file's baseline configuration run as two identical variants in random blocks, each node
//! serving several windows, so the variance of every primary metric (on the log scale) splits
//! into its levels (Kalibera & Jones, ISMM 2013):
//!
//! - **window**: between windows on one node (the pooled within-node variance);
//! - **node**: between fresh nodes of one configuration in one round, beyond their windows;
//! - **round**: what a round shares (the machine's drift), which blocks cancel;
//! - **sitting**: between sittings' levels, with two or more sittings of the calibration.
//!
//! What it is for: `--check` with `calibration:` chooses the windows per node and rounds at the
//! least wall time for the effect asked (Kalibera & Jones' allocation), and experiments that name
//! it borrow the variance of one round's log-ratio for their decisions (`stats::ratio::Prior`).
//! calibration.json holds the components; the record beside it holds every step.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

use super::record::ExperimentRecord;
use super::spec::{Experiment, ExperimentFile, Variant, What};
use crate::files::write_json;
use crate::measure::RunStatus;
use crate::stats::ratio::Prior;
use crate::stats::sequential::{Design, POWER, rounds_to_decide};

pub const CALIBRATION_FILE: &str = "calibration.json";
/// Rounds of a calibration unless `--calibrate-rounds` says otherwise.
pub const ROUNDS: u32 = 6;
/// Windows per node of a calibration unless the file asks more.
pub const WINDOWS: u32 = 3;

/// One metric's variance at each level, on the log scale (a variance of 0.0025 is an SD of
/// about 5 %).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Components {
    pub measurement: String,
    pub metric: String,
    /// Between windows on one node, and its degrees of freedom.
    pub window: f64,
    pub window_df: f64,
    /// Between nodes of one configuration in one round, beyond their windows.
    pub node: f64,
    /// The variance of one round's log-ratio of two nodes' means (`windows` windows each) in an
    /// A/A (whose true log-ratio is 0), and its degrees of freedom: what a comparison borrows.
    pub pair: f64,
    pub pair_df: f64,
    /// Shared by a round (cancelled by blocks).
    pub round: f64,
    pub round_df: f64,
    /// Between sittings' levels (None with one sitting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sitting: Option<f64>,
    #[serde(default)]
    pub sitting_df: f64,
    /// Windows per node in the calibration.
    pub windows: u32,
}

/// calibration.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub format: u32,
    /// The experiment file calibrated, and its baseline variant.
    pub origin: String,
    pub variant: String,
    pub sittings: Vec<String>,
    /// Seconds to start, populate and warm up a node (a step's time beyond its windows), and
    /// one window's (its measured time and the short warm-up before it).
    pub node_s: f64,
    pub window_s: f64,
    pub components: Vec<Components>,
}

/// The A/A experiment that calibrates `exp`: its baseline variant twice (`a`, `a-again`), every
/// measurement, `rounds` fixed rounds in random blocks, `windows` windows per node (at least 2;
/// the command asks `WINDOWS`, or the file's own if more).
pub fn aa_experiment(exp: &Experiment, rounds: u32, windows: u32) -> Result<Experiment> {
    let mut file: ExperimentFile = exp.file.clone();
    let base = file.variants[exp.baseline].clone();
    file.name = Some(format!("{}-calibration", exp.name()));
    file.variants = vec![
        Variant {
            name: "a".into(),
            ..base.clone()
        },
        Variant {
            name: "a-again".into(),
            ..base
        },
    ];
    file.baseline = None;
    file.repeats = super::question::Repeats::Fixed(rounds);
    file.budget = None;
    file.windows = windows.max(2);
    file.calibration = None;
    file.order = super::spec::Order::Random;
    let text = serde_norway::to_string(&file).context("cannot write the calibration's experiment")?;
    Experiment::parse(&text, &format!("{} (calibration)", exp.origin))
}

/// The log of each positive value of `key` in `v`, or None when one is not positive.
fn log_of(v: &std::collections::BTreeMap<String, f64>, key: &str) -> Option<f64> {
    v.get(key).filter(|x| **x > 0.0).map(|x| x.ln())
}

/// The components of every primary metric of every measurement, from a calibration's record.
pub fn analyse(exp: &Experiment, record: &ExperimentRecord) -> Result<Calibration> {
    let mut components = Vec::new();
    for (m, measurement) in exp.file.measure.iter().enumerate() {
        for metric in exp.primary(m) {
            if let Some(c) = components_of(record, m, &measurement.name, &metric) {
                components.push(c);
            }
        }
    }
    if components.is_empty() {
        bail!("the calibration has no completed round with every window measured: nothing to estimate");
    }
    let done: Vec<&super::record::ExperimentStep> = record
        .steps
        .iter()
        .filter(|s| s.status == Some(RunStatus::Completed) && s.elapsed_s.is_some())
        .collect();
    let window_s = exp
        .cells
        .first()
        .and_then(|row| row.first())
        .map(|c| match &c.what {
            What::Run(o) => {
                o.duration.unwrap_or(crate::measure::commands::DEFAULT_DURATION) + super::step::later_warmup(o)
            }
            What::Capacity(o) => o.measure + super::step::LATER_WARMUP,
        })
        .unwrap_or(Duration::from_secs(65))
        .as_secs_f64();
    let node_s = done
        .iter()
        .map(|s| s.elapsed_s.unwrap_or(0.0) - f64::from(s.windows) * window_s)
        .sum::<f64>()
        / done.len().max(1) as f64;
    Ok(Calibration {
        format: 1,
        origin: exp.origin.clone(),
        variant: "a".into(),
        sittings: record.sittings.iter().map(|s| s.name.clone()).collect(),
        node_s: node_s.max(0.0),
        window_s,
        components,
    })
}

/// One metric's components: per sitting and round, the two nodes' window logs.
fn components_of(record: &ExperimentRecord, m: usize, measurement: &str, metric: &str) -> Option<Components> {
    let (mut within, mut within_df) = (0.0, 0.0);
    let (mut pair_ss, mut pair_df) = (0.0, 0.0);
    let (mut round_ss, mut round_df) = (0.0, 0.0);
    let mut levels = Vec::new();
    let mut windows = 0u32;
    for sitting in &record.sittings {
        let mut means = Vec::new();
        for round in 1..=record.steps.iter().map(|s| s.at.repeat).max().unwrap_or(0) {
            let nodes: Vec<Vec<f64>> = (0..2)
                .filter_map(|v| {
                    let s = record.steps.iter().rev().find(|s| {
                        s.sitting == sitting.name
                            && s.at.measurement == m
                            && s.at.repeat == round
                            && s.at.variant == v
                            && s.status == Some(RunStatus::Completed)
                    })?;
                    let w: Vec<f64> = s.window_values.iter().filter_map(|w| log_of(w, metric)).collect();
                    (w.len() >= 2 && w.len() == s.window_values.len()).then_some(w)
                })
                .collect();
            if nodes.len() < 2 {
                continue;
            }
            windows = nodes[0].len() as u32;
            let node_means: Vec<f64> = nodes.iter().map(|w| crate::stats::mean(w)).collect();
            for (w, mean) in nodes.iter().zip(&node_means) {
                within += w.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
                within_df += (w.len() - 1) as f64;
            }
            // An A/A's true log-ratio is 0: each round's difference is all error.
            pair_ss += (node_means[0] - node_means[1]).powi(2);
            pair_df += 1.0;
            means.push((node_means[0] + node_means[1]) / 2.0);
        }
        if means.len() >= 2 {
            let mu = crate::stats::mean(&means);
            round_ss += means.iter().map(|x| (x - mu).powi(2)).sum::<f64>();
            round_df += (means.len() - 1) as f64;
            levels.push((mu, means.len()));
        }
    }
    if pair_df < 2.0 || within_df < 1.0 {
        return None;
    }
    let window = within / within_df;
    let pair = pair_ss / pair_df;
    let k = f64::from(windows.max(1));
    let round_var = if round_df > 0.0 { round_ss / round_df } else { 0.0 };
    let sitting = (levels.len() >= 2).then(|| {
        let l: Vec<f64> = levels.iter().map(|x| x.0).collect();
        let per_round = round_var / crate::stats::mean(&levels.iter().map(|x| x.1 as f64).collect::<Vec<_>>());
        (crate::stats::variance(&l) - per_round).max(0.0)
    });
    Some(Components {
        measurement: measurement.into(),
        metric: metric.into(),
        window,
        window_df: within_df,
        node: (pair / 2.0 - window / k).max(0.0),
        pair,
        pair_df,
        round: (round_var - pair / 4.0).max(0.0),
        round_df,
        sitting,
        sitting_df: levels.len().saturating_sub(1) as f64,
        windows,
    })
}

impl Components {
    /// The variance of one round's log-ratio when each node serves `k` windows.
    pub fn pair_at(&self, k: u32) -> f64 {
        if k == self.windows {
            self.pair
        } else {
            2.0 * self.node + 2.0 * self.window / f64::from(k.max(1))
        }
    }
}

impl Calibration {
    pub fn save(&self, dir: &Path) -> Result<()> {
        write_json(&dir.join(CALIBRATION_FILE), self)
    }

    pub fn load(dir: &Path) -> Result<Calibration> {
        let file = dir.join(CALIBRATION_FILE);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "cannot read {}: give the directory 'caplab experiment --calibrate' wrote",
                file.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("{} is not a calibration caplab can read", file.display()))
    }

    /// The terminal's table: each metric's SD at each level, as a share of its level.
    pub fn render(&self) -> String {
        let sd = |v: f64| format!("{:.1} %", (v.exp() - 1.0).max(0.0).sqrt() * 100.0);
        let mut s = format!(
            "Calibration of {} ({}, sittings: {}): variance of each primary metric at each level, as an SD\n\
             (a node: {:.0} s to start, populate and warm up; a window: {:.0} s)\n\
             {:<10} {:<22} {:>14} {:>14} {:>14} {:>14} {:>22}\n",
            self.origin,
            self.variant,
            self.sittings.join(", "),
            self.node_s,
            self.window_s,
            "measure",
            "metric",
            "window",
            "node",
            "round",
            "sitting",
            "one round's log-ratio"
        );
        for c in &self.components {
            s.push_str(&format!(
                "{:<10} {:<22} {:>14} {:>14} {:>14} {:>14} {:>22}\n",
                c.measurement,
                c.metric,
                format!("{} ({:.0} df)", sd(c.window), c.window_df),
                sd(c.node),
                format!("{} ({:.0} df)", sd(c.round), c.round_df),
                c.sitting.map_or("- (1 sitting)".into(), |v| format!(
                    "{} ({:.0} df)",
                    sd(v),
                    c.sitting_df
                )),
                format!("{} at {} windows ({:.0} df)", sd(c.pair), c.windows, c.pair_df)
            ));
        }
        s
    }

    /// The windows per node and rounds that decide a difference of `effect` on `c` at the least
    /// wall time, for `variants` variants, each sized by `design`'s own looks (simulated, 80 %
    /// by the planned round: `sized`).
    pub fn allocate(&self, c: &Components, effect: f64, design: &Design, variants: usize) -> Allocation {
        let best = (1..=10)
            .map(|k| {
                let (rounds, chance, within) = sized(design, c.pair_at(k).sqrt(), effect);
                let per_round = variants as f64 * (self.node_s + f64::from(k) * self.window_s);
                (k, rounds, chance, within, per_round * rounds as f64)
            })
            // Plans that decide with 80 % by their round, the quickest; else the likeliest (the
            // quickest of those within two points of each other: the simulation's own error).
            .min_by(|a, b| match (a.2 >= POWER, b.2 >= POWER) {
                (true, true) => a.4.total_cmp(&b.4),
                (false, false) if (a.2 - b.2).abs() < 0.02 => a.4.total_cmp(&b.4),
                (false, false) => b.2.total_cmp(&a.2),
                (a_reached, b_reached) => b_reached.cmp(&a_reached),
            })
            .expect("ten candidates");
        let (one, one_chance, _) = sized(design, c.pair_at(1).sqrt(), effect);
        Allocation {
            windows: best.0,
            rounds: best.1,
            chance: best.2,
            within: best.3,
            seconds: best.4,
            one_window_rounds: one,
            one_window_chance: one_chance,
            one_window_seconds: one as f64 * variants as f64 * (self.node_s + self.window_s),
        }
    }
}

/// What `allocate` chose, and what one window per node would take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allocation {
    pub windows: u32,
    pub rounds: usize,
    /// The chance of a decision by `rounds`, simulated.
    pub chance: f64,
    /// Whether `rounds` is within the file's most repeats.
    pub within: bool,
    pub seconds: f64,
    pub one_window_rounds: usize,
    pub one_window_chance: f64,
    pub one_window_seconds: f64,
}

/// The most rounds a plan is sized to when the file's most repeats do not decide often enough.
const PLAN_MAX: usize = 60;

/// Rounds for `design`'s looks to decide a difference of `effect` by the last of them with 80 %
/// probability, one round's log-ratio of SD `sd` (`sequential::rounds_to_decide`): within the
/// file's most repeats when they suffice (true), else on looks up to `PLAN_MAX` rounds (false).
fn sized(design: &Design, sd: f64, effect: f64) -> (usize, f64, bool) {
    let (n, chance) = rounds_to_decide(design, sd, effect);
    if chance >= POWER || design.max >= PLAN_MAX {
        return (n, chance, true);
    }
    let longer = Design::new(design.alpha, design.comparisons, design.min, PLAN_MAX);
    let (n, chance) = rounds_to_decide(&longer, sd, effect);
    (n, chance, false)
}

/// The variances a calibration lends `exp`: per measurement and primary metric, one round's
/// log-ratio at the experiment's windows per node.
pub fn priors(dir: &Path, exp: &Experiment) -> Result<Vec<(String, String, Prior)>> {
    let cal = Calibration::load(dir)?;
    Ok(cal
        .components
        .iter()
        .map(|c| {
            (
                c.measurement.clone(),
                c.metric.clone(),
                Prior {
                    variance: c.pair_at(exp.file.windows),
                    df: c.pair_df,
                    source: format!("calibration {} ({} rounds)", dir.display(), c.pair_df),
                },
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Components of a calibration of 3 windows a node with these window and node variances
    /// (its pair's as they make it unless `pair` is given).
    fn components(window: f64, node: f64, pair: Option<f64>) -> Components {
        Components {
            measurement: "batch".into(),
            metric: "throughput".into(),
            window,
            window_df: 24.0,
            node,
            pair: pair.unwrap_or(2.0 * node + 2.0 * window / 3.0),
            pair_df: 6.0,
            round: 0.0,
            round_df: 5.0,
            sitting: None,
            sitting_df: 0.0,
            windows: 3,
        }
    }

    #[test]
    fn more_windows_per_node_pay_when_nodes_cost_more_than_windows_and_vary_less() {
        let c = components(0.01, 0.001, None);
        let cal = Calibration {
            format: 1,
            origin: "e1.yaml".into(),
            variant: "a".into(),
            sittings: vec!["s".into()],
            node_s: 120.0,
            window_s: 35.0,
            components: vec![],
        };
        let design = Design::new(0.05, 1, 3, 12);
        let a = cal.allocate(&c, 0.05, &design, 2);
        // k* = √(c_n σ_w² / (c_w σ_n²)) = √(120 · 0.01 / (35 · 0.001)) ≈ 5.9 for rounds in
        // proportion to the variance; sized by simulating the looks, rounds move in steps.
        assert!((4..=7).contains(&a.windows), "{a:?}");
        assert!(a.chance >= POWER && a.one_window_chance < POWER, "{a:?}");
        // Nodes that vary more than windows: one window each is cheapest.
        let noisy_nodes = components(0.0001, 0.01, None);
        assert_eq!(cal.allocate(&noisy_nodes, 0.05, &design, 2).windows, 1);
    }

    #[test]
    fn a_pair_borrowed_at_other_windows_is_rebuilt_from_its_components() {
        let c = components(0.006, 0.002, Some(0.009));
        assert_eq!(c.pair_at(3), 0.009);
        assert!((c.pair_at(1) - (0.004 + 0.012)).abs() < 1e-12);
    }
}
