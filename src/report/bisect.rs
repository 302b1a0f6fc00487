//! A bisection's page (bisect.html beside bisect.json): the answer, the values with the ones
//! it names marked, and every probe with its rounds.

use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};

use super::html;
use crate::history::bisect::{BISECT_FILE, Bisection, side_name, verdict_name};

/// The page's file name.
pub const BISECT_PAGE: &str = "bisect.html";

#[derive(Serialize)]
struct ValueView {
    value: String,
    mark: Option<&'static str>,
}

#[derive(Serialize)]
struct ProbeView {
    lo: String,
    mid: String,
    hi: String,
    side: &'static str,
    to_lo: String,
    to_hi: String,
    rounds: Vec<[String; 3]>,
}

#[derive(Serialize)]
struct EndsView {
    first: String,
    last: String,
    verdict: &'static str,
    ratio: String,
    rounds: Vec<[String; 2]>,
}

#[derive(Serialize)]
struct PageView {
    figure: String,
    values: Vec<ValueView>,
    runs: usize,
    elapsed: String,
    started_at: String,
    answer: String,
    level: Option<String>,
    effect: String,
    command: String,
    ends: EndsView,
    probes: Vec<ProbeView>,
    file: &'static str,
}

#[derive(Serialize)]
struct Data {
    kind: &'static str,
}

/// Writes `dir`/bisect.html for `b`; returns its path.
pub fn write(dir: &Path, b: &Bisection) -> Result<PathBuf> {
    let s = &b.settings;
    let answer = b.answer.as_ref();
    let figure = |v: f64| {
        if v >= 100.0 {
            crate::console::group(v)
        } else {
            format!("{v:.3}")
        }
    };
    let ratio = |l: Option<crate::stats::sequential::Look>| {
        l.map_or("–".into(), |l| {
            format!("{:.3} [{:.3}–{:.3}]", l.ratio, l.ci.0, l.ci.1)
        })
    };
    let page = PageView {
        figure: s.figure.clone(),
        values: s
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| ValueView {
                value: v.clone(),
                mark: match answer {
                    Some(a) if a.first_new == Some(i) => Some("the first at the new level"),
                    Some(a) if a.last_old == Some(i) => Some("the last at the old level"),
                    _ => None,
                },
            })
            .collect(),
        runs: b.runs(),
        elapsed: humantime::format_duration(std::time::Duration::from_secs(b.elapsed_s.round() as u64)).to_string(),
        started_at: b.started_at.clone(),
        answer: answer.map_or("not finished".into(), |a| a.text.clone()),
        level: answer.and_then(|a| {
            let (lo, hi) = a.interval?;
            Some(format!("×{:.3} [{lo:.3}–{hi:.3}]", a.ratio?))
        }),
        effect: format!("{:.0} %", s.effect * 100.0),
        command: s.command.join(" "),
        ends: EndsView {
            first: s.values[0].clone(),
            last: s.values[s.values.len() - 1].clone(),
            verdict: verdict_name(b.ends.verdict),
            ratio: ratio(b.ends.look),
            rounds: b.ends.rounds.iter().map(|r| r.map(figure)).collect(),
        },
        probes: b
            .probes
            .iter()
            .map(|p| ProbeView {
                lo: s.values[p.lo].clone(),
                mid: s.values[p.mid].clone(),
                hi: s.values[p.hi].clone(),
                side: side_name(p.side),
                to_lo: ratio(p.to_lo),
                to_hi: ratio(p.to_hi),
                rounds: p.rounds.iter().map(|r| r.map(figure)).collect(),
            })
            .collect(),
        file: BISECT_FILE,
    };
    let title = format!("Bisection of {}", s.figure);
    let text = html::render("bisect.html", &title, &page, &Data { kind: "bisect" })?;
    let out = dir.join(BISECT_PAGE);
    crate::files::write_atomic(&out, text.as_bytes())?;
    Ok(out)
}
