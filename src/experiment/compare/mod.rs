//! Comparing variants, metric by metric, with statistics that say how sure the difference is.
//!
//! The node (a fresh JVM on fresh nodes; the mean of its windows when it served several) is
//! the unit of replication: each metric is taken once per node (a percentile is each node's
//! own, never an average of percentiles across runs; the pooled percentile of the merged
//! histograms is shown beside it). An experiment runs in blocks, every round every variant
//! once, so variants are compared round by round: the ratio to the baseline is the mean of the
//! rounds' log-ratios with Student's t (paired), or, for results directories given by hand,
//! Welch's t on the logs; across several sittings the sittings' estimates are pooled by machine
//! (`pool`). p-values are corrected with Benjamini–Hochberg over every metric and
//! variant of the measurement (Holm's family-wise control leaves almost no power at three
//! repeats and ~15 metrics). A difference is *negligible* when it is below the floor (default
//! 2 %) however small its p-value. With one repeat per variant, the per-second values of the
//! measured window stand in, with an effective sample size by batch means: weaker evidence,
//! and said so.
//!
//! Every window after a settled warm-up is data, whatever its steady-state class: on shared
//! cores flat-out throughput shifts level within a minute on a settled node, and leaving those
//! windows out biases the comparison. The steady-only analysis is kept beside each answer as a
//! check of sensitivity; `steady_only` makes it the primary one (windows left out are named).
//!
//! The files: `load` reads what a step left on disk (`Observation`), `units` turns records
//! into what is compared and pairs them by round, `metrics` is the table of what is compared,
//! `statistics` makes the figures and verdicts, `answer` decides the primary questions and
//! `answer_text` words them, `render` prints them.

pub mod answer;
pub mod answer_text;
pub mod load;
pub mod metrics;
pub mod pool;
pub mod render;
pub mod statistics;
pub mod units;
pub mod verdict;

use serde::{Deserialize, Serialize};

pub use answer::{Answer, Question};
pub use load::{Observation, Series};
pub use metrics::metric_keys;
pub use pool::SittingId;
pub use statistics::{Ask, compare};
pub use units::Unit;
pub use verdict::Verdict;

/// A run left out of a comparison because its window was not steady.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Excluded {
    pub variant: String,
    pub dir: String,
    /// The verdict's summary (and why warm-up did not settle, if it did not), or why its
    /// files could not be read.
    pub why: String,
    /// Left out because its results could not be read (not because it was unsteady).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreadable: bool,
}

/// One variant's figure for one metric.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figure {
    pub variant: String,
    /// Values behind it: repeats, or the effective number of per-second values.
    pub n: f64,
    pub mean: Option<f64>,
    /// 95 % interval of the mean.
    pub ci: Option<(f64, f64)>,
    /// The percentile of every repeat's histograms merged (percentile metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<f64>,
    /// mean / the baseline's mean, and its 95 % interval.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<(f64, f64)>,
    /// Welch's test against the baseline, and the p-value after Benjamini–Hochberg's correction.
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// For one look planned in advance: significant (better, worse), negligible, not significant;
    /// written as `"verdict": "better"` with its numbers beside the figure's.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// A primary metric's answer (better, worse, equivalent, open), which stays valid across the
    /// rounds looked at and so is the one to act on where it and `verdict` differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<crate::stats::sequential::Decision>,
    /// Why the ratio has no interval, when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_note: Option<String>,
}

impl Figure {
    /// The verdict as people read it: a primary metric's answer alone (its row's fixed-sample
    /// ratio and p describe, they do not decide: `answer OPEN; fixed-sample figures`), else the
    /// one planned look's verdict.
    pub fn verdict_text(&self) -> String {
        match self.answer {
            Some(d) => format!("answer {}; fixed-sample figures", d.name().to_uppercase()),
            None => self.verdict.to_string(),
        }
    }
}

/// One metric's figures, a cell per variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub metric: String,
    pub label: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub cells: Vec<Figure>,
}

/// One measurement's comparison of its variants (experiment.json keeps it).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Comparison {
    pub measurement: String,
    pub baseline: String,
    pub floor: f64,
    /// `repeats`, `per-second series (one repeat: weaker evidence)`, or that a variant has too
    /// few steady repeats to be tested.
    pub evidence: String,
    /// Repeats compared per variant (nodes, every sitting's).
    pub repeats: Vec<usize>,
    /// Whether runs whose window was not steady were left out (`steady_only`).
    #[serde(default)]
    pub steady_only: bool,
    /// The runs left out, and why.
    #[serde(default)]
    pub excluded: Vec<Excluded>,
    pub rows: Vec<Row>,
    /// The primary questions' answers (better, worse, equivalent, open).
    #[serde(default)]
    pub answers: Vec<Answer>,
    /// The sittings compared (one: this sitting only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sittings: Vec<String>,
}
