//! `caplab history check`: prints what the gate (`history::gate`) decided: the new changes of
//! each series, their confirmations, and whether they fail it.

use anyhow::Result;
use std::path::Path;

use crate::history::detect::Found;
use crate::history::gate::{FailOn, Gate};
use crate::history::look::DetectArgs;
use crate::history::{Location, Stored};

/// What a team running the check every night should expect of false failures.
fn nightly(d: &DetectArgs, confirming: bool) -> String {
    if confirming {
        format!(
            "Nightly: a change fails only when reruns confirm it; at most {} false failures in 100 nights of one series \
             with GC-paused runs, simulated (docs/history.md).",
            crate::stats::confirm::NIGHTLY_FALSE_CONFIRMED * 100.0
        )
    } else {
        format!(
            "Nightly: up to {:.1} false failures in 30 checks ({:.0} % a check); --confirm reruns a change before it fails \
             (at most {} in 100 nights, simulated; docs/history.md).",
            30.0 * d.alpha,
            d.alpha * 100.0,
            crate::stats::confirm::NIGHTLY_FALSE_CONFIRMED * 100.0
        )
    }
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
    let gate = Gate {
        wanted,
        since,
        fail_on,
        confirm,
    };
    let checked = gate.check(all, d)?;
    let (new, failing, confirmations, settings) = (
        &checked.changes,
        &checked.failing,
        &checked.confirmations,
        &checked.settings,
    );
    if json {
        println!("{}", serde_json::to_string_pretty(&checked)?);
    } else {
        println!("Checked {} series ({settings}).", checked.series_checked);
        println!("{}", nightly(d, confirm.is_some()));
        if let Some(c) = &checked.canary {
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
        if checked.too_short > 0 {
            println!(
                "{} of {} series have fewer than {} runs: no change can be found in them yet (at least {} runs each side).",
                checked.too_short,
                checked.series_checked,
                2 * d.min_segment,
                d.min_segment
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
        for c in confirmations {
            println!("{}", c.render());
        }
        for (series, group) in by_series(&checked.power) {
            println!(
                "What this check can see in {} at its own spread (simulated; docs/history.md says how to lower it):",
                &series[..8]
            );
            for p in group {
                println!("  {}", p.text());
            }
        }
        for u in &checked.disturbed {
            println!("{}", u.render());
        }
        if !failing.is_empty() {
            println!(
                "FAIL: {} new {} (--fail-on {:?}{})",
                failing.len(),
                if failing.len() == 1 { "change" } else { "changes" },
                fail_on,
                if confirm.is_some() {
                    ", confirmed by rerunning"
                } else {
                    ""
                }
            );
        }
    }
    if !json && failing.is_empty() && !checked.disturbed.is_empty() {
        println!(
            "NOT JUDGED: {} series ran their latest run beside other work (exit status {})",
            checked.disturbed.len(),
            crate::history::gate::UNDECIDED
        );
    }
    Ok(checked.exit_code())
}

/// The statements of power grouped by series, in order.
fn by_series(power: &[crate::history::power::Power]) -> Vec<(&str, Vec<&crate::history::power::Power>)> {
    let mut out: Vec<(&str, Vec<&crate::history::power::Power>)> = Vec::new();
    for p in power {
        match out.iter_mut().find(|(s, _)| *s == p.series) {
            Some((_, g)) => g.push(p),
            None => out.push((&p.series, vec![p])),
        }
    }
    out
}
