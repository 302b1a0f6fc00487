//! One step of an experiment: the variant's nodes started (wiped first when fresh), the
//! measurement run into the step's directory with the same code as `caplab run` / `capacity`,
//! and a line saying what it measured.

use anyhow::Result;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::spec::{Cell, What};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::Liveness;
use crate::console::say;
use crate::engine::Stop;
use crate::measure::{RunStatus, commands};

/// What one step left: its status, a line saying what it measured, and (a run's) steady-state
/// verdict.
pub struct StepOutcome {
    pub status: RunStatus,
    pub line: String,
    pub steady: Option<crate::steady::SteadyState>,
}

/// Starts the variant's nodes (fresh: wiped first), runs the measurement into `dir`; returns
/// its status, a line saying what it measured, and (a run's) steady-state verdict.
pub fn run_step(home: &Home, fresh: bool, cell: &Cell, dir: &Path, stop: &Arc<Stop>) -> Result<StepOutcome> {
    let spec = cell.node.spec()?;
    let mut tell = |m: &str| say(&format!("  {m}"));
    if fresh {
        let nodes = local::nodes(home)?;
        local::wipe(&nodes, true, &mut tell)?;
    }
    local::start(
        home,
        &spec,
        StartOptions {
            restart: true,
            timeout: None,
        },
        &mut tell,
    )?;
    match &cell.what {
        What::Run(o) => {
            let mut o = (**o).clone();
            o.common.out = Some(dir.to_path_buf());
            o.common.force = true;
            o.common.quiet = true;
            let (r, _) = commands::run(home, &o, stop)?;
            let t = r.summary.as_ref().map(|s| s.total.clone());
            let window = match (&r.warmup, &r.steady_state) {
                (Some(w), Some(v)) => format!(
                    "; warm-up {}{}; window {}{}",
                    w.length_s.map_or("-".into(), |s| format!("{s:.0} s")),
                    if w.settled == Some(false) { " (NOT settled)" } else { "" },
                    v.class.map_or("not judged", |c| c.name()),
                    if v.steady { "" } else { ", NOT STEADY" }
                ),
                _ => String::new(),
            };
            Ok(StepOutcome {
                status: r.status,
                line: match t {
                    Some(t) => format!(
                        "{}: {} op/s, p99 {:.2} ms, p99.9 {:.2} ms, {} errors{window}",
                        r.status.name(),
                        crate::console::group(t.op_rate),
                        t.response.p99_ms,
                        t.response.p999_ms,
                        t.error_total
                    ),
                    None => r.status.name().to_string(),
                },
                steady: r.steady_state,
            })
        }
        What::Capacity(o) => {
            let mut o = (**o).clone();
            o.common.out = Some(dir.to_path_buf());
            o.common.force = true;
            o.common.quiet = true;
            let (r, _, _) = commands::capacity(home, &o, stop)?;
            let unsteady = r.steps.iter().filter(|s| s.steady == Some(false)).count();
            Ok(StepOutcome {
                status: r.status,
                line: format!(
                    "{}: capacity {}{}",
                    r.status.name(),
                    r.capacity
                        .map_or("none".into(), |c| format!("{} op/s", crate::console::group(c))),
                    if unsteady > 0 {
                        format!(" ({unsteady} of {} steps not steady)", r.steps.len())
                    } else {
                        String::new()
                    }
                ),
                steady: None,
            })
        }
    }
}

/// Stops whatever nodes of the experiment still run.
pub fn stop_nodes(home: &Home) {
    if let Ok(nodes) = local::nodes(home) {
        let running: Vec<_> = nodes
            .into_iter()
            .filter(|n| n.liveness() == Liveness::Running)
            .collect();
        let _ = local::stop(
            &running,
            StopOptions {
                drain: false,
                timeout: Duration::from_secs(30),
            },
            &mut |m| say(&format!("  {m}")),
        );
    }
}
