//! experiment.json: the experiment as run (its file's text, so `--resume` runs what was
//! started), its sittings (each a day or machine it ran on, with that host's facts, the seed of
//! its order and its own answers), every step with its results directory, status and the value
//! of every metric it measured (so the analysis reads the record alone), and the comparison
//! across every sitting. Rewritten after every step.
//!
//! Format 2 added sittings and each step's values; a format-1 record (one sitting, values in the
//! steps' files) is read as one sitting named `1`, its steps' values read from their files.
//! Format 3 writes each figure's verdict as a tag with its numbers; the words earlier formats
//! wrote are read as the verdicts they said (`Verdict::upgrade_words`).

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use super::compare::{Comparison, Verdict};
use crate::files::write_json;
use crate::measure::RunStatus;
use crate::server_profile::{FrameChange, ProfileEvent};

pub const EXPERIMENT_FILE: &str = "experiment.json";
pub const FORMAT: u32 = 3;

/// Where a step stands in its sitting's plan: a measurement of a variant, in one round
/// (`repeat`, from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepAt {
    pub repeat: u32,
    pub variant: usize,
    pub measurement: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentStep {
    /// Unique in the record, whatever the sitting; it numbers the step's directory.
    pub index: usize,
    /// The sitting it ran in.
    #[serde(default)]
    pub sitting: String,
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
    /// Whether its automatic warm-up settled (None: a fixed warm-up, or a capacity search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<bool>,
    /// Run again because the step before it in this cell and round was still warming (its
    /// automatic warm-up reached its maximum without settling), with a longer warm-up.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replacement: bool,
    /// Measured windows on its node (1 unless the plan allocates more).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub windows: u32,
    /// Every metric's value (its windows' node mean), once completed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, f64>,
    /// Each window's values, when the node served several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub window_values: Vec<BTreeMap<String, f64>>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The machine a sitting ran on, as far as it tells.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    /// A new one at every boot: two sittings with the same one ran on one boot of one machine.
    pub boot_id: String,
    pub caplab_version: String,
}

impl Host {
    pub fn here() -> Host {
        Host {
            hostname: crate::procfs::hostname(),
            cpu_model: crate::procfs::cpu_model(),
            cores: crate::cpus::count(),
            memory_bytes: crate::procfs::total_ram(),
            kernel: crate::procfs::kernel(),
            boot_id: crate::procfs::boot_id(),
            caplab_version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// `extra-shock (Intel Xeon …, 2 cores, 24 GiB, kernel 6.1)`.
    pub fn describe(&self) -> String {
        if self.hostname.is_empty() {
            return "host not recorded".into();
        }
        format!(
            "{} ({}{} cores, {:.0} GiB, kernel {})",
            self.hostname,
            if self.cpu_model.is_empty() {
                String::new()
            } else {
                format!("{}, ", self.cpu_model)
            },
            self.cores,
            self.memory_bytes as f64 / f64::from(1u32 << 30),
            self.kernel
        )
    }
}

/// One sitting: the experiment run once on one machine on one day.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sitting {
    pub name: String,
    pub host: Host,
    pub started_at: String,
    pub command: Vec<String>,
    /// The seed each round's random order is drawn from.
    pub seed: u64,
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    pub elapsed_s: f64,
    /// Why no further round ran (every question decided, the most repeats, the budget, a step
    /// every step would repeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// This sitting's own comparison, its answers looked at after each of its rounds.
    #[serde(default)]
    pub comparison: Vec<Comparison>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentRecord {
    pub format: u32,
    pub caplab_version: String,
    pub name: String,
    /// Where the file was read from, and its text.
    pub origin: String,
    pub text: String,
    pub sittings: Vec<Sitting>,
    pub steps: Vec<ExperimentStep>,
    /// The comparison across every sitting (the last sitting's own when there is one).
    pub comparison: Vec<Comparison>,
    /// Server profiles of each variant against the baseline's (`server-profile:` runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile_diffs: Vec<ProfileDiff>,
}

/// The fields of a format-1 record that format 2 moved into its sitting.
#[derive(Deserialize)]
struct FormatOne {
    status: RunStatus,
    #[serde(default)]
    interrupted_by: Option<String>,
    command: Vec<String>,
    started_at: String,
    elapsed_s: f64,
    #[serde(default)]
    stopped: Option<String>,
}

impl ExperimentRecord {
    /// The sitting running or run last.
    pub fn current(&self) -> &Sitting {
        self.sittings.last().expect("a record has a sitting")
    }

    pub fn current_mut(&mut self) -> &mut Sitting {
        self.sittings.last_mut().expect("a record has a sitting")
    }

    /// The index of the sitting named `name`.
    pub fn sitting_index(&self, name: &str) -> Option<usize> {
        self.sittings.iter().position(|s| s.name == name)
    }

    /// Whether step `s` belongs to the current sitting.
    pub fn in_current(&self, s: &ExperimentStep) -> bool {
        s.sitting == self.current().name
    }

    /// The current sitting's steps.
    pub fn current_steps(&self) -> impl Iterator<Item = &ExperimentStep> {
        let name = self.current().name.clone();
        self.steps.iter().filter(move |s| s.sitting == name)
    }

    /// Rounds begun in the current sitting (the highest round of any of its steps).
    pub fn rounds(&self) -> u32 {
        self.current_steps().map(|s| s.at.repeat).max().unwrap_or(0)
    }

    /// Whether every step the current sitting planned so far has run (completed or failed):
    /// none is still to run or was interrupted.
    pub fn round_complete(&self) -> bool {
        self.current_steps()
            .all(|s| matches!(s.status, Some(RunStatus::Completed | RunStatus::Failed)))
    }

    /// Replacement steps of `at`'s (variant, measurement) so far in the current sitting.
    pub fn replacements_of(&self, at: StepAt) -> usize {
        self.current_steps()
            .filter(|s| s.replacement && s.at.variant == at.variant && s.at.measurement == at.measurement)
            .count()
    }

    /// The time every sitting took.
    pub fn elapsed_s(&self) -> f64 {
        self.sittings.iter().map(|s| s.elapsed_s).sum()
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
        let bad = || format!("{} is not an experiment caplab can read", file.display());
        let mut doc: serde_json::Value = serde_json::from_str(&text).with_context(bad)?;
        let format = doc["format"].as_u64().unwrap_or(1) as u32;
        if format > FORMAT {
            bail!("{} was written by a newer caplab: use that caplab", file.display());
        }
        if format < 3 {
            Verdict::upgrade_words(&mut doc["comparison"]);
            for s in doc["sittings"].as_array_mut().into_iter().flatten() {
                Verdict::upgrade_words(&mut s["comparison"]);
            }
        }
        if format < 2 {
            let one: FormatOne = serde_json::from_value(doc.clone()).with_context(bad)?;
            let sitting = Sitting {
                name: "1".into(),
                host: Host::default(),
                started_at: one.started_at,
                command: one.command,
                seed: 0,
                status: one.status,
                interrupted_by: one.interrupted_by,
                elapsed_s: one.elapsed_s,
                stopped: one.stopped,
                comparison: serde_json::from_value(doc["comparison"].clone()).unwrap_or_default(),
            };
            doc["sittings"] = serde_json::to_value([sitting])?;
            // Format 1's default order was rotate (random is now): a record resumed must draw
            // the order it ran in.
            if let Some(text) = doc["text"].as_str()
                && !text.lines().any(|l| l.starts_with("order:"))
            {
                doc["text"] = format!("order: rotate\n{text}").into();
            }
            for s in doc["steps"].as_array_mut().into_iter().flatten() {
                s["sitting"] = "1".into();
            }
        }
        let mut r: ExperimentRecord = serde_json::from_value(doc).with_context(bad)?;
        // Read, it is this format's: written again (a sitting added, a step resumed), it says so.
        r.format = FORMAT;
        if r.sittings.is_empty() {
            bail!("{}: a record without a sitting", bad());
        }
        r.fill_values(dir);
        Ok(r)
    }

    /// Steps completed without values in the record (format 1) get them from their files.
    fn fill_values(&mut self, dir: &Path) {
        for s in &mut self.steps {
            if s.status == Some(RunStatus::Completed)
                && s.values.is_empty()
                && let Ok(o) = super::compare::Observation::load(&dir.join(&s.dir))
            {
                s.values = super::compare::units::values_of(&o);
            }
        }
    }

    /// 0 every step the current sitting ran completed, 130 (143, 129) interrupted, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        let now = self.current();
        match now.status {
            // Steps a decision or the budget left unrun (no status) are not failures.
            RunStatus::Completed
                if self
                    .current_steps()
                    .all(|s| s.status.is_none_or(|s| s == RunStatus::Completed)) =>
            {
                0
            }
            RunStatus::Interrupted => crate::measure::signal::exit_code(now.interrupted_by.as_deref()),
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
    pub event: ProfileEvent,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's values read back from experiment.json are the values written, bit for bit, so
    /// `caplab compare` on the directory gives the comparison the run printed (serde_json's
    /// default parser is off by one unit in the last place now and then: a confidence bound of
    /// 1001.1019135684191 came back as …188).
    #[test]
    fn values_read_back_are_the_values_written() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let values: BTreeMap<String, f64> = (0..20_000)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Means of a few repeats of rates and latencies: 1e-3 to 1e5 with every digit.
                let x = (state >> 11) as f64 / (1u64 << 53) as f64;
                (format!("{i:05}"), 10f64.powf(x * 8.0 - 3.0) / 3.0)
            })
            .collect();
        let text = serde_json::to_string(&values).unwrap();
        let back: BTreeMap<String, f64> = serde_json::from_str(&text).unwrap();
        let changed: Vec<(f64, f64)> = values
            .values()
            .zip(back.values())
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .map(|(a, b)| (*a, *b))
            .take(3)
            .collect();
        assert!(changed.is_empty(), "written, read back: {changed:?}");
    }

    /// A record caplab wrote before sittings (format 1): one sitting named `1`, its steps in
    /// it, and its file read with the rotated order it ran in.
    #[test]
    fn a_format_one_record_reads_as_one_sitting_in_its_rotated_order() {
        let dir = tempfile::tempdir().unwrap();
        let text = "name: t\nrepeats: 2\nnode: {version: 5.0.9, java: 17}\nrun: {duration: 5s}\n\
                    variants: [{name: a}, {name: b}]\nmeasure: [{name: insert, workload: insert}]\n";
        let step = |index: usize, repeat: u32, variant: usize, status: &str| {
            let name = ["a", "b"][variant];
            serde_json::json!({"index": index, "repeat": repeat, "variant": variant, "measurement": 0,
                "variant_name": name, "measurement_name": "insert",
                "dir": format!("steps/{index:03}"), "status": status, "elapsed_s": 1.0})
        };
        let doc = serde_json::json!({
            "format": 1, "caplab_version": "0.1.0", "name": "t", "origin": "t.yaml", "text": text,
            "status": "interrupted", "interrupted_by": "SIGINT", "command": ["caplab"],
            "started_at": "2026-11-25T10:00:00Z", "elapsed_s": 42.0,
            "steps": [step(1, 1, 0, "completed"), step(2, 1, 1, "interrupted"),
                      serde_json::json!({"index": 3, "repeat": 2, "variant": 1, "measurement": 0,
                          "variant_name": "b", "measurement_name": "insert", "dir": "steps/003",
                          "status": null, "elapsed_s": null}),
                      serde_json::json!({"index": 4, "repeat": 2, "variant": 0, "measurement": 0,
                          "variant_name": "a", "measurement_name": "insert", "dir": "steps/004",
                          "status": null, "elapsed_s": null})],
            "comparison": []
        });
        std::fs::write(dir.path().join(EXPERIMENT_FILE), doc.to_string()).unwrap();
        let r = ExperimentRecord::load(dir.path()).unwrap();
        assert_eq!(r.sittings.len(), 1);
        let s = r.current();
        assert_eq!(
            (s.name.as_str(), s.status, s.elapsed_s, s.interrupted_by.as_deref()),
            ("1", RunStatus::Interrupted, 42.0, Some("SIGINT"))
        );
        assert!(r.steps.iter().all(|s| s.sitting == "1"));
        assert!(r.text.starts_with("order: rotate\n"), "{}", r.text);
        // It resumes: its planned steps are the rotated order's.
        let exp = super::super::spec::Experiment::parse_kept(&r.text, &r.origin).unwrap();
        let opened = super::super::runner::open_record(&exp, dir.path(), super::super::runner::Opening::Resume(r));
        assert!(opened.is_ok(), "{:?}", opened.err());
    }

    #[test]
    fn every_kept_sitting_reads_and_writes_again_in_this_format() {
        use super::super::compare::Verdict;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/sittings");
        let mut better = 0;
        for entry in std::fs::read_dir(&root).unwrap() {
            let dir = entry.unwrap().path();
            let r = ExperimentRecord::load(&dir).unwrap_or_else(|e| panic!("{e:#}"));
            super::super::spec::Experiment::parse_kept(&r.text, &r.origin).unwrap_or_else(|e| panic!("{e:#}"));
            let cells = || r.comparison.iter().flat_map(|c| &c.rows).flat_map(|row| &row.cells);
            // No verdict's words were left as a short figure's reason.
            for c in cells() {
                if let Verdict::Short { why } = &c.verdict {
                    assert_eq!(Verdict::from_words(why), c.verdict, "{}: {why}", dir.display());
                    assert!(why.contains("repeats"), "{}: {why}", dir.display());
                }
            }
            better += cells().filter(|c| c.verdict == Verdict::Better).count();
            let again = tempfile::tempdir().unwrap();
            r.save(again.path()).unwrap();
            let text = std::fs::read_to_string(again.path().join(EXPERIMENT_FILE)).unwrap();
            assert!(
                text.contains("\"format\": 3") || text.contains("\"format\":3"),
                "{}",
                dir.display()
            );
            let read = ExperimentRecord::load(again.path()).unwrap();
            assert_eq!(
                serde_json::to_value(&read.comparison).unwrap(),
                serde_json::to_value(&r.comparison).unwrap(),
                "{}",
                dir.display()
            );
        }
        assert!(
            better > 0,
            "the kept E1 sittings found differences their words called better"
        );
    }
}
