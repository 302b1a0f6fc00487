//! The experiment page: per measurement, each metric as bars per variant with 95 % intervals,
//! the ratio-to-baseline table with significance, the variants' percentile distributions
//! overlaid, and latency over time for every step (small multiples) with links to their pages.

use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::answers;
use super::html::{self, esc};
use super::series::{Curve, RunSeries, curve};
use crate::experiment::compare::{Answer, Comparison, Row};
use crate::experiment::record::ExperimentRecord;
use crate::experiment::spec::ExperimentFile;
use crate::measure::RunStatus;
use crate::metrics::recorder::new_histogram;
use crate::stats::sequential::Decision;

#[derive(Serialize)]
struct VariantView {
    name: String,
    options: String,
}

#[derive(Serialize)]
struct SittingView {
    name: String,
    host: String,
    started_at: String,
    status: String,
    elapsed_s: f64,
    stopped: Option<String>,
    seed: u64,
    steps: usize,
}

/// An answer as the page shows it: its line, its narrowing drawn, each round's ratio, the
/// steady-only check and, pooled, each sitting's part.
#[derive(Serialize)]
struct AnswerView {
    line: String,
    svg: Option<String>,
    variance: String,
    pairs: String,
    check: Option<String>,
    sittings: Vec<String>,
}

#[derive(Serialize)]
struct ExperimentStepView {
    index: usize,
    sitting: String,
    variant: String,
    repeat: u32,
    status: String,
    link: Option<String>,
    series: bool,
    note: Option<String>,
    /// Its window's steady-state class, when it was not steady.
    unsteady: Option<String>,
}

#[derive(Serialize)]
struct MeasurementView {
    name: String,
    comparison: Option<Comparison>,
    /// Each cell's verdict as people read it (`Figure::verdict_text`), by row and cell.
    verdict_words: Vec<Vec<String>>,
    /// One SVG per metric.
    bars: Vec<String>,
    /// Each primary question's answer in words and its narrowing drawn.
    answers: Vec<AnswerView>,
    has_distribution: bool,
    steps: Vec<ExperimentStepView>,
}

#[derive(Serialize)]
struct Page<'a> {
    record: &'a ExperimentRecord,
    variants: Vec<VariantView>,
    baseline: String,
    done: usize,
    steps: usize,
    /// The current sitting's status, start and time (every sitting's time).
    status: String,
    started_at: String,
    elapsed_s: f64,
    stopped: Option<String>,
    sittings: Vec<SittingView>,
    measurements: Vec<MeasurementView>,
}

/// What a step's small chart draws.
#[derive(Serialize)]
struct StepSeries {
    t: Vec<f64>,
    p50: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
    p999: Vec<Option<f64>>,
    gc: Vec<(f64, f64)>,
}

#[derive(Serialize)]
struct StepData {
    index: usize,
    series: Option<StepSeries>,
}

#[derive(Serialize)]
struct MeasurementData {
    distribution: Vec<Curve>,
    steps: Vec<StepData>,
}

#[derive(Serialize)]
struct Data {
    kind: &'static str,
    measurements: Vec<MeasurementData>,
}

/// The results directories of the experiment's steps that ran (each window's, when a node
/// served several), of the sittings whose files are here (a sitting run elsewhere brought its
/// record, not its steps' directories).
pub fn step_dirs(dir: &Path, record: &ExperimentRecord) -> Vec<PathBuf> {
    record
        .steps
        .iter()
        .filter(|s| s.status.is_some() && dir.join(&s.dir).is_dir())
        .flat_map(|s| window_dirs(dir, s))
        .collect()
}

/// The results directory of each of a step's windows.
fn window_dirs(dir: &Path, s: &crate::experiment::record::ExperimentStep) -> Vec<PathBuf> {
    let sdir = dir.join(&s.dir);
    (1..=s.windows.max(1))
        .map(|w| crate::experiment::step::window_dir(&sdir, s.windows, w))
        .collect()
}

/// One metric's bars: mean per variant, 95 % interval as whiskers, baseline first.
fn bars(row: &Row) -> Option<String> {
    const W: f64 = 230.0;
    const H: f64 = 150.0;
    const TOP: f64 = 30.0;
    const BOTTOM: f64 = 28.0;
    let cells: Vec<_> = row.cells.iter().filter(|c| c.mean.is_some()).collect();
    if cells.is_empty() {
        return None;
    }
    let high = cells
        .iter()
        .map(|c| c.ci.map_or(c.mean.unwrap_or(0.0), |ci| ci.1).max(c.mean.unwrap_or(0.0)))
        .fold(0.0f64, f64::max);
    let scale = if high > 0.0 { (H - TOP - BOTTOM) / high } else { 0.0 };
    let slot = (W - 20.0) / cells.len() as f64;
    let y = |v: f64| H - BOTTOM - v * scale;
    let mut svg = format!(
        "<svg class=\"bar\" data-metric=\"{}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" \
         role=\"img\"><text x=\"8\" y=\"16\" font-weight=\"600\">{}</text>",
        esc(&row.metric),
        esc(&format!(
            "{}{}",
            row.label,
            if row.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", row.unit)
            }
        ))
    );
    for (i, c) in cells.iter().enumerate() {
        let mean = c.mean.unwrap_or(0.0);
        let x = 10.0 + slot * i as f64 + slot * 0.15;
        let w = slot * 0.7;
        // A primary metric is coloured by its answer, the decision to act on; the others by the
        // one planned look's verdict.
        let (better, worse) = match c.answer {
            Some(d) => (d == Decision::Better, d == Decision::Worse),
            None => (c.verdict.better(), c.verdict.worse()),
        };
        let color = if better {
            "#4caf6a"
        } else if worse {
            "#d64545"
        } else if i == 0 {
            "#6b8fb5"
        } else {
            "#a9b8c8"
        };
        svg += &format!(
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{}: {} {}</title></rect>",
            y(mean),
            (mean * scale).max(0.0),
            esc(&c.variant),
            number(mean),
            esc(&c.verdict_text())
        );
        if let Some((lo, hi)) = c.ci {
            let cx = x + w / 2.0;
            svg += &format!(
                "<path d=\"M{cx:.1} {:.1}V{:.1}M{:.1} {:.1}h{:.1}M{:.1} {:.1}h{:.1}\" stroke=\"#222\" fill=\"none\"/>",
                y(lo),
                y(hi),
                cx - 5.0,
                y(lo),
                10.0,
                cx - 5.0,
                y(hi),
                10.0
            );
        }
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"middle\">{}</text>",
            x + w / 2.0,
            H - BOTTOM + 13.0,
            esc(&c.variant),
            x + w / 2.0,
            (y(mean) - 4.0).max(TOP - 4.0),
            number(mean)
        );
    }
    svg += "</svg>";
    Some(svg)
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        crate::console::group(v)
    } else {
        format!("{v:.3}")
    }
}

/// A step as the page shows it: its small chart (its first window's, when its node served
/// several) and caption; its windows' response histograms are added to its variant's `merged`.
fn step_view(
    dir: &Path,
    s: &crate::experiment::record::ExperimentStep,
    merged: &mut BTreeMap<usize, hdrhistogram::Histogram<u64>>,
) -> (ExperimentStepView, StepData) {
    let windows = window_dirs(dir, s);
    let first = &windows[0];
    let mut series = None;
    let mut note = (s.windows > 1).then(|| format!("window 1 of {} on its node", s.windows));
    let mut unsteady = None;
    if s.status == Some(RunStatus::Completed) && first.join(crate::measure::result::RESULT_FILE).is_file() {
        match RunSeries::load(first, &s.variant_name) {
            Ok((r, rs)) => {
                unsteady = r.steady_state.as_ref().filter(|v| !v.steady).map(|v| {
                    v.class
                        .map_or("warm-up did not settle".to_string(), |c| c.name().to_string())
                });
                for w in &windows {
                    if let Ok(r) = crate::measure::RunResult::load(w) {
                        merged
                            .entry(s.at.variant)
                            .or_insert_with(new_histogram)
                            .add(r.response_histogram())
                            .expect("same range");
                    }
                }
                series = Some(StepSeries {
                    t: rs.t,
                    p50: rs.p50,
                    p99: rs.p99,
                    p999: rs.p999,
                    gc: rs.gc,
                });
            }
            Err(e) => note = Some(format!("cannot read: {e:#}")),
        }
    } else if dir.join(&s.dir).join(crate::measure::result::CAPACITY_FILE).is_file() {
        note = Some("a capacity search: see its page".into());
    }
    let link = first.join(super::REPORT_FILE).is_file().then(|| {
        format!(
            "{}/{}",
            first.strip_prefix(dir).unwrap_or(first).display(),
            super::REPORT_FILE
        )
    });
    let view = ExperimentStepView {
        index: s.index,
        sitting: s.sitting.clone(),
        variant: s.variant_name.clone(),
        repeat: s.at.repeat,
        status: s
            .status
            .and_then(|st| serde_json::to_value(st).ok()?.as_str().map(String::from))
            .unwrap_or_else(|| "not run".to_string()),
        link,
        series: series.is_some(),
        note,
        unsteady,
    };
    (view, StepData { index: s.index, series })
}

fn answer_view(a: &Answer) -> AnswerView {
    AnswerView {
        line: a.line(),
        svg: answers::narrowing(a),
        variance: a.variance.clone(),
        pairs: a
            .pairs
            .iter()
            .map(|(r, x)| format!("round {r} ×{x:.3}"))
            .collect::<Vec<_>>()
            .join(", "),
        check: a.steady_check.as_ref().map(|c| {
            format!(
                "steady windows only: ×{:.3} [{:.3}–{:.3}] at 95 % over {} rounds ({} window(s) not steady left out)",
                c.ratio, c.ci.0, c.ci.1, c.rounds, c.left_out
            )
        }),
        sittings: a
            .sittings
            .iter()
            .map(|p| {
                format!(
                    "{}: ×{:.3} [{:.3}–{:.3}] at 95 % (fixed-sample) over {} rounds{}",
                    p.sitting,
                    p.ratio,
                    p.ci.0,
                    p.ci.1,
                    p.rounds,
                    p.decision
                        .map(|d| format!(", its own answer {}", d.name()))
                        .unwrap_or_default()
                )
            })
            .collect(),
    }
}

pub fn page(dir: &Path, record: &ExperimentRecord) -> Result<String> {
    let file: Option<ExperimentFile> = serde_norway::from_str(&record.text).ok();
    let variant_names: Vec<String> = file
        .as_ref()
        .map(|f| f.variants.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    let variants = file
        .as_ref()
        .map(|f| {
            f.variants
                .iter()
                .map(|v| VariantView {
                    name: v.name.clone(),
                    options: format!(
                        "node: {}  run: {}",
                        serde_json::to_string(&v.node).unwrap_or_default(),
                        serde_json::to_string(&v.run).unwrap_or_default()
                    ),
                })
                .collect()
        })
        .unwrap_or_default();
    let measurement_names: Vec<String> = file
        .as_ref()
        .map(|f| f.measure.iter().map(|m| m.name.clone()).collect())
        .unwrap_or_default();
    let baseline = record
        .comparison
        .first()
        .map(|c| c.baseline.clone())
        .unwrap_or_default();
    let mut views = Vec::new();
    let mut data = Vec::new();
    for (mi, name) in measurement_names.iter().enumerate() {
        let comparison = record.comparison.iter().find(|c| &c.measurement == name).cloned();
        let bars = comparison
            .as_ref()
            .map(|c| c.rows.iter().filter_map(bars).collect())
            .unwrap_or_default();
        // Per variant, the merged response histograms of its completed run steps.
        let mut merged: BTreeMap<usize, hdrhistogram::Histogram<u64>> = BTreeMap::new();
        let mut steps = Vec::new();
        let mut step_data = Vec::new();
        for s in record.steps.iter().filter(|s| s.at.measurement == mi) {
            let (view, data) = step_view(dir, s, &mut merged);
            steps.push(view);
            step_data.push(data);
        }
        let distribution: Vec<Curve> = merged
            .iter()
            .map(|(v, h)| curve(variant_names.get(*v).map_or("?", |n| n.as_str()), h))
            .collect();
        let answers = comparison.iter().flat_map(|c| &c.answers).map(answer_view).collect();
        let verdict_words = comparison
            .iter()
            .flat_map(|c| &c.rows)
            .map(|r| r.cells.iter().map(|c| c.verdict_text()).collect())
            .collect();
        views.push(MeasurementView {
            name: name.clone(),
            comparison,
            verdict_words,
            bars,
            answers,
            has_distribution: !distribution.is_empty(),
            steps,
        });
        data.push(MeasurementData {
            distribution,
            steps: step_data,
        });
    }
    let done = record
        .steps
        .iter()
        .filter(|s| s.status == Some(RunStatus::Completed))
        .count();
    let status_name = |s: RunStatus| {
        serde_json::to_value(s)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    };
    let sittings = record
        .sittings
        .iter()
        .map(|s| SittingView {
            name: s.name.clone(),
            host: s.host.describe(),
            started_at: s.started_at.clone(),
            status: status_name(s.status),
            elapsed_s: s.elapsed_s,
            stopped: s.stopped.clone(),
            seed: s.seed,
            steps: record
                .steps
                .iter()
                .filter(|t| t.sitting == s.name && t.status == Some(RunStatus::Completed))
                .count(),
        })
        .collect();
    let now = record.current();
    let title = format!("caplab experiment: {}", record.name);
    html::render(
        "experiment.html",
        &title,
        Page {
            record,
            variants,
            baseline,
            done,
            steps: record.steps.len(),
            status: status_name(now.status),
            started_at: record.sittings[0].started_at.clone(),
            elapsed_s: record.elapsed_s(),
            stopped: now.stopped.clone(),
            sittings,
            measurements: views,
        },
        &Data {
            kind: "experiment",
            measurements: data,
        },
    )
}
