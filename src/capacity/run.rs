//! A capacity search: steps at the rates a `Plan` chooses (after a flat-out probe, for an
//! adaptive plan), each judged window by window against the service level, with a fresh node
//! or fresh data before each step when asked. capacity.json is rewritten after every step, so
//! an interrupted search keeps what it found; each step's own results are under `steps/`.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::plan::Plan;
use super::result::{CapacityResult, Cost, SearchStep};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::nodetool::JmxTarget;
use crate::console::{group, say};
use crate::engine::{LoaderSlice, Stop, Warmup};
use crate::faults::Injector;
use crate::files::write_json;
use crate::measure::load::Load;
use crate::measure::result::{CAPACITY_FILE, CapacityStep, RunResult, RunStatus};
use crate::measure::{Choice, Prepared, Show, Step, Target};
use crate::sla::Sla;

/// A price to put on the capacity found.
#[derive(Debug, Clone, Copy)]
pub struct Pricing {
    /// Per node and hour.
    pub price: f64,
    pub nodes: usize,
    /// A load to size for.
    pub target: Option<f64>,
}

/// A capacity search's settings.
pub struct Capacity {
    pub sla: Sla,
    pub load: Load,
    /// Before each step's measured window.
    pub warmup: Warmup,
    /// Each step's measured window.
    pub measure: Duration,
    /// How long the capacity found is held to confirm it (zero: not confirmed).
    pub confirm: Duration,
    /// Wipe and restart the local nodes before each step.
    pub fresh_node: bool,
    /// Populate before every step (otherwise once, before the first).
    pub populate_each: bool,
    /// Never populate (the data is there).
    pub no_populate: bool,
    pub loader: LoaderSlice,
    /// No per-second progress lines.
    pub quiet: bool,
    pub out: PathBuf,
    pub jmx: Vec<JmxTarget>,
    pub command: Vec<String>,
    /// Profile the local nodes in each step's measured window.
    pub server_profile: Option<Arc<crate::server_profile::Profiler>>,
    /// Read every node's thread pools over CQL in each step.
    pub pools: bool,
    pub pricing: Option<Pricing>,
    /// The fault schedule every step's measured window carries (the probe's too).
    pub faults: Option<Arc<Injector>>,
    /// The user's labels, kept in capacity.json and every step's result.json.
    pub labels: std::collections::BTreeMap<String, String>,
    /// Read back each step's acknowledged writes (`--validate`), into its result.json.
    pub validate: Option<crate::readback::ValidateOptions>,
    /// The live metrics every step adds to.
    pub live: Option<crate::live::Feed>,
    /// `--curve`: the rule the steps' knee is named by.
    pub knee: Option<crate::measure::phases::KneeRule>,
}

/// What a step needs besides its rate.
struct Bench<'a> {
    home: &'a Home,
    cfg: &'a Capacity,
    choice: &'a Choice,
    target: Target,
    prepared: Prepared,
    stop: Arc<Stop>,
    steps_run: usize,
}

impl Capacity {
    /// Runs the search `plan` on `target` with `choice`'s workload; the report is on disk
    /// whatever happens, and returned unless it could not be written.
    pub async fn run(
        &self,
        mut plan: Plan,
        home: &Home,
        target: Target,
        choice: &Choice,
        stop: Arc<Stop>,
    ) -> Result<CapacityResult> {
        let began = Instant::now();
        let cfg = self;
        let prepared = Prepared::new(&target, choice).await?;
        // Created once the workload is accepted: a search refused before it starts leaves no
        // empty directory behind.
        std::fs::create_dir_all(&cfg.out)
            .with_context(|| format!("cannot create the results directory {}", cfg.out.display()))?;
        let mut bench = Bench {
            home,
            cfg,
            choice,
            target,
            prepared,
            stop,
            steps_run: 0,
        };
        if !cfg.fresh_node && !cfg.populate_each && !cfg.no_populate {
            let ecfg = bench.engine(0.0);
            bench
                .prepared
                .populate(&ecfg, cfg.loader, cfg.quiet, &bench.stop)
                .await?;
        }
        let mut report = self.new_report(&plan, choice);
        save(&mut report, &cfg.out, began)?;
        say(&format!(
            "Capacity of {} within SLA {}: {}, {} warm-up + {} measured per step, {} repeat(s); results in {}",
            choice.name(),
            cfg.sla.text(),
            plan.describe(),
            cfg.warmup.describe(),
            humantime::format_duration(cfg.measure),
            plan.repeats(),
            cfg.out.display()
        ));
        let confirm = cfg.confirm;
        search(
            &mut plan,
            &mut report,
            &cfg.out,
            began,
            confirm,
            async |rate, repeat, label, confirming| {
                let measure = if confirming { confirm } else { cfg.measure };
                let (result, record) = bench.step(rate, repeat, &label, measure).await?;
                Ok((StepEnd::of(&result), record))
            },
        )
        .await?;
        if let Some(rule) = cfg.knee {
            report.find_knee(rule);
        }
        if report.status == RunStatus::Completed {
            report.cost = cfg.pricing.zip(report.held()).and_then(|(p, cap)| cost(p, cap));
        }
        save(&mut report, &cfg.out, began)?;
        Ok(report)
    }

    /// The report of a search about to start: its settings, nothing measured.
    fn new_report(&self, plan: &Plan, choice: &Choice) -> CapacityResult {
        let cfg = self;
        CapacityResult {
            caplab_version: env!("CARGO_PKG_VERSION").to_string(),
            command: cfg.command.clone(),
            status: RunStatus::Running,
            end_reason: None,
            interrupted_by: None,
            workload: choice.name(),
            sla: cfg.sla.clone(),
            mode: plan.mode().to_string(),
            precision: plan.precision(),
            warmup: cfg.warmup.describe(),
            warmup_s: match cfg.warmup {
                Warmup::Time(d) => Some(d.as_secs_f64()),
                Warmup::None => Some(0.0),
                _ => None,
            },
            measure_s: cfg.measure.as_secs_f64(),
            repeats: plan.repeats(),
            fresh_node: cfg.fresh_node,
            faults: cfg
                .faults
                .iter()
                .flat_map(|f| f.faults())
                .map(|f| f.text.clone())
                .collect(),
            probe: None,
            steps: Vec::new(),
            rates: Vec::new(),
            capacity: None,
            at_least: false,
            confirm_s: None,
            confirmation: Vec::new(),
            confirmed: None,
            highest_achieved_rate: 0.0,
            bracket: None,
            stopped_early: None,
            cost: None,
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            elapsed_s: 0.0,
            labels: cfg.labels.clone(),
            curve: cfg.knee.is_some(),
            knee: None,
            replay_rate: match choice {
                Choice::Replay(trace, replay) => replay.captured_rate(trace).ok(),
                _ => None,
            },
        }
    }
}

/// How a step ended, as far as the search is concerned.
struct StepEnd {
    status: RunStatus,
    end_reason: Option<String>,
    interrupted_by: Option<String>,
}

impl StepEnd {
    fn of(r: &RunResult) -> StepEnd {
        StepEnd {
            status: r.status,
            end_reason: r.end_reason.clone(),
            interrupted_by: r.interrupted_by.clone(),
        }
    }
}

/// The search itself: the flat-out probe when the plan wants one, then every step the plan
/// asks for, each run by `step` (rate, 0 flat out; repeat; label; whether it confirms) and
/// recorded in `report`, which is saved after each, until the plan has its answer (status
/// completed, with the capacity) or a step ends the search (interrupted, or the cluster failed:
/// its status). With a `confirm` window, the capacity found is then held that long
/// (`confirm_capacity`).
async fn search(
    plan: &mut Plan,
    report: &mut CapacityResult,
    out: &Path,
    began: Instant,
    confirm: Duration,
    mut step: impl AsyncFnMut(f64, u32, String, bool) -> Result<(StepEnd, SearchStep)>,
) -> Result<()> {
    if plan.wants_probe() {
        say("Probe: flat out, to bound the search and measure the highest throughput");
        let (end, record) = step(0.0, 1, "probe".into(), false).await?;
        say(&format!("Probe: {} op/s flat out", group(record.achieved_rate)));
        plan.probed(record.achieved_rate);
        report.probe = Some(record);
        let over = ended(&end, report);
        save(report, out, began)?;
        if over {
            return Ok(());
        }
    }
    while let Some(next) = plan.next_step() {
        if next.repeat == 1 {
            say(&format!("Trying {} op/s", group(next.rate)));
        }
        let label = format!("{}-r{}", next.rate as u64, next.repeat);
        let (end, record) = step(next.rate, next.repeat, label, false).await?;
        say(&format!(
            "  {} op/s repeat {}/{}: {}",
            group(next.rate),
            next.repeat,
            plan.repeats(),
            record.describe()
        ));
        let pass = record.pass;
        report.steps.push(record);
        if ended(&end, report) {
            return save(report, out, began);
        }
        if plan.record(pass).is_some() {
            report.rates = plan.rates().to_vec();
            if let Some(b) = plan.bracket() {
                say(&format!("  bracket: {b}"));
                report.bracket = Some(b);
            }
        }
        save(report, out, began)?;
    }
    report.capacity = plan.capacity();
    report.at_least = plan.capacity_is_a_lower_bound();
    report.stopped_early = plan.caveat();
    report.mark_client_bound();
    if !confirm.is_zero() && report.capacity.is_some() {
        report.confirm_s = Some(confirm.as_secs_f64());
        if !confirm_capacity(plan, report, out, began, &mut step).await? {
            return Ok(());
        }
    }
    report.status = RunStatus::Completed;
    save(report, out, began)
}

/// Holds the capacity found for the confirmation window; when it does not hold, steps down
/// through the rates that passed below it (at most `CONFIRM_TRIES` in all) until one does.
/// `report.confirmed` is the rate that held (None: none did). False when a step ended the search.
async fn confirm_capacity(
    plan: &Plan,
    report: &mut CapacityResult,
    out: &Path,
    began: Instant,
    step: &mut impl AsyncFnMut(f64, u32, String, bool) -> Result<(StepEnd, SearchStep)>,
) -> Result<bool> {
    let found = report.capacity.expect("confirmed only when found");
    let mut candidates: Vec<f64> = plan
        .rates()
        .iter()
        .filter(|r| r.pass && r.rate <= found)
        .map(|r| r.rate)
        .collect();
    candidates.sort_by(|a, b| b.total_cmp(a));
    candidates.dedup();
    for rate in candidates.into_iter().take(CONFIRM_TRIES) {
        say(&format!(
            "Confirming {} op/s for {}",
            group(rate),
            humantime::format_duration(Duration::from_secs_f64(report.confirm_s.unwrap_or(0.0)))
        ));
        let (end, record) = step(rate, 1, format!("{}-confirm", rate as u64), true).await?;
        say(&format!("  {} op/s held: {}", group(rate), record.describe()));
        let pass = record.pass;
        report.confirmation.push(record);
        if ended(&end, report) {
            save(report, out, began)?;
            return Ok(false);
        }
        save(report, out, began)?;
        if pass {
            report.confirmed = Some(rate);
            return Ok(true);
        }
    }
    Ok(true)
}

/// Confirmation steps at most: the capacity found and the next two rates that passed below it.
const CONFIRM_TRIES: usize = 3;

/// What the capacity found costs at `p`'s price, and how many nodes `p`'s target needs.
fn cost(p: Pricing, capacity: f64) -> Option<Cost> {
    if p.nodes == 0 || capacity <= 0.0 {
        return None;
    }
    let per_hour = p.price * p.nodes as f64;
    Some(Cost {
        price_per_node_hour: p.price,
        nodes: p.nodes,
        cluster_per_hour: per_hour,
        per_1k_ops_per_hour: per_hour / (capacity / 1000.0),
        target_rate: p.target,
        nodes_for_target: p.target.map(|t| (t / (capacity / p.nodes as f64)).ceil()),
    })
}

/// Records a step that ended the search (interrupted, or the cluster failed); false for one
/// that completed.
fn ended(step: &StepEnd, report: &mut CapacityResult) -> bool {
    if step.status == RunStatus::Completed {
        return false;
    }
    report.status = step.status;
    report.end_reason = step.end_reason.clone();
    report.interrupted_by = step.interrupted_by.clone();
    true
}

fn save(report: &mut CapacityResult, out: &Path, began: Instant) -> Result<()> {
    report.elapsed_s = began.elapsed().as_secs_f64();
    report.highest_achieved_rate = report
        .steps
        .iter()
        .chain(&report.probe)
        .map(|s| s.achieved_rate)
        .fold(0.0, f64::max);
    write_json(&out.join(CAPACITY_FILE), report)
}

impl Bench<'_> {
    fn engine(&self, rate: f64) -> crate::engine::EngineConfig {
        self.cfg
            .load
            .engine(rate, Some(self.cfg.measure), None, self.cfg.warmup)
    }

    /// Runs one step at `rate` (0: flat out) and records it.
    async fn step(
        &mut self,
        rate: f64,
        repeat: u32,
        label: &str,
        measure: Duration,
    ) -> Result<(RunResult, SearchStep)> {
        let mut engine = self.cfg.load.engine(rate, Some(measure), None, self.cfg.warmup);
        // A replay's steps follow its trace's own timing, looping, at the speed that gives the
        // rate; its probe (flat out) sends the trace in order as fast as it can.
        if let Choice::Replay(trace, replay) = self.choice
            && rate > 0.0
        {
            let speed = rate / replay.captured_rate(trace)?;
            engine.shape = Some(Arc::new(replay.rate(trace, speed, true)?));
        }
        if self.cfg.fresh_node {
            self.restart_fresh().await?;
        } else if self.cfg.populate_each && !self.cfg.no_populate {
            self.prepared
                .populate(&engine, self.cfg.loader, true, &self.stop)
                .await?;
        }
        self.steps_run += 1;
        let dir = self
            .cfg
            .out
            .join("steps")
            .join(format!("{:02}-{label}", self.steps_run));
        let step = Step {
            engine,
            threads: self.cfg.load.threads,
            out: dir.clone(),
            loader: self.cfg.loader,
            show: Show {
                progress: !self.cfg.quiet,
                windows: true,
            },
            sla: Some(self.cfg.sla.clone()),
            capacity_step: Some(CapacityStep { rate, repeat }),
            jmx: self.cfg.jmx.clone(),
            command: self.cfg.command.clone(),
            server_profile: self.cfg.server_profile.clone(),
            start_at: None,
            meet: None,
            pools: self.cfg.pools,
            faults: self.cfg.faults.as_ref().map(|f| f.for_step()),
            labels: self.cfg.labels.clone(),
            validate: self.cfg.validate,
            live: self.cfg.live.clone(),
            knee: Default::default(),
        };
        let result = self.prepared.run(&step, &self.target.site, self.stop.clone()).await?;
        // Named from the search's directory, so the record still finds it when the search was
        // given a relative directory, or was moved.
        let record = SearchStep::of(rate, repeat, &result, dir.strip_prefix(&self.cfg.out).unwrap_or(&dir));
        Ok((result, record))
    }

    /// Stops, wipes and restarts the local nodes, then recreates the schema (and data).
    async fn restart_fresh(&mut self) -> Result<()> {
        let nodes = self.target.site.local_nodes.clone();
        let spec = nodes.first().context("--fresh-node needs local nodes")?.spec.clone();
        say("Fresh node: stopping, wiping and restarting the local node(s)");
        let mut tell = |m: &str| say(m);
        local::stop(
            &nodes,
            StopOptions {
                drain: false,
                timeout: Duration::from_secs(30),
            },
            &mut tell,
        )?;
        // Their state files now say stopped.
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        local::wipe(&local::select(self.home, &names)?, true, &mut tell)?;
        let started = local::start(self.home, &spec, StartOptions::default(), &mut tell)?;
        self.target = Target::connect(self.target.site.client.clone(), started.nodes).await?;
        self.prepared = Prepared::new(&self.target, self.choice).await?;
        if !self.cfg.no_populate {
            let ecfg = self.engine(0.0);
            self.prepared.populate(&ecfg, self.cfg.loader, true, &self.stop).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report as a search starts it (settings elided), and a directory for capacity.json.
    fn start() -> (CapacityResult, tempfile::TempDir) {
        let json = serde_json::json!({
            "caplab_version": "x", "command": [], "status": "running", "workload": "w",
            "sla": {"objectives": [], "min_rate_share": 0.97, "error_budget": 0.001},
            "mode": "adaptive", "precision": 0.1, "warmup_s": null, "measure_s": 1.0, "repeats": 1,
            "fresh_node": false, "probe": null, "steps": [], "rates": [], "capacity": null,
            "highest_achieved_rate": 0.0, "bracket": null, "stopped_early": null, "cost": null,
            "started_at": "", "elapsed_s": 0.0
        });
        (serde_json::from_value(json).unwrap(), tempfile::tempdir().unwrap())
    }

    /// An adaptive search to 10 % with the probe, one repeat, no confirmation, each step run by
    /// `step`: the report as it ended, and the directory holding its capacity.json.
    async fn adaptive(
        step: impl AsyncFnMut(f64, u32, String, bool) -> Result<(StepEnd, SearchStep)>,
    ) -> (CapacityResult, tempfile::TempDir) {
        let (mut report, out) = start();
        let mut plan = Plan::adaptive(None, 0.1, true, 1);
        search(&mut plan, &mut report, out.path(), Instant::now(), Duration::ZERO, step)
            .await
            .unwrap();
        (report, out)
    }

    /// A server that serves at most 10,000 op/s and meets the SLA up to 6,000.
    fn server(rate: f64, repeat: u32, status: RunStatus) -> (StepEnd, SearchStep) {
        let achieved = if rate == 0.0 { 10_000.0 } else { rate.min(10_000.0) };
        let pass = rate > 0.0 && rate <= 6_000.0 && status == RunStatus::Completed;
        let end = StepEnd {
            status,
            end_reason: None,
            interrupted_by: (status == RunStatus::Interrupted).then(|| "SIGINT".into()),
        };
        let step = SearchStep {
            rate,
            repeat,
            pass,
            status,
            achieved_rate: achieved,
            worst_ms: Default::default(),
            windows_judged: 1,
            windows_failed: usize::from(!pass),
            reasons: Vec::new(),
            dir: format!("steps/{rate}"),
            steady_class: None,
            steady: None,
            availability: None,
            recovery_s: None,
            recovered: None,
            response: None,
            client_bound: None,
            machine_bound: None,
        };
        (end, step)
    }

    #[tokio::test]
    async fn the_probe_bounds_the_search_and_the_capacity_is_the_highest_rate_that_passed() {
        let mut rates = Vec::new();
        let (report, out) = adaptive(async |rate, repeat, _, _| {
            rates.push(rate);
            Ok(server(rate, repeat, RunStatus::Completed))
        })
        .await;
        assert_eq!(rates[0], 0.0, "the probe first, flat out");
        assert_eq!(rates[1], 5_000.0, "then half the probe's throughput");
        assert!(rates.iter().all(|&r| r <= 10_000.0), "never above the probe: {rates:?}");
        let cap = report.capacity.expect("a capacity");
        assert!(
            (6_000.0 / 1.1..=6_000.0).contains(&cap),
            "{cap} within 10 % under 6,000: {rates:?}"
        );
        assert_eq!(report.status, RunStatus::Completed);
        assert_eq!(report.steps.len(), rates.len() - 1);
        assert_eq!(report.highest_achieved_rate, 10_000.0);
        // What is on disk is what was returned.
        let saved = CapacityResult::load(out.path()).unwrap();
        assert_eq!(
            (saved.capacity, saved.steps.len()),
            (report.capacity, report.steps.len())
        );
    }

    /// A client that cannot send more than 5,500 op/s on time, before a server good for 6,000:
    /// every step above 5,500 fails because of the client, so the capacity found is said to be
    /// a lower bound, with the client named, never the client's limit as the cluster's.
    #[tokio::test]
    async fn a_capacity_under_a_client_bound_failure_is_a_lower_bound() {
        let (report, _out) = adaptive(async |rate, repeat, _, _| {
            let (end, mut step) = server(rate, repeat, RunStatus::Completed);
            if rate > 5_500.0 {
                step.pass = false;
                step.client_bound = Some("3.1 % sent late by a free worker".into());
            }
            Ok((end, step))
        })
        .await;
        let cap = report.capacity.expect("the highest rate that passed");
        assert!(cap <= 5_500.0 && report.at_least, "{cap}");
        assert_eq!(report.status, RunStatus::Completed);
        let note = report.stopped_early.as_deref().unwrap();
        assert!(
            note.contains("the client was the limit at") && note.contains("3.1 %"),
            "{note}"
        );
        assert!(
            report.render().contains("Note: the client was the limit"),
            "{}",
            report.render()
        );
        // The machine the limit (client and node on the same saturated cores): a failure all the
        // same, so the capacity is no lower bound, and the note says whose limit it was.
        let (report, _out) = adaptive(async |rate, repeat, _, _| {
            let (end, mut step) = server(rate, repeat, RunStatus::Completed);
            if rate > 5_500.0 {
                step.pass = false;
                step.machine_bound = Some("client and nodes shared cores 0-1".into());
            }
            Ok((end, step))
        })
        .await;
        assert!(report.capacity.is_some_and(|c| c <= 5_500.0) && !report.at_least);
        let note = report.stopped_early.as_deref().unwrap();
        assert!(
            note.contains("the machine was the limit at") && note.contains("this machine's"),
            "{note}"
        );
        // A server-bound failure above the capacity leaves it as found.
        let (report, _out) = adaptive(async |rate, repeat, _, _| Ok(server(rate, repeat, RunStatus::Completed))).await;
        assert!(
            !report.at_least && report.stopped_early.is_none(),
            "{:?}",
            report.stopped_early
        );
    }

    #[tokio::test]
    async fn a_step_that_ends_the_search_leaves_its_status_and_no_capacity() {
        // Interrupted during the first rate after the probe.
        let mut n = 0;
        let (report, out) = adaptive(async |rate, repeat, _, _| {
            n += 1;
            let status = if n == 2 {
                RunStatus::Interrupted
            } else {
                RunStatus::Completed
            };
            Ok(server(rate, repeat, status))
        })
        .await;
        assert_eq!(n, 2, "nothing runs after the interrupted step");
        assert_eq!(
            (report.status, report.interrupted_by.as_deref(), report.capacity),
            (RunStatus::Interrupted, Some("SIGINT"), None)
        );
        assert_eq!(report.steps.len(), 1);
        assert_eq!(CapacityResult::load(out.path()).unwrap().status, RunStatus::Interrupted);

        // A probe that fails ends it before any rate.
        let (report, _out) = adaptive(async |rate, repeat, _, _| Ok(server(rate, repeat, RunStatus::Failed))).await;
        assert_eq!((report.status, report.steps.len()), (RunStatus::Failed, 0));
        assert!(report.probe.is_some());
    }

    #[tokio::test]
    async fn the_capacity_found_is_confirmed_or_stepped_down_until_a_rate_holds() {
        // A server that meets the SLA up to 6,000 op/s in 30 s steps, but holds only 4,500 for
        // the two-minute confirmation (a once-a-minute pause a short step can miss).
        let (mut report, out) = start();
        let mut plan = Plan::sweep(vec![2_000.0, 3_000.0, 4_000.0, 5_000.0, 6_000.0, 7_000.0], 1);
        let mut confirmed_at = Vec::new();
        search(
            &mut plan,
            &mut report,
            out.path(),
            Instant::now(),
            Duration::from_secs(120),
            async |rate, repeat, _, confirming| {
                let (end, mut step) = server(rate, repeat, RunStatus::Completed);
                if confirming {
                    confirmed_at.push(rate);
                    step.pass = rate <= 4_500.0;
                }
                Ok((end, step))
            },
        )
        .await
        .unwrap();
        assert_eq!(
            confirmed_at,
            [6_000.0, 5_000.0, 4_000.0],
            "down through the rates that passed"
        );
        assert_eq!(
            (report.capacity, report.confirmed, report.held()),
            (Some(6_000.0), Some(4_000.0), Some(4_000.0))
        );
        assert_eq!(report.confirmation.len(), 3);
        assert!(!report.at_least, "7,000 failed above it");
        assert_eq!(
            report.capacity_text(),
            "4,000 op/s (held for 120 s; the search found 6,000 op/s, which did not hold)"
        );
        assert!(report.render().contains("pass (confirmation)"), "{}", report.render());
        assert_eq!(report.exit_code(), 0);

        // A sweep whose highest rate passed found only a lower bound.
        let (mut report, out) = start();
        let mut plan = Plan::sweep(vec![500.0, 1_000.0], 1);
        search(
            &mut plan,
            &mut report,
            out.path(),
            Instant::now(),
            Duration::from_secs(120),
            async |rate, repeat, _, _| Ok(server(rate, repeat, RunStatus::Completed)),
        )
        .await
        .unwrap();
        assert!(report.at_least);
        assert_eq!(report.capacity_text(), "at least 1,000 op/s, confirmed: held for 120 s");
        assert!(
            report.render().contains("Capacity: at least 1,000 op/s"),
            "{}",
            report.render()
        );
    }

    #[test]
    fn the_cost_is_per_thousand_operations_per_second_of_capacity() {
        let p = Pricing {
            price: 0.576,
            nodes: 3,
            target: Some(10_000.0),
        };
        let c = cost(p, 1_000.0).unwrap();
        assert!((c.cluster_per_hour - 1.728).abs() < 1e-9 && (c.per_1k_ops_per_hour - 1.728).abs() < 1e-9);
        assert_eq!(c.nodes_for_target, Some(30.0), "10k op/s at 333 op/s per node");
        assert!(cost(Pricing { nodes: 0, ..p }, 1_000.0).is_none());
        assert!(cost(p, 0.0).is_none());
    }
}
