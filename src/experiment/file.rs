//! The experiment file as written: its keys, their defaults, and the keys earlier files had
//! that no longer do anything (read in records an earlier caplab kept, refused in a file given
//! now, naming what replaced them). `spec` checks a file into the steps it runs.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use serde_norway::Value;
use std::collections::BTreeMap;
use std::time::Duration;

use super::keys::Options;
use super::question::{self, Repeats};
use crate::workload::profile::from_yaml;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Every round runs every variant and measurement once, in an order drawn from the
    /// sitting's seed (randomized complete blocks): the only order under which rounds that are
    /// correlated (a drift, a place that stays slow) cannot bias the answers (docs/experiment.md).
    #[default]
    Random,
    /// Every round runs all variants, starting one later each round.
    Rotate,
    /// Every round runs the variants as written.
    AsWritten,
}

/// How a round runs its steps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundDesign {
    /// One step at a time, each with the machine to itself (randomized complete blocks).
    #[default]
    Blocks,
    /// A measurement's two variants at once, each on nodes of its own with half the load, their
    /// windows started in the same second (`duet`).
    Duet,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// `caplab node start` options for this variant (over the file's `node`).
    #[serde(default)]
    pub node: Options,
    /// `caplab run` / `capacity` options for this variant (over each measurement's; a key a
    /// measurement's command does not take is left out for it).
    #[serde(default)]
    pub run: Options,
}

/// (Its other keys are run options; unknown ones are refused when the options are parsed.)
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    pub name: String,
    /// A capacity search (options of `caplab capacity`) instead of one run.
    #[serde(default)]
    pub capacity: bool,
    /// This measurement's question, over the file's `primary` (e.g. server CPU per operation
    /// for a measurement at a fixed rate beside a flat-out one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<Vec<String>>,
    /// The run's (or search's) options, over the file's `run`.
    #[serde(flatten)]
    pub options: Options,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Runs of every variant (a fresh JVM on fresh nodes each, with `fresh`): a number, `auto`
    /// or `{min, max}` (rounds until the primary comparisons are decided).
    #[serde(default)]
    pub repeats: Repeats,
    /// The longest the experiment may take: no round starts that would end after it.
    #[serde(default, deserialize_with = "question::budget")]
    pub budget: Option<Duration>,
    /// The metrics that are the question (default: throughput and p99 for runs, capacity for
    /// capacity searches): each gets a decision, and only these decide when auto repeats stop.
    #[serde(default)]
    pub primary: Option<Vec<String>>,
    /// The smallest difference that matters, per metric (`{throughput: 5%, p99: 10%}`; the
    /// defaults are `question::default_effect`'s).
    #[serde(default, deserialize_with = "question::effects")]
    pub effect: BTreeMap<String, f64>,
    #[serde(default)]
    pub order: Order,
    /// `blocks` (default: one step at a time) or `duet` (two variants at once, half the load
    /// each; A/A intervals here 2.4 times narrower at the same wall time).
    #[serde(default)]
    pub design: RoundDesign,
    /// The seed of `order: random` (default: a new one each sitting, kept in the record).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Measured windows each node serves (default 1): a step starts its variant's nodes once,
    /// warms them up, then measures this many windows one after another, and the comparison
    /// takes their node mean. `--check --calibration DIR` says which number is cheapest.
    #[serde(default = "one_window")]
    pub windows: u32,
    /// An A/A calibration of this machine (`caplab experiment --calibrate`'s directory) whose
    /// variance each primary question borrows, so its first look is not decided on two
    /// degrees of freedom.
    #[serde(default)]
    pub calibration: Option<String>,
    /// CPU placement: caplab's client on the first core, the nodes on the others (`caplab run
    /// --client-cpus`, `caplab node start --cpus`), unless a variant sets `cpus` itself.
    #[serde(default)]
    pub pin: bool,
    /// Wipe and start the variant's nodes before every step.
    #[serde(default = "yes")]
    pub fresh: bool,
    /// The variant the others are compared with (default: the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Differences smaller than this share are reported as negligible, however small their
    /// p-value (`2%` or 0.02).
    #[serde(default = "two_percent", deserialize_with = "share")]
    pub floor: f64,
    /// The metrics the experiment asks about (keys as in experiment.json: `gc_count`, `p99`,
    /// `throughput`…): only these are tested, and corrected for together, so asking one
    /// question is not diluted by fifteen others. Default: every metric.
    #[serde(default)]
    pub metrics: Option<Vec<String>>,
    /// Leave windows whose steady-state class was not flat out of the primary analysis, as
    /// caplab once did (default: after a warm-up that settled, every window is data; the
    /// steady-only analysis is shown beside as a check of sensitivity).
    #[serde(default)]
    pub steady_only: bool,
    /// `caplab node start` options every variant starts from.
    #[serde(default)]
    pub node: Options,
    /// `caplab run` (or `capacity`) options every measurement starts from; a key a
    /// measurement's command does not take is left out for it.
    #[serde(default)]
    pub run: Options,
    pub variants: Vec<Variant>,
    pub measure: Vec<Measurement>,
}

fn yes() -> bool {
    true
}
fn one_window() -> u32 {
    1
}
fn two_percent() -> f64 {
    0.02
}

fn share<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = Value::deserialize(d)?;
    let text = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s,
        other => return Err(serde::de::Error::custom(format!("floor: {other:?} is not a share"))),
    };
    crate::sla::parse_share(&text).map_err(serde::de::Error::custom)
}

/// Where an experiment's text comes from: a file given now, or a record an earlier caplab kept
/// (which may hold keys since retired, read as they were meant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    File,
    Record,
}

impl ExperimentFile {
    /// Reads an experiment's text, from a file given now or a record kept earlier.
    pub fn read(text: &str, origin: &str, source: Source) -> Result<ExperimentFile> {
        match source {
            Source::File => {
                if let Some((key, why)) = retired(text) {
                    bail!("{origin}: {key}: {why}");
                }
                from_yaml(text, origin)
            }
            Source::Record => from_yaml(without_retired(text).as_deref().unwrap_or(text), origin),
        }
    }
}

/// Keys earlier files had that no longer do anything, and what replaced them. Records an
/// earlier caplab kept are read without them; a file given now is refused with them.
const RETIRED: &[(&str, &str)] = &[(
    "include_unsteady",
    "every window after a settled warm-up is compared now, so the key does nothing: leave it out \
     (steady_only: true leaves out windows that were not flat)",
)];

/// The first retired key at the top of `text`, with what replaced it.
fn retired(text: &str) -> Option<(&'static str, &'static str)> {
    let Ok(Value::Mapping(top)) = serde_norway::from_str::<Value>(text) else {
        return None;
    };
    RETIRED.iter().copied().find(|(key, _)| top.contains_key(*key))
}

/// A kept record's text without its retired keys (None when it has none, or does not read as a
/// mapping: then the text is read as it is, and any error names its line).
fn without_retired(text: &str) -> Option<String> {
    let Ok(Value::Mapping(mut top)) = serde_norway::from_str::<Value>(text) else {
        return None;
    };
    let removed = RETIRED.iter().filter(|(key, _)| top.remove(*key).is_some()).count();
    (removed > 0).then(|| serde_norway::to_string(&top).ok())?
}
