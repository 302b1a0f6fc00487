//! The history page (history.html): per series, each figure's points over time (steady windows
//! filled, others hollow and left out of detection) with each run's own interval as a bar (a
//! capacity: its search's bracket), the levels between change points with
//! their 95 % intervals, each change marked (red a regression, green an improvement) and listed,
//! each point linked to its run's page and labelled on hover; weak changes listed apart from
//! sure ones, each change's confirmations by rerunning beside it, and the bisections.

use anyhow::Result;
use serde::Serialize;
use std::path::Path;

use super::{html, link};
use crate::history::Stored;
use crate::history::detect::Found;
use crate::history::detect::{CHECKED, Points, higher_is_better, series_changes, settings_for, value};
use crate::history::events::{Event, EventKind};
use crate::history::record::FIGURES;
use crate::stats::changes::{Settings, changes, level_of};

/// The file name of the history's page.
pub const HISTORY_PAGE: &str = "history.html";

#[derive(Serialize)]
struct SeriesView {
    id: String,
    name: String,
    records: usize,
    changes: Vec<String>,
    /// Confirmations by rerunning of this series' changes (`history confirm`, `check --confirm`).
    confirmations: Vec<String>,
    charts: Vec<String>,
}

#[derive(Serialize)]
struct PageView {
    series: Vec<SeriesView>,
    /// Bisections (`caplab bisect`), newest last.
    bisections: Vec<String>,
    settings: String,
    records: usize,
    source: String,
}

#[derive(Serialize)]
struct Chart {
    id: String,
    title: String,
    /// Epoch seconds of each run's start.
    t: Vec<f64>,
    /// The figure, for points that are part of detection, and for the others.
    v: Vec<Option<f64>>,
    out: Vec<Option<f64>>,
    /// Each point's own interval (`record::Intervals`), where it has one.
    lo: Vec<Option<f64>>,
    hi: Vec<Option<f64>>,
    /// What hovering a point shows: start, labels, window verdict.
    about: Vec<String>,
    /// The run's page, relative to this one where it can be.
    link: Vec<Option<String>>,
    /// [from t, to t, level, low, high] per segment between change points.
    segments: Vec<[f64; 5]>,
    /// [t, 1 regression / 0 improvement] per change.
    changes: Vec<[f64; 2]>,
}

#[derive(Serialize)]
struct Data {
    kind: &'static str,
    charts: Vec<Chart>,
}

/// Writes the page of `groups` (each series' records, oldest first) and the history's `events`
/// (confirmations, bisections) to `out`.
pub fn write(
    groups: &[(String, Vec<&Stored>)],
    events: &[Event],
    s: &Settings,
    points: Points,
    source: &str,
    out: &Path,
) -> Result<()> {
    let base = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut views = Vec::new();
    let mut charts = Vec::new();
    for (id, recs) in groups {
        let Some(first) = recs.first() else { continue };
        let found = series_changes(recs, &CHECKED, points, s);
        let mut view = SeriesView {
            id: id[..8].to_string(),
            name: first.record.series.name(),
            records: recs.len(),
            changes: found.iter().map(|f| with_confirmations(f, events)).collect(),
            confirmations: events
                .iter()
                .filter(|e| e.kind == EventKind::Confirmation && e.series.as_deref() == Some(id.as_str()))
                .map(|e| format!("{} ({}; {})", e.summary, e.recorded_at, e.dir))
                .collect(),
            charts: Vec::new(),
        };
        for figure in CHECKED {
            if let Some(c) = chart(&id[..8], recs, figure, points, s, base) {
                view.charts.push(c.id.clone());
                charts.push(c);
            }
        }
        views.push(view);
    }
    let page = PageView {
        bisections: events
            .iter()
            .filter(|e| e.kind == EventKind::Bisection)
            .map(|e| format!("{} ({}; {})", e.summary, e.recorded_at, e.dir))
            .collect(),
        records: groups.iter().map(|(_, r)| r.len()).sum(),
        series: views,
        settings: s.describe(),
        source: source.to_string(),
    };
    let text = html::render(
        "history.html",
        "Performance history",
        &page,
        &Data {
            kind: "history",
            charts,
        },
    )?;
    crate::files::write_atomic(out, text.as_bytes())
}

/// A change as listed, with what its confirmations by rerunning found.
fn with_confirmations(f: &Found, events: &[Event]) -> String {
    let verdicts: Vec<String> = events
        .iter()
        .filter(|e| {
            e.kind == EventKind::Confirmation
                && e.series.as_deref() == Some(f.series.as_str())
                && e.figure == f.figure
                && e.change_at.as_deref() == Some(f.started_at.as_str())
        })
        .map(|e| format!("{} by rerunning on {}", e.outcome.to_uppercase(), e.recorded_at))
        .collect();
    if verdicts.is_empty() {
        f.render()
    } else {
        format!("{} — {}", f.render(), verdicts.join("; "))
    }
}

fn chart(series: &str, recs: &[&Stored], figure: &str, points: Points, s: &Settings, base: &Path) -> Option<Chart> {
    let col = FIGURES.iter().position(|f| *f == figure)?;
    let mut c = Chart {
        id: format!("chart-{series}-{figure}"),
        title: format!(
            "{figure} ({})",
            if higher_is_better(figure) {
                "higher is better"
            } else {
                "lower is better"
            }
        ),
        t: Vec::new(),
        v: Vec::new(),
        out: Vec::new(),
        lo: Vec::new(),
        hi: Vec::new(),
        about: Vec::new(),
        link: Vec::new(),
        segments: Vec::new(),
        changes: Vec::new(),
    };
    let mut last_t = 0.0;
    let mut admitted: Vec<(f64, f64)> = Vec::new();
    for r in recs {
        let Some(v) = value(&r.record, col) else {
            continue;
        };
        let t = humantime::parse_rfc3339_weak(&r.record.started_at)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(last_t + 1.0, |d| d.as_secs_f64())
            .max(last_t + 0.001);
        last_t = t;
        let inside = points.admits(&r.record);
        c.t.push(t);
        c.v.push(inside.then_some(v));
        c.out.push((!inside).then_some(v));
        let bounds = r.record.intervals.get(figure);
        c.lo.push(bounds.map(|b| b[0]));
        c.hi.push(bounds.map(|b| b[1]));
        let labels: Vec<String> = r.record.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        c.about.push(format!(
            "{} · {} · window {}{}",
            r.record.started_at,
            r.record.status,
            r.record.steady.as_deref().unwrap_or("not judged"),
            if labels.is_empty() {
                String::new()
            } else {
                format!(" · {}", labels.join(" "))
            }
        ));
        c.link.push(link(base, &r.record.dir));
        if inside {
            admitted.push((t, v));
        }
    }
    if c.t.is_empty() {
        return None;
    }
    let values: Vec<f64> = admitted.iter().map(|(_, v)| *v).collect();
    // Sure changes only: weak ones are listed under the series, not drawn as levels.
    let s = settings_for(s, figure);
    let found: Vec<_> = changes(&values, &s).into_iter().filter(|c| !c.weak).collect();
    let mut cuts: Vec<usize> = found.iter().map(|f| f.at).collect();
    cuts.insert(0, 0);
    cuts.push(values.len());
    for w in cuts.windows(2) {
        let (from, to) = (w[0], w[1]);
        if to <= from {
            continue;
        }
        let l = level_of(&values[from..to], s.statistic);
        let t_to = admitted.get(to).map_or(admitted[to - 1].0, |p| p.0);
        c.segments.push([admitted[from].0, t_to, l.value, l.low, l.high]);
    }
    for f in &found {
        let regression = (f.ratio > 1.0) != higher_is_better(figure);
        c.changes.push([admitted[f.at].0, if regression { 1.0 } else { 0.0 }]);
    }
    Some(c)
}
