//! The capacity page: E3's chart (the SLA percentile of each step's worst window against the
//! target rate, each repeat a point, pass/fail coloured, the bound and the capacity marked),
//! achieved against target, the rate and step tables, and links to each step's run page.

use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};

use super::{html, link};
use crate::capacity::{CapacityResult, SearchStep};
use crate::measure::phases::{KEPT_UP, Knee};

#[derive(Serialize)]
struct SearchStepView {
    name: String,
    record: SearchStep,
    /// Each objective's worst window, in the SLA's order.
    worst: Vec<Option<f64>>,
    link: Option<String>,
}

#[derive(Serialize)]
struct Page<'a> {
    report: &'a CapacityResult,
    steps: Vec<SearchStepView>,
    /// The capacity as it stands (confirmed, when confirmed) and the line that says so.
    held: Option<f64>,
    capacity_text: String,
    /// With `--curve`: the knee as the search printed it, and its rule in words.
    knee_text: Option<String>,
    knee_rule: String,
}

#[derive(Serialize)]
struct Point {
    rate: f64,
    /// The rate spread a little per repeat, so repeats at one rate are told apart.
    x: f64,
    repeat: u32,
    ms: Option<f64>,
    pass: bool,
    achieved: f64,
}

#[derive(Serialize)]
struct Data {
    kind: &'static str,
    objective: String,
    bound: f64,
    capacity: Option<f64>,
    points: Vec<Point>,
    /// With `--curve`: each step a point (achieved op/s, p50, p99, p99.9 ms), and the knee's
    /// (held, broke) rates asked.
    curve: Vec<(f64, f64, f64, f64)>,
    knee: Option<(Option<f64>, Option<f64>)>,
}

/// A step's directory as capacity.json names it: relative to `dir`, or (searches recorded
/// before that) absolute, or relative to where the search ran.
fn step_dir(dir: &Path, step: &SearchStep) -> PathBuf {
    let p = PathBuf::from(&step.dir);
    if p.is_absolute() || (!dir.join(&p).is_dir() && p.is_dir()) {
        p
    } else {
        dir.join(p)
    }
}

/// The results directories of the search's steps (probe included).
pub fn step_dirs(dir: &Path, report: &CapacityResult) -> Vec<PathBuf> {
    report
        .probe
        .iter()
        .chain(&report.steps)
        .chain(&report.confirmation)
        .map(|s| step_dir(dir, s))
        .collect()
}

pub fn page(dir: &Path, report: &CapacityResult) -> Result<String> {
    let labels: Vec<String> = report.sla.objectives.iter().map(|o| o.label.clone()).collect();
    let mut steps = Vec::new();
    let searched = usize::from(report.probe.is_some()) + report.steps.len();
    for (i, s) in report
        .probe
        .iter()
        .chain(&report.steps)
        .chain(&report.confirmation)
        .enumerate()
    {
        let worst = report
            .sla
            .objectives
            .iter()
            .map(|o| {
                s.worst_ms
                    .iter()
                    .find(|(k, _)| k.starts_with(&format!("{}<", o.label)))
                    .and_then(|(_, v)| *v)
            })
            .collect();
        let name = if i == 0 && report.probe.is_some() {
            "probe".to_string()
        } else if i >= searched {
            format!("confirm {}", i + 1 - searched)
        } else {
            (i + usize::from(report.probe.is_none())).to_string()
        };
        steps.push(SearchStepView {
            name,
            record: s.clone(),
            worst,
            link: link(dir, &step_dir(dir, s)),
        });
    }
    let first = report.sla.objectives.first();
    let spread = report.repeats.max(1) as f64;
    let mut points: Vec<Point> = report
        .steps
        .iter()
        .zip(steps.iter().skip(usize::from(report.probe.is_some())))
        .map(|(s, v)| Point {
            rate: s.rate,
            x: s.rate * (1.0 + 0.004 * (s.repeat as f64 - 1.0 - (spread - 1.0) / 2.0)),
            repeat: s.repeat,
            ms: v.worst.first().copied().flatten(),
            pass: s.pass,
            achieved: s.achieved_rate,
        })
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    let data = Data {
        kind: "capacity",
        objective: labels.first().cloned().unwrap_or_default(),
        bound: first.map_or(0.0, |o| o.bound.as_secs_f64() * 1e3),
        capacity: report.held(),
        points,
        curve: if report.curve {
            super::series::shape_curve(&report.curve_parts())
        } else {
            Vec::new()
        },
        knee: report.knee.as_ref().map(|k| (k.held_rate, k.broke_rate)),
    };
    let title = format!("caplab capacity: {} ({})", report.workload, super::run::label(dir));
    let page = Page {
        report,
        steps,
        held: report.held(),
        capacity_text: report.capacity_text(),
        knee_text: report.knee.as_ref().map(Knee::describe),
        knee_rule: report.knee.as_ref().map_or_else(String::new, |k| {
            format!(
                "{} rose past {}× its low-load level or a step achieved less than {:.0} % of its rate",
                k.percentile.name(),
                k.factor,
                KEPT_UP * 100.0
            )
        }),
    };
    html::render("capacity.html", &title, page, &data)
}
