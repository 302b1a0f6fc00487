//! Server profiles compared across variants: for each run measurement whose steps were
//! profiled (`server-profile:`), the samples of all nodes and repeats of a variant added
//! together, and the frames whose share of samples moved most from the baseline's, as a table
//! and as async-profiler's differential flame graph. Capacity searches profile every step at
//! its own rate; their profiles are per step, not compared here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::record::ExperimentRecord;
pub use super::record::ProfileDiff;
use super::spec::{Experiment, What};
use crate::measure::{RunResult, RunStatus};
use crate::server_profile::{FrameChange, ProfileEvent, Stacks, Tools};

/// Frames listed per comparison.
const CHANGES: usize = 12;

/// One variant's profile of one event: every profiled node of every completed repeat.
#[derive(Default)]
struct Merged {
    text: String,
    stacks: Stacks,
    java: Option<PathBuf>,
}

fn merged(record: &ExperimentRecord, out: &Path, variant: usize, measurement: usize) -> BTreeMap<ProfileEvent, Merged> {
    let mut by_kind: BTreeMap<ProfileEvent, Merged> = BTreeMap::new();
    let steps = record
        .steps
        .iter()
        .filter(|s| s.at.variant == variant && s.at.measurement == measurement)
        .filter(|s| s.status == Some(RunStatus::Completed));
    for s in steps {
        let dir = out.join(&s.dir);
        let Ok(r) = RunResult::load(&dir) else { continue };
        let Some(p) = &r.server_profile else { continue };
        let java = r.environment.local_nodes.first().map(|n| n.spec.jdk.java.clone());
        for e in p.nodes.iter().flat_map(|n| &n.events) {
            let Ok(text) = std::fs::read_to_string(dir.join(&e.collapsed)) else {
                continue;
            };
            let m = by_kind.entry(e.kind).or_default();
            m.stacks.add_collapsed(&text);
            m.text.push_str(&text);
            if !m.text.ends_with('\n') {
                m.text.push('\n');
            }
            if m.java.is_none() {
                m.java.clone_from(&java);
            }
        }
    }
    by_kind
}

/// A file name made of names from the experiment file.
fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The profile differences of every profiled run measurement; files go under `out`/profile.
/// Without `tools` (or when the converter fails) the tables are made without flame graphs.
pub fn diffs(exp: &Experiment, record: &ExperimentRecord, out: &Path, tools: Option<&Tools>) -> Vec<ProfileDiff> {
    let mut all = Vec::new();
    let dir = out.join("profile");
    for (m, measurement) in exp.file.measure.iter().enumerate() {
        if !matches!(exp.cells[exp.baseline][m].what, What::Run(_)) {
            continue;
        }
        let base = merged(record, out, exp.baseline, m);
        if base.is_empty() {
            continue;
        }
        let base_name = &exp.file.variants[exp.baseline].name;
        for (v, variant) in exp.file.variants.iter().enumerate() {
            if v == exp.baseline {
                continue;
            }
            for (kind, new) in merged(record, out, v, m) {
                let Some(old) = base.get(&kind) else { continue };
                let stem = format!("{}-{}", file_part(&measurement.name), kind.name());
                let base_file = dir.join(format!("{stem}-{}.collapsed", file_part(base_name)));
                let new_file = dir.join(format!("{stem}-{}.collapsed", file_part(&variant.name)));
                let html = dir.join(format!(
                    "{stem}-{}-vs-{}.diff.html",
                    file_part(&variant.name),
                    file_part(base_name)
                ));
                let written = std::fs::create_dir_all(&dir).is_ok()
                    && std::fs::write(&base_file, &old.text).is_ok()
                    && std::fs::write(&new_file, &new.text).is_ok();
                let flame_graph = match (tools, &new.java, written) {
                    (Some(t), Some(java), true) => {
                        let args = [
                            "--diff".to_string(),
                            "--title".into(),
                            format!(
                                "{} {}: {} vs {} (red: more samples than the baseline, blue: fewer)",
                                measurement.name,
                                kind.name(),
                                variant.name,
                                base_name
                            ),
                            base_file.display().to_string(),
                            new_file.display().to_string(),
                            html.display().to_string(),
                        ];
                        match t.convert(java, &args) {
                            Ok(()) => Some(relative(out, &html)),
                            Err(e) => {
                                crate::console::say(&format!("differential flame graph not made: {e:#}"));
                                None
                            }
                        }
                    }
                    _ => None,
                };
                all.push(ProfileDiff {
                    measurement: measurement.name.clone(),
                    baseline: base_name.clone(),
                    variant: variant.name.clone(),
                    event: kind,
                    base_samples: old.stacks.samples,
                    samples: new.stacks.samples,
                    changes: new.stacks.total_changes_from(&old.stacks, CHANGES),
                    self_changes: new.stacks.self_changes_from(&old.stacks, CHANGES),
                    base_collapsed: relative(out, &base_file),
                    collapsed: relative(out, &new_file),
                    flame_graph,
                });
            }
        }
    }
    all
}

fn relative(out: &Path, file: &Path) -> String {
    file.strip_prefix(out).unwrap_or(file).display().to_string()
}

impl ProfileDiff {
    pub fn render(&self) -> String {
        let mut s = format!(
            "Server profile {} ({}): {} vs {} (baseline), {} vs {} samples; shares of all samples, and their \
             change in percentage points:\n",
            self.measurement,
            self.event.name(),
            self.variant,
            self.baseline,
            crate::console::group(self.samples as f64),
            crate::console::group(self.base_samples as f64),
        );
        let table = |title: &str, rows: &[FrameChange], own: bool, s: &mut String| {
            s.push_str(&format!(
                "  {title}\n  {:>7} {:>7} {:>7}  frame\n",
                "base", "variant", "change"
            ));
            for c in rows {
                let (b, v) = if own {
                    (c.base_self_share, c.self_share)
                } else {
                    (c.base_total_share, c.total_share)
                };
                s.push_str(&format!(
                    "  {:>6.1}% {:>6.1}% {:>+7.1}  {}\n",
                    100.0 * b,
                    100.0 * v,
                    100.0 * (v - b),
                    crate::server_profile::short(&c.frame)
                ));
            }
        };
        table("Cassandra code paths by total time", &self.changes, false, &mut s);
        table("any frame by self time", &self.self_changes, true, &mut s);
        if let Some(f) = &self.flame_graph {
            s.push_str(&format!("  differential flame graph: {f}\n"));
        }
        s.trim_end().to_string()
    }
}
