//! The run page: configuration, summary and server tables, SLA strip, the per-second charts on
//! one time axis and the percentile distribution; several runs overlaid on one page.

use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;

use super::html;
use super::series::RunSeries;
use crate::measure::result::RunResult;

/// What the configuration table says about one local node.
#[derive(Serialize)]
struct NodeRow {
    name: String,
    address: String,
    version: String,
    jdk: String,
    gc: String,
    /// `c1` when the node ran C1 alone; empty for the JIT as shipped.
    jit: String,
    heap: f64,
    overrides: Vec<String>,
    jvm_opts: Vec<String>,
}

#[derive(Serialize)]
struct RunView {
    label: String,
    result: RunResult,
    nodes: Vec<NodeRow>,
    cpu_us_per_op: Option<f64>,
    flushes: usize,
    flush_cpu_us_per_flushed_op: Option<f64>,
    /// Prefix of links to the run's own files (its profiles): relative when the page is the
    /// run's report.html, the directory itself on an overlay page written elsewhere.
    link_base: String,
    /// The profiled window, for people.
    profile_window: Option<String>,
}

#[derive(Serialize)]
struct Page {
    overlay: bool,
    /// Whether any run read compaction figures (their table is shown then only).
    compaction: bool,
    runs: Vec<RunView>,
}

#[derive(Serialize)]
struct Data {
    kind: &'static str,
    runs: Vec<RunSeries>,
}

/// A label for a results directory: its name.
pub fn label(dir: &std::path::Path) -> String {
    dir.file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn view(label: String, r: RunResult, link_base: String) -> RunView {
    let nodes = r
        .environment
        .local_nodes
        .iter()
        .map(|n| NodeRow {
            name: n.name.clone(),
            address: n.address.to_string(),
            version: n.spec.version.clone(),
            jdk: n.spec.jdk.version.clone(),
            gc: n.spec.gc.name().to_string(),
            jit: if n.spec.jit.is_tiered() {
                String::new()
            } else {
                n.spec.jit.to_string()
            },
            heap: n.spec.heap as f64,
            overrides: n.spec.overrides.clone(),
            jvm_opts: n.spec.jvm_opts.clone(),
        })
        .collect();
    let ops = r.summary.as_ref().map_or(0, |s| s.total.ops);
    let (mut cpu_us_per_op, mut flushes, mut flush_cpu_us_per_flushed_op) = (None, 0, None);
    if let Some(s) = r.server.as_ref().filter(|s| s.not_collected.is_none()) {
        if ops > 0 {
            cpu_us_per_op = Some(s.server_cpu_cores * s.measured_s * 1e6 / ops as f64);
        }
        flush_cpu_us_per_flushed_op = s.flush_cpu_us_per_flushed_op();
        flushes = s.nodes.iter().map(|n| n.flushes.count).sum();
    }
    let profile_window = r.server_profile.as_ref().map(|p| {
        let secs = p.measured_to_ms.saturating_sub(p.measured_from_ms) as f64 / 1e3;
        format!("{} ({secs:.0} s)", p.window())
    });
    RunView {
        label,
        link_base,
        profile_window,
        result: r,
        nodes,
        cpu_us_per_op,
        flushes,
        flush_cpu_us_per_flushed_op,
    }
}

/// The page of one run, or of several overlaid (labelled by directory name).
pub fn page(dirs: &[PathBuf]) -> Result<String> {
    let mut views = Vec::new();
    let mut series = Vec::new();
    for dir in dirs {
        let name = label(dir);
        let (r, s) = RunSeries::load(dir, &name)?;
        let base = if dirs.len() == 1 {
            String::new()
        } else {
            let abs = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            format!("file://{}/", abs.display())
        };
        views.push(view(name, r, base));
        series.push(s);
    }
    let title = match views.as_slice() {
        [one] => format!("caplab run: {} ({})", one.result.workload, one.label),
        many => format!("caplab: {} runs overlaid", many.len()),
    };
    html::render(
        "run.html",
        &title,
        Page {
            overlay: views.len() > 1,
            compaction: views
                .iter()
                .any(|v| v.result.server.as_ref().is_some_and(|s| s.compaction.is_some())),
            runs: views,
        },
        &Data {
            kind: "run",
            runs: series,
        },
    )
}
