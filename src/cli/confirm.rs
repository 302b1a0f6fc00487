//! `caplab history confirm SERIES` and `history check --confirm`: rerun a change's
//! configuration now (history::confirm) and print what that says.

use anyhow::{Context, Result, bail};
use std::path::Path;

use super::detect::DetectArgs;
use crate::history::confirm::{Confirmation, Request, confirm};
use crate::history::detect::{Found, Kind, Points};
use crate::history::events::{self, Event};
use crate::history::series::{by_series, one_series};
use crate::history::{Location, Store, Stored};
use crate::stats::changes::Settings;
use crate::stats::confirm::Verdict;

/// Exit codes of `caplab history confirm`.
pub const NOT_CONFIRMED: u8 = 0;
pub const CONFIRMED: u8 = 1;
pub const OPEN: u8 = 3;

/// How `caplab history confirm` was asked.
pub struct Ask<'a> {
    pub runs: usize,
    pub out: Option<&'a Path>,
    pub json: bool,
}

/// `caplab history confirm SERIES`: the exit code says the verdict.
pub fn series(data: &Path, at: &Location, all: &[Stored], prefix: &str, d: &DetectArgs, ask: Ask) -> Result<u8> {
    let groups = by_series(all);
    let (id, recs) = one_series(&groups, prefix)?;
    let canary = d.canary(&groups)?.filter(|(c, _)| c != id).map(|c| c.1);
    let found = d.changes(recs, 1, canary);
    let Some(change) = which(&found) else {
        bail!(
            "series {} has no sure change to confirm (`caplab history {}` lists its changes)",
            &id[..8],
            &id[..8]
        );
    };
    let done = run(
        data,
        at,
        recs,
        &[change],
        d.points(canary),
        (ask.runs, d.settings(1)),
        ask.out,
    )?;
    let done = done.into_iter().next().context("one confirmation")?;
    if ask.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        println!("{}", done.render());
    }
    Ok(match done.verdict {
        Verdict::Confirmed => CONFIRMED,
        Verdict::NotConfirmed => NOT_CONFIRMED,
        Verdict::Open => OPEN,
    })
}

/// The change of a series to confirm: its latest sure regression, else its latest sure change.
pub fn which(found: &[Found]) -> Option<&Found> {
    let sure = || found.iter().filter(|f| !f.weak);
    sure()
        .filter(|f| f.kind == Kind::Regression)
        .max_by_key(|f| f.run_id)
        .or_else(|| sure().max_by_key(|f| f.run_id))
}

/// Reruns to confirm `changes` of the series `recs` (those that rerun the same commands share
/// their runs), into `out` (default: a directory named for them under `confirm/` in caplab's
/// data directory `data`), saying each look on stderr; writes confirmation.json there (an
/// object for one change, else a list) and records each in the history's events.
pub fn run(
    data: &Path,
    at: &Location,
    recs: &[&Stored],
    changes: &[&Found],
    points: Points<'_>,
    (runs, settings): (usize, Settings),
    out: Option<&Path>,
) -> Result<Vec<Confirmation>> {
    let alpha = settings.alpha;
    let first = changes.first().context("no change to confirm")?;
    let figures: Vec<&str> = changes.iter().map(|c| c.figure.as_str()).collect();
    let out = out.map_or_else(
        || {
            let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
            data.join("confirm").join(format!(
                "{}-{}-{}",
                &first.series[..8],
                figures.join("+"),
                now.replace(':', "")
            ))
        },
        Path::to_path_buf,
    );
    let history = match at {
        Location::Sqlite(p) => p.display().to_string(),
        Location::Postgres(url) => url.clone(),
    };
    crate::console::say(&format!(
        "Confirming {} of {}: up to {runs} fresh run{} (rounds) into {}",
        changes
            .iter()
            .map(|c| format!(
                "{} {} ({:+.1} % from the run of {})",
                c.kind,
                c.figure,
                (c.ratio - 1.0) * 100.0,
                c.started_at
            ))
            .collect::<Vec<_>>()
            .join(", "),
        &first.series[..8],
        if runs == 1 { "" } else { "s" },
        out.display()
    ));
    let req = Request {
        series: recs,
        changes,
        points,
        runs,
        alpha,
        out: out.clone(),
        history,
        home: data.to_path_buf(),
        settings,
    };
    let exe = std::env::current_exe().context("cannot find caplab's own program to rerun")?;
    let done = confirm(&req, &exe, crate::console::say)?;
    let file = out.join("confirmation.json");
    match done.as_slice() {
        [one] => crate::files::write_json(&file, one)?,
        all => crate::files::write_json(&file, &all)?,
    }
    for c in &done {
        let event = Event {
            kind: "confirmation".into(),
            series: Some(c.series.clone()),
            figure: c.figure.clone(),
            change_at: Some(c.change.started_at.clone()),
            outcome: c.verdict.name().into(),
            summary: c.render().lines().next().unwrap_or_default().to_string(),
            dir: std::path::absolute(&out).unwrap_or(out.clone()).display().to_string(),
            recorded_at: Event::now(),
        };
        if let Err(e) = Store::open(at).and_then(|mut s| events::insert(&mut s, &event)) {
            eprintln!(
                "warning: the confirmation is not in the history ({e:#}); it is in {}",
                file.display()
            );
        }
    }
    Ok(done)
}
