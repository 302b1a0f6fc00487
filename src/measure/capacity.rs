//! A capacity search: steps at the rates a `Plan` chooses (after a flat-out probe, for an
//! adaptive plan), each judged window by window against the service level, with a fresh node
//! or fresh data before each step when asked. capacity.json is rewritten after every step, so
//! an interrupted search keeps what it found; each step's own results are under `steps/`.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::result::{CapacityStep, RunResult, RunStatus, write_json};
use super::sinks::Show;
use super::step::{Load, Step};
use super::target::Target;
use super::workload::{Choice, Prepared};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::nodetool::JmxTarget;
use crate::console::{group, say};
use crate::engine::{LoaderSlice, Stop, Warmup};
use crate::sla::{Plan, RateResult, Sla};

pub const CAPACITY_FILE: &str = "capacity.json";

/// One step as capacity.json records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRecord {
    pub rate: f64,
    pub repeat: u32,
    pub pass: bool,
    pub status: RunStatus,
    pub achieved_rate: f64,
    /// The largest value of each objective over the step's windows.
    pub worst_ms: BTreeMap<String, Option<f64>>,
    pub windows_judged: usize,
    pub windows_failed: usize,
    /// Why the first failing window failed.
    pub reasons: Vec<String>,
    /// The step's results directory.
    pub dir: String,
    /// Its measured window's steady-state class, and whether it was steady (None: not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<crate::steady::Class>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<bool>,
}

impl StepRecord {
    fn of(rate: f64, repeat: u32, r: &RunResult, dir: &Path) -> StepRecord {
        let verdict = r.sla.as_ref();
        StepRecord {
            rate,
            repeat,
            pass: r.status == RunStatus::Completed && verdict.is_some_and(|v| v.pass),
            status: r.status,
            achieved_rate: r.achieved_rate(),
            worst_ms: verdict
                .map(|v| v.objectives.iter().map(|o| (o.objective.clone(), o.worst_ms)).collect())
                .unwrap_or_default(),
            windows_judged: verdict.map_or(0, |v| v.windows_judged),
            windows_failed: verdict.map_or(0, |v| v.windows_failed),
            reasons: verdict
                .and_then(|v| v.windows.iter().find(|w| w.judged && !w.pass))
                .map(|w| w.reasons.clone())
                .unwrap_or_default(),
            dir: dir.display().to_string(),
            window: r.steady_state.as_ref().and_then(|v| v.class),
            steady: r.steady_state.as_ref().map(|v| v.steady),
        }
    }

    /// One line: achieved rate, each objective's worst window, the verdict.
    pub fn describe(&self) -> String {
        let worst: Vec<String> = self
            .worst_ms
            .iter()
            .map(|(o, ms)| match ms {
                Some(ms) => format!("{} max {ms:.2} ms", o.split('<').next().unwrap_or(o)),
                None => format!("{o}: no data"),
            })
            .collect();
        let verdict = if self.pass {
            "PASS".to_string()
        } else {
            format!("FAIL ({})", self.reasons.join("; "))
        };
        format!(
            "{} op/s achieved, {}  {verdict}{}",
            group(self.achieved_rate),
            worst.join(", "),
            match (self.steady, self.window) {
                (Some(false), Some(c)) => format!("  (window {}: NOT STEADY)", c.name()),
                (Some(false), None) => "  (warm-up did not settle: NOT STEADY)".to_string(),
                _ => String::new(),
            }
        )
    }
}

/// What the capacity found costs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cost {
    pub price_per_node_hour: f64,
    pub nodes: usize,
    pub cluster_per_hour: f64,
    pub per_1k_ops_per_hour: f64,
    pub target_rate: Option<f64>,
    pub nodes_for_target: Option<f64>,
}

/// capacity.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityReport {
    pub caplab_version: String,
    pub command: Vec<String>,
    pub status: RunStatus,
    /// Why a search that failed failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// The signal that interrupted the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    pub workload: String,
    pub sla: Sla,
    pub mode: String,
    pub precision: Option<f64>,
    /// Each step's warm-up as asked (`auto (max 5m)`, `30s`).
    #[serde(default)]
    pub warmup: String,
    /// A timed warm-up's length (None for an automatic one: see each step's result).
    pub warmup_s: Option<f64>,
    pub measure_s: f64,
    pub repeats: u32,
    pub fresh_node: bool,
    pub probe: Option<StepRecord>,
    pub steps: Vec<StepRecord>,
    pub rates: Vec<RateResult>,
    pub capacity: Option<f64>,
    pub highest_achieved_rate: f64,
    pub bracket: Option<String>,
    pub stopped_early: Option<String>,
    pub cost: Option<Cost>,
    pub started_at: String,
    pub elapsed_s: f64,
}

impl CapacityReport {
    /// The process exit code: 0 a capacity was found, 1 none (or the cluster failed), 130
    /// interrupted.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            RunStatus::Completed if self.capacity.is_some() => 0,
            RunStatus::Completed => 1,
            RunStatus::Interrupted => super::signal::exit_code(self.interrupted_by.as_deref()),
            s => s.exit_code(),
        }
    }

    pub fn load(dir: &Path) -> Result<CapacityReport> {
        let file = dir.join(CAPACITY_FILE);
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a capacity search caplab can read", file.display()))
    }

    /// The end-of-search text: E3's table, the capacity, the highest throughput, the cost.
    pub fn render(&self) -> String {
        let objectives: Vec<String> = self.sla.objectives.iter().map(|o| o.text()).collect();
        let mut s = format!("Capacity search, SLA {} ({})\n", self.sla.text(), self.mode);
        s.push_str(&format!("{:>12}  {:>6}  {:>12}", "rate op/s", "repeat", "achieved"));
        for o in &self.sla.objectives {
            s.push_str(&format!("  {:>14}", format!("{} max", o.label)));
        }
        s.push_str("  verdict\n");
        for st in &self.steps {
            s.push_str(&format!(
                "{:>12}  {:>6}  {:>12}",
                group(st.rate),
                st.repeat,
                group(st.achieved_rate)
            ));
            for o in &objectives {
                match st.worst_ms.get(o).copied().flatten() {
                    Some(ms) => s.push_str(&format!("  {:>11.2} ms", ms)),
                    None => s.push_str(&format!("  {:>14}", "-")),
                }
            }
            s.push_str(if st.pass { "  pass" } else { "  FAIL" });
            if st.steady == Some(false) {
                s.push_str(&format!(
                    " (not steady: {})",
                    st.window.map_or("warm-up did not settle", |c| c.name())
                ));
            }
            s.push('\n');
        }
        match (self.status, self.capacity) {
            (RunStatus::Running | RunStatus::Interrupted | RunStatus::Failed, _) => s.push_str(&format!(
                "Capacity: not decided: the search {} after {} step(s)\n",
                match (self.status, &self.interrupted_by) {
                    (RunStatus::Failed, _) => "failed".to_string(),
                    (_, Some(sig)) => format!("was interrupted ({sig})"),
                    _ => "did not finish".to_string(),
                },
                self.steps.len() + usize::from(self.probe.is_some())
            )),
            (_, Some(c)) => s.push_str(&format!(
                "Capacity: {} op/s (the highest rate that passed every repeat)\n",
                group(c)
            )),
            (_, None) => s.push_str("Capacity: none found: no rate tried met the SLA\n"),
        }
        if let Some(why) = &self.stopped_early {
            s.push_str(&format!("Note: {why}\n"));
        }
        s.push_str(&format!(
            "Highest throughput achieved (any SLA): {} op/s\n",
            group(self.highest_achieved_rate)
        ));
        if let Some(c) = &self.cost {
            s.push_str(&format!(
                "Cost: {} nodes x {}/h = {:.3}/h; {:.4}/h per 1k op/s of capacity",
                c.nodes, c.price_per_node_hour, c.cluster_per_hour, c.per_1k_ops_per_hour
            ));
            if let (Some(t), Some(n)) = (c.target_rate, c.nodes_for_target) {
                s.push_str(&format!("; {} op/s needs {n:.0} nodes", group(t)));
            }
            s.push('\n');
        }
        s.push_str(&format!("Search took {:.0}s", self.elapsed_s));
        s
    }
}

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
    pub profile: Option<Arc<crate::profile::Profiler>>,
    pub pricing: Option<Pricing>,
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
    ) -> Result<CapacityReport> {
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
        let mut report = CapacityReport {
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
            probe: None,
            steps: Vec::new(),
            rates: Vec::new(),
            capacity: None,
            highest_achieved_rate: 0.0,
            bracket: None,
            stopped_early: None,
            cost: None,
            started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            elapsed_s: 0.0,
        };
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

        if plan.wants_probe() {
            say("Probe: flat out, to bound the search and measure the highest throughput");
            let (result, record) = bench.step(0.0, 1, "probe").await?;
            say(&format!("Probe: {} op/s flat out", group(record.achieved_rate)));
            plan.probed(record.achieved_rate);
            report.probe = Some(record);
            if ended(&result, &mut report) {
                save(&mut report, &cfg.out, began)?;
                return Ok(report);
            }
            save(&mut report, &cfg.out, began)?;
        }

        while let Some(trial) = plan.next_trial() {
            if trial.repeat == 1 {
                say(&format!("Trying {} op/s", group(trial.rate)));
            }
            let label = format!("{}-r{}", trial.rate as u64, trial.repeat);
            let (result, record) = bench.step(trial.rate, trial.repeat, &label).await?;
            say(&format!(
                "  {} op/s repeat {}/{}: {}",
                group(trial.rate),
                trial.repeat,
                plan.repeats(),
                record.describe()
            ));
            let pass = record.pass;
            report.steps.push(record);
            if ended(&result, &mut report) {
                save(&mut report, &cfg.out, began)?;
                return Ok(report);
            }
            if plan.record(pass).is_some() {
                report.rates = plan.rates().to_vec();
                if let Some(b) = plan.bracket() {
                    say(&format!("  bracket: {b}"));
                    report.bracket = Some(b);
                }
            }
            save(&mut report, &cfg.out, began)?;
        }

        report.capacity = plan.capacity();
        report.stopped_early = plan.caveat();
        report.status = RunStatus::Completed;
        if let (Some(p), Some(cap)) = (cfg.pricing, report.capacity)
            && p.nodes > 0
        {
            let per_hour = p.price * p.nodes as f64;
            report.cost = Some(Cost {
                price_per_node_hour: p.price,
                nodes: p.nodes,
                cluster_per_hour: per_hour,
                per_1k_ops_per_hour: per_hour / (cap / 1000.0),
                target_rate: p.target,
                nodes_for_target: p.target.map(|t| (t / (cap / p.nodes as f64)).ceil()),
            });
        }
        save(&mut report, &cfg.out, began)?;
        Ok(report)
    }
}

/// Records a step that ended the search (interrupted, or the cluster failed); false for one
/// that completed.
fn ended(step: &RunResult, report: &mut CapacityReport) -> bool {
    if step.status == RunStatus::Completed {
        return false;
    }
    report.status = step.status;
    report.end_reason = step.end_reason.clone();
    report.interrupted_by = step.interrupted_by.clone();
    true
}

fn save(report: &mut CapacityReport, out: &Path, began: Instant) -> Result<()> {
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
    async fn step(&mut self, rate: f64, repeat: u32, label: &str) -> Result<(RunResult, StepRecord)> {
        let engine = self.engine(rate);
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
            profile: self.cfg.profile.clone(),
        };
        let result = self.prepared.run(&step, &self.target.site, self.stop.clone()).await?;
        let record = StepRecord::of(rate, repeat, &result, &dir);
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
