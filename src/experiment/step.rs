//! One step of an experiment: the variant's nodes started (wiped first when fresh), the
//! measurement run with the same code as `caplab run` / `capacity` (a run measured in as many
//! windows as the plan gives each node, one after another after one warm-up), and what it left:
//! a line for people, its steady-state verdict, whether its warm-up settled, and every metric's
//! value (its windows' node mean) for the record.

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::compare::{Observation, units};
use super::spec::{Cell, Experiment, What};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::Liveness;
use crate::console::say;
use crate::engine::{Stop, Warmup};
use crate::measure::options::RunOptions;
use crate::measure::{RunResult, RunStatus, commands};

/// The warm-up of a node's second and later windows: the node and its JIT are warm, the
/// client's new session is not quite. A shorter fixed warm-up the file asks for is kept.
pub const LATER_WARMUP: Duration = Duration::from_secs(5);

/// How the plan runs a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPlan {
    /// Measured windows on the node (runs only).
    pub windows: u32,
    /// A replacement for a step still warming: twice the warm-up.
    pub longer_warmup: bool,
}

/// What one step left.
#[derive(Debug)]
pub struct StepOutcome {
    pub status: RunStatus,
    pub line: String,
    pub steady: Option<crate::steady::SteadyState>,
    /// Whether its automatic warm-up settled.
    pub settled: Option<bool>,
    /// Every metric's value (the node mean of its windows).
    pub values: BTreeMap<String, f64>,
    /// Each window's values, when there were several.
    pub window_values: Vec<BTreeMap<String, f64>>,
}

/// Starts the variant's nodes (fresh: wiped first) and runs the measurement into `dir`.
pub fn run_step(
    home: &Home,
    fresh: bool,
    cell: &Cell,
    dir: &Path,
    plan: StepPlan,
    stop: &Arc<Stop>,
) -> Result<StepOutcome> {
    start_nodes(home, fresh, cell)?;
    match &cell.what {
        What::Run(o) => run_windows(home, o, dir, plan, stop),
        What::Capacity(o) => {
            let mut o = (**o).clone();
            o.common.out = Some(dir.to_path_buf());
            o.common.force = true;
            o.common.quiet = true;
            let (r, _, _) = crate::capacity::command::capacity(home, &o, stop)?;
            let unsteady = r.steps.iter().filter(|s| s.steady == Some(false)).count();
            let values = values_in(dir);
            Ok(StepOutcome {
                status: r.status,
                // What the search holds to: the confirmed rate when it confirmed one, so a search
                // whose every confirmation failed says so rather than naming its first guess.
                line: format!(
                    "{}: capacity {}{}",
                    r.status.name(),
                    r.capacity_text(),
                    if unsteady > 0 {
                        format!(" ({unsteady} of {} steps not steady)", r.steps.len())
                    } else {
                        String::new()
                    }
                ),
                steady: None,
                settled: None,
                values,
                window_values: Vec::new(),
            })
        }
    }
}

/// Starts the variant's nodes in `home` (wiped first when `fresh`).
pub fn start_nodes(home: &Home, fresh: bool, cell: &Cell) -> Result<()> {
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
    Ok(())
}

/// Every metric's value of the results in `dir` (none when they cannot be read).
pub fn values_in(dir: &Path) -> BTreeMap<String, f64> {
    Observation::load(dir).map(|o| units::values_of(&o)).unwrap_or_default()
}

/// The directory of window `w` (from 1) of a step with `windows` windows: the step's own for
/// one, `w1`, `w2`… inside it for more.
pub fn window_dir(dir: &Path, windows: u32, w: u32) -> std::path::PathBuf {
    if windows <= 1 {
        dir.to_path_buf()
    } else {
        dir.join(format!("w{w}"))
    }
}

/// The run's options with a longer warm-up: twice an automatic warm-up's maximum, or twice a
/// fixed one.
fn longer(o: &mut RunOptions) {
    match crate::measure::options::resolve_warmup(o.warmup, o.warmup_max) {
        Ok(Warmup::Auto { max }) => o.warmup_max = Some(max * 2),
        Ok(Warmup::Time(d)) => o.warmup = Warmup::Time(d * 2),
        _ => {}
    }
}

/// Window `w`'s options (from 1) of a run step into `dir`: its own directory, quiet; the first
/// window of a replacement warms up longer, later windows only briefly.
pub fn window_options(o: &RunOptions, dir: &Path, plan: StepPlan, w: u32) -> RunOptions {
    let mut o = o.clone();
    o.common.out = Some(window_dir(dir, plan.windows.max(1), w));
    o.common.force = true;
    o.common.quiet = true;
    if w == 1 && plan.longer_warmup {
        longer(&mut o);
    }
    if w > 1 {
        o.warmup = Warmup::Time(later_warmup(&o));
        o.warmup_max = None;
    }
    o
}

/// The warm-up of a node's second and later windows of a run with these options:
/// [`LATER_WARMUP`], or the shorter fixed warm-up the run asks for.
pub fn later_warmup(o: &RunOptions) -> Duration {
    match crate::measure::options::resolve_warmup(o.warmup, o.warmup_max) {
        Ok(Warmup::Time(d)) => d.min(LATER_WARMUP),
        Ok(Warmup::None) => Duration::ZERO,
        _ => LATER_WARMUP,
    }
}

/// A run step's windows on the node just started: the first after the measurement's warm-up,
/// the others one after another after a short one.
fn run_windows(home: &Home, o: &RunOptions, dir: &Path, plan: StepPlan, stop: &Arc<Stop>) -> Result<StepOutcome> {
    let windows = plan.windows.max(1);
    let mut results: Vec<(RunResult, BTreeMap<String, f64>)> = Vec::new();
    for w in 1..=windows {
        let o = window_options(o, dir, plan, w);
        let (r, _) = commands::run(home, &o, stop)?;
        let values = values_in(&window_dir(dir, windows, w));
        let done = r.status == RunStatus::Completed;
        results.push((r, values));
        if !done || stop.is_requested() {
            break;
        }
    }
    Ok(outcome_of(&results, windows))
}

/// One outcome for the windows a node served (`windows` planned, `results` run, at least one).
pub fn outcome_of(results: &[(RunResult, BTreeMap<String, f64>)], windows: u32) -> StepOutcome {
    let (first, _) = &results[0];
    let (last, _) = &results[results.len() - 1];
    let status = if results.len() < windows as usize && last.status == RunStatus::Completed {
        RunStatus::Interrupted
    } else {
        last.status
    };
    let all: Vec<BTreeMap<String, f64>> = results.iter().map(|(_, v)| v.clone()).collect();
    let steady = merged_verdict(&results.iter().map(|(r, _)| r).collect::<Vec<_>>());
    let lines: Vec<String> = results.iter().map(|(r, _)| line(r)).collect();
    StepOutcome {
        status,
        line: if lines.len() == 1 {
            lines[0].clone()
        } else {
            format!("{} windows: {}", lines.len(), lines.join(" | "))
        },
        steady,
        settled: first.warmup.as_ref().and_then(|w| w.settled),
        values: units::node_mean(&all),
        window_values: if all.len() > 1 { all } else { Vec::new() },
    }
}

/// One verdict for a node's windows: steady only if every window was (the first's class, and
/// the first unsteady window's summary).
fn merged_verdict(runs: &[&RunResult]) -> Option<crate::steady::SteadyState> {
    let verdicts: Vec<&crate::steady::SteadyState> = runs.iter().filter_map(|r| r.steady_state.as_ref()).collect();
    let first = verdicts.first()?;
    Some(
        verdicts
            .iter()
            .find(|v| !v.steady)
            .map_or_else(|| (*first).clone(), |v| (*v).clone()),
    )
}

/// `completed: 36,012 op/s, p99 4.10 ms, p99.9 12.00 ms, 0 errors; warm-up 84 s; window flat`.
fn line(r: &RunResult) -> String {
    let t = r.summary.as_ref().map(|s| s.total.clone());
    let window = match (&r.warmup, &r.steady_state) {
        (Some(w), Some(v)) => format!(
            "; warm-up {}{}; window {}{}",
            w.length_s.map_or("-".into(), |s| format!("{s:.0} s")),
            if w.settled == Some(false) { " (NOT settled)" } else { "" },
            v.class.map_or("not judged", |c| c.name()),
            if v.steady { "" } else { ", not steady" }
        ),
        _ => String::new(),
    };
    match t {
        Some(t) => format!(
            "{}: {} op/s, p99 {:.2} ms, p99.9 {:.2} ms, {} errors{window}",
            r.status.name(),
            crate::console::group(t.op_rate),
            t.response.p99_ms,
            t.response.p999_ms,
            t.error_total
        ),
        None => r.status.name().to_string(),
    }
}

/// Applies the file's `pin` on this machine: caplab's client on the first core and the nodes on
/// the others, for every cell that does not set its own. Returns the placement in words (None
/// without `pin`).
pub fn pin(exp: &mut Experiment) -> Result<Option<String>> {
    if !exp.file.pin {
        return Ok(None);
    }
    let Some((client, nodes)) = crate::cpus::split() else {
        anyhow::bail!(
            "{}: pin needs two cores or more, and this machine has one: drop pin",
            exp.origin
        );
    };
    let (client, nodes) = (crate::cpus::describe(&client), crate::cpus::describe(&nodes));
    for cell in exp.cells.iter_mut().flatten() {
        cell.node.cpus.get_or_insert_with(|| nodes.clone());
        cell.what.common_mut().client_cpus.get_or_insert_with(|| client.clone());
    }
    Ok(Some(format!("client on core(s) {client}, nodes on {nodes}")))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn later(yaml: &str) -> Duration {
        let opts: super::super::keys::Options = serde_norway::from_str(yaml).unwrap();
        later_warmup(&super::super::keys::parse_run(&opts).unwrap())
    }

    #[test]
    fn later_windows_warm_up_briefly_or_as_briefly_as_the_file_asks() {
        assert_eq!(later("warmup: 2s"), Duration::from_secs(2));
        assert_eq!(later("warmup: 0s"), Duration::ZERO);
        assert_eq!(later("warmup: 30s"), LATER_WARMUP);
        assert_eq!(later("warmup: auto"), LATER_WARMUP);
        assert_eq!(later("rate: 100"), LATER_WARMUP);
    }
}
