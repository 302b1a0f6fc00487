//! `caplab history check`: the changes that begin in the latest runs of each series, and the
//! gate's policy: what fails it (`--fail-on`), confirmed by rerunning first with `--confirm`.

use anyhow::{Result, bail};
use std::path::Path;

use super::detect::DetectArgs;
use crate::history::detect::{Found, Kind};
use crate::history::series::by_series;
use crate::history::{Location, Stored};
use crate::stats::confirm::Verdict;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Regression,
    Change,
    Never,
}

/// `caplab history check`: the new changes of each series; exit 1 when one fails the check.
pub fn check(
    all: &[Stored],
    wanted: &[String],
    since: Option<&str>,
    fail_on: FailOn,
    d: &DetectArgs,
    json: bool,
    confirm: Option<(&Path, &Location, usize)>,
) -> Result<u8> {
    let all_series = by_series(all);
    let canary = d.canary(&all_series)?;
    let mut series: Vec<(String, Vec<&Stored>)> = all_series
        .iter()
        .filter(|(id, _)| canary.is_none_or(|(c, _)| c != id.as_str()))
        .cloned()
        .collect();
    if !wanted.is_empty() {
        for w in wanted {
            if !series.iter().any(|(id, _)| id.starts_with(w.as_str())) {
                bail!("no series '{w}' in the history: `caplab history` lists them");
            }
        }
        series.retain(|(id, _)| wanted.iter().any(|w| id.starts_with(w.as_str())));
    }
    let recent = |f: &Found| match since {
        Some(t) => f.started_at.as_str() >= t,
        None => f.since < 2 * d.min_segment,
    };
    let new: Vec<Found> = series
        .iter()
        .flat_map(|(_, recs)| d.changes(recs, series.len(), canary.map(|c| c.1)))
        .filter(recent)
        .collect();
    let settings = d.settings(series.len()).describe();
    let mut failing: Vec<&Found> = new
        .iter()
        .filter(|f| !f.weak)
        .filter(|f| match fail_on {
            FailOn::Regression => f.kind == Kind::Regression,
            FailOn::Change => f.kind != Kind::Starved,
            FailOn::Never => false,
        })
        .collect();
    let mut confirmations = Vec::new();
    if let Some((data, at, runs)) = confirm {
        // One confirmation a series: its failing figures read from the same reruns.
        let asked = std::mem::take(&mut failing);
        for (id, recs) in &series {
            let changes: Vec<&Found> = asked.iter().copied().filter(|f| f.series == *id).collect();
            if changes.is_empty() {
                continue;
            }
            let points = d.points(canary.map(|c| c.1));
            let done = super::confirm::run(data, at, recs, &changes, points, (runs, d.settings(1)), None)?;
            for c in done {
                if c.verdict != Verdict::NotConfirmed {
                    failing.push(changes.iter().copied().find(|f| f.figure == c.figure).expect("asked"));
                }
                confirmations.push(c);
            }
        }
    }
    if json {
        let doc = serde_json::json!({
            "settings": settings,
            "series_checked": series.len(),
            "canary": canary.map(|c| c.0),
            "changes": new,
            "confirmations": confirmations,
            "fail": !failing.is_empty(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("Checked {} series ({settings}).", series.len());
        if let Some((c, _)) = canary {
            println!(
                "Each relative to canary {} in the same sitting (the canary itself not checked).",
                &c[..8]
            );
        }
        for f in new.iter().filter(|f| !f.weak) {
            println!(
                "{}  {}
  {}
  first run at the new level: {}",
                &f.series[..8],
                f.series_name,
                f.render(),
                f.dir
            );
        }
        if new.iter().all(|f| f.weak) {
            println!("No new change in the latest runs.");
        }
        let weak: Vec<&Found> = new.iter().filter(|f| f.weak).collect();
        if !weak.is_empty() {
            println!("Weak changes (likely, not yet sure; they never fail the check):");
            for f in weak {
                println!("{}  {}\n  {}", &f.series[..8], f.series_name, f.render());
            }
        }
        for c in &confirmations {
            println!("{}", c.render());
        }
        if !failing.is_empty() {
            println!(
                "FAIL: {} new {} (--fail-on {:?}{})",
                failing.len(),
                if failing.len() == 1 { "change" } else { "changes" },
                fail_on,
                if confirm.is_some() {
                    ", confirmed or left open by rerunning"
                } else {
                    ""
                }
            );
        }
    }
    Ok(u8::from(!failing.is_empty()))
}
