//! `caplab history import DIR…`: results written earlier, in any format caplab wrote, found
//! under the directories given. A directory with capacity.json is one capacity search (its
//! steps are not records of their own); one with result.json is a run or a merge; an
//! experiment's (experiment.json) gives each step, labelled with the experiment's and the
//! variant's names; any other directory is searched below (nodes' homes left out).

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::record::{self, Record};
use super::store::Store;
use crate::measure::result::{CAPACITY_FILE, RESULT_FILE};

/// What an import did.
#[derive(Debug, Default)]
pub struct Imported {
    pub added: Vec<Record>,
    /// Results already in the history.
    pub already: usize,
    /// Directories with results that could not be read, and why.
    pub failed: Vec<(PathBuf, String)>,
}

/// Finds every result under `dirs` and records each (`extra` labels added to theirs).
pub fn import(store: &mut Store, dirs: &[PathBuf], extra: &BTreeMap<String, String>) -> Result<Imported> {
    let mut found = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            anyhow::bail!(
                "{} is not a directory: give results directories (a run's, a search's, an experiment's, or one above them)",
                d.display()
            );
        }
        walk(d, extra, &mut found)?;
    }
    let mut out = Imported::default();
    for (dir, labels) in found {
        match record::of_dir(&dir, &labels) {
            Ok(rec) => {
                if store.insert(&rec)? {
                    out.added.push(rec);
                } else {
                    out.already += 1;
                }
            }
            Err(e) => out.failed.push((dir, format!("{e:#}"))),
        }
    }
    Ok(out)
}

/// Result directories under `dir`, in name order, each with the labels it gets.
fn walk(
    dir: &Path,
    labels: &BTreeMap<String, String>,
    out: &mut Vec<(PathBuf, BTreeMap<String, String>)>,
) -> Result<()> {
    if dir.join(CAPACITY_FILE).exists() || dir.join(RESULT_FILE).exists() {
        out.push((dir.to_path_buf(), labels.clone()));
        return Ok(());
    }
    let experiment = dir.join("experiment.json");
    if experiment.exists() {
        return walk_experiment(dir, &experiment, labels, out);
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && !skipped(p))
        .collect();
    subdirs.sort();
    for s in subdirs {
        walk(&s, labels, out)?;
    }
    Ok(())
}

/// Nodes' homes and hidden directories hold no results.
fn skipped(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with('.') || name == "home" || name == "nodes"
}

/// An experiment's steps, labelled `experiment` and `variant` (as its steps record them since
/// caplab records them as they finish).
fn walk_experiment(
    dir: &Path,
    file: &Path,
    labels: &BTreeMap<String, String>,
    out: &mut Vec<(PathBuf, BTreeMap<String, String>)>,
) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not an experiment caplab wrote", file.display()))?;
    let name = doc["name"].as_str().unwrap_or_default().to_string();
    for step in doc["steps"].as_array().into_iter().flatten() {
        let (Some(sub), Some(variant)) = (step["dir"].as_str(), step["variant_name"].as_str()) else {
            continue;
        };
        let step_dir = dir.join(sub);
        // A step whose node served several windows holds them as w1, w2, …
        let windows: Vec<PathBuf> = (1..)
            .map(|w| step_dir.join(format!("w{w}")))
            .take_while(|w| w.is_dir())
            .collect();
        let dirs = if windows.is_empty() { vec![step_dir] } else { windows };
        for d in dirs {
            if !(d.join(RESULT_FILE).exists() || d.join(CAPACITY_FILE).exists()) {
                continue;
            }
            let mut l = labels.clone();
            l.entry("experiment".into()).or_insert_with(|| name.clone());
            l.entry("variant".into()).or_insert_with(|| variant.to_string());
            out.push((d, l));
        }
    }
    Ok(())
}
