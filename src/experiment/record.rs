//! experiment.json: the experiment as run (its file's text, so `--resume` runs what was
//! started), every step with its results directory and status, and the comparison. Rewritten
//! after every step.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;

use super::compare::Comparison;
use super::order::StepAt;
use crate::files::write_json;
use crate::measure::RunStatus;
use crate::server_profile::{FrameChange, Kind};

pub const EXPERIMENT_FILE: &str = "experiment.json";
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentStep {
    pub index: usize,
    #[serde(flatten)]
    pub at: StepAt,
    pub variant_name: String,
    pub measurement_name: String,
    /// Relative to the experiment's directory.
    pub dir: String,
    /// None: not run yet.
    pub status: Option<RunStatus>,
    pub elapsed_s: Option<f64>,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its measured window's steady-state class (`flat`, `warmup`, `slowdown`, `none`), and
    /// whether it counts as steady (None: not judged, or a capacity search).
    #[serde(rename = "window", default, skip_serializing_if = "Option::is_none")]
    pub steady_class: Option<crate::steady::Class>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<bool>,
    /// Run again because the cell's step of this round was not steady.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replacement: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentRecord {
    pub format: u32,
    pub caplab_version: String,
    pub name: String,
    /// Where the file was read from, and its text.
    pub origin: String,
    pub text: String,
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    pub command: Vec<String>,
    pub started_at: String,
    pub elapsed_s: f64,
    pub steps: Vec<ExperimentStep>,
    pub comparison: Vec<Comparison>,
    /// Server profiles of each variant against the baseline's (`server-profile:` runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile_diffs: Vec<ProfileDiff>,
    /// Why no further round ran (every question decided, the most repeats, the budget, a step
    /// every step would repeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl ExperimentRecord {
    /// Rounds begun (the highest round of any step).
    pub fn rounds(&self) -> u32 {
        self.steps.iter().map(|s| s.at.repeat).max().unwrap_or(0)
    }

    /// Whether every step planned so far has run (completed or failed): none is still to run
    /// or was interrupted.
    pub fn round_complete(&self) -> bool {
        self.steps
            .iter()
            .all(|s| matches!(s.status, Some(RunStatus::Completed | RunStatus::Failed)))
    }

    /// Replacement steps of `at`'s (variant, measurement) so far.
    pub fn replacements_of(&self, at: StepAt) -> usize {
        self.steps
            .iter()
            .filter(|s| s.replacement && s.at.variant == at.variant && s.at.measurement == at.measurement)
            .count()
    }

    pub fn save(&self, dir: &Path) -> Result<()> {
        write_json(&dir.join(EXPERIMENT_FILE), self)
    }

    pub fn load(dir: &Path) -> Result<ExperimentRecord> {
        let file = dir.join(EXPERIMENT_FILE);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "cannot read {}: give the directory 'caplab experiment' wrote",
                file.display()
            )
        })?;
        let r: ExperimentRecord = serde_json::from_str(&text)
            .with_context(|| format!("{} is not an experiment caplab can read", file.display()))?;
        if r.format > FORMAT {
            bail!("{} was written by a newer caplab: use that caplab", file.display());
        }
        Ok(r)
    }

    /// 0 every step completed, 130 (143, 129) interrupted, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            RunStatus::Completed if self.steps.iter().all(|s| s.status == Some(RunStatus::Completed)) => 0,
            RunStatus::Interrupted => crate::measure::signal::exit_code(self.interrupted_by.as_deref()),
            _ => 1,
        }
    }
}

/// How one variant's profile differs from the baseline's, for one event.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileDiff {
    pub measurement: String,
    pub baseline: String,
    pub variant: String,
    pub event: Kind,
    pub base_samples: u64,
    pub samples: u64,
    /// Cassandra's code paths whose total share moved most, largest first.
    pub changes: Vec<FrameChange>,
    /// Any frames (JVM, GC, kernel included) whose self share moved most.
    pub self_changes: Vec<FrameChange>,
    /// Relative to the experiment's directory.
    pub base_collapsed: String,
    pub collapsed: String,
    /// The differential flame graph (the variant's stacks, coloured by the change from the
    /// baseline), when the converter could make it.
    pub flame_graph: Option<String>,
}
