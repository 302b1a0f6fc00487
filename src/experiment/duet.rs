//! Duet (Bulej et al., ICPE 2020), `design: duet`: a round's two variants of a measurement run
//! at once on this one host, each on nodes of its own (its own home, addresses and JMX port)
//! with half the load, their windows started in the same second, so whatever disturbs the
//! machine during a window disturbs both and the round's log-ratio cancels it: an A/A's
//! interval came out less than half as wide as the best sequential design's in the same wall
//! time (bench/results/answers-another-day.md, "Duet as a design"). The price: each node has half the machine, and a variant that burns more
//! CPU slows its partner as well as itself. `spec` makes a file's cells a duet's; this module
//! runs a pair.

use anyhow::{Result, anyhow};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::spec::{Cell, What};
use super::step::{self, StepOutcome, StepPlan};
use crate::cluster::Home;
use crate::engine::{Meeting, Stop};
use crate::measure::{RunResult, RunStatus, commands};

/// Metrics a duet cannot tell apart between its variants: one caplab process drives both.
pub const SHARED: &[&str] = &["client_cpu"];

/// Variant `name`'s home in a duet under `out`: each variant's nodes have their own.
pub fn home(out: &Path, cache: &Path, name: &str) -> Home {
    Home::at(out.join(format!("home-{name}")), cache)
}

/// One side of a duet: its variant's name, home, cell and step directory.
pub struct Side<'a> {
    pub name: &'a str,
    pub home: &'a Home,
    pub cell: &'a Cell,
    pub dir: PathBuf,
}

/// Runs a round's two steps of one measurement at once: both variants' nodes started (fresh:
/// wiped first), then each window of both started in the same second once both have set their
/// schema up (engine::Meeting), each driven from its own thread. An error on either side fails
/// both: the other's window ran beside a partner that was not there.
pub fn run_pair(sides: &[Side; 2], fresh: bool, plan: StepPlan, stop: &Arc<Stop>) -> Result<[StepOutcome; 2]> {
    for s in sides {
        step::start_nodes(s.home, fresh, s.cell).map_err(|e| e.context(format!("variant {}", s.name)))?;
    }
    let windows = plan.windows.max(1);
    let mut results: [Vec<(RunResult, BTreeMap<String, f64>)>; 2] = Default::default();
    for w in 1..=windows {
        let meeting = Arc::new(Meeting::new(sides.len()));
        let mut options = Vec::new();
        for s in sides {
            let What::Run(o) = &s.cell.what else {
                anyhow::bail!("variant {}: a duet runs runs, not capacity searches", s.name);
            };
            let mut o = step::window_options(o, &s.dir, plan, w);
            o.meet = Some(meeting.clone());
            options.push(o);
        }
        let mut runs: Vec<(Result<(RunResult, PathBuf)>, bool)> = std::thread::scope(|scope| {
            let handles: Vec<_> = sides
                .iter()
                .zip(&options)
                .map(|(s, o)| {
                    let meeting = &meeting;
                    scope.spawn(move || {
                        let run = commands::run(s.home, o, stop);
                        // A side that ended before its schedule began releases the other.
                        let first = meeting.abandon(&format!("variant {} ended before its window began", s.name));
                        (run, first)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| (Err(anyhow!("the run's thread panicked")), false))
                })
                .collect()
        });
        // The side that failed before its window holds the cause of its partner's error.
        if let Some(i) = runs.iter().position(|(run, first)| *first && run.is_err()) {
            let (Err(e), _) = runs.swap_remove(i) else {
                unreachable!()
            };
            return Err(e.context(format!("variant {} of the duet", sides[i].name)));
        }
        let mut done = true;
        for ((s, (run, _)), into) in sides.iter().zip(runs).zip(results.iter_mut()) {
            let (r, _) = run.map_err(|e| e.context(format!("variant {} of the duet", s.name)))?;
            let mut values = step::values_in(&step::window_dir(&s.dir, windows, w));
            for key in SHARED {
                values.remove(*key);
            }
            done &= r.status == RunStatus::Completed;
            into.push((r, values));
        }
        if !done || stop.is_requested() {
            break;
        }
    }
    Ok([
        step::outcome_of(&results[0], windows),
        step::outcome_of(&results[1], windows),
    ])
}
