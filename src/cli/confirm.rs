//! `caplab history confirm SERIES`: rerun a change's configuration now (`history::gate`,
//! `history::confirm`) and print what that says; the exit code is the verdict.

use anyhow::{Context, Result, bail};
use std::path::Path;

use crate::history::gate::{confirm_and_record, which};
use crate::history::look::DetectArgs;
use crate::history::series::{by_series, one_series};
use crate::history::{Location, Stored};
use crate::stats::confirm::Finding;

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
    let done = confirm_and_record(
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
        Finding::Confirmed => CONFIRMED,
        Finding::NotConfirmed => NOT_CONFIRMED,
        Finding::Open => OPEN,
    })
}
