//! `caplab capacity`: the highest rate a cluster carries within a service level.
//!
//! Each step runs the workload at one rate (warm-up, then a measured window) and judges every
//! window against the SLA; a rate passes only when every repeat passes. The adaptive search
//! first measures the flat-out throughput (a ceiling no SLA rate can exceed), then narrows a
//! bracket between the highest passing and lowest failing rate until it is within the
//! precision; `--rates` sweeps a fixed list instead, as E3 did. capacity.json is rewritten
//! after every step, so an interrupted search keeps what it found.

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use super::args::{DriveArgs, parse_rate};
use super::drive::{
    Chosen, Prepared, Step, StepOutcome, Target, default_out, jmx_targets, stop_on_ctrl_c, targets, write_json,
};
use super::say;
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::NodeState;
use crate::cluster::nodetool::JmxTarget;
use crate::engine::{EndReason, EngineConfig, Warmup};
use crate::metrics::summary::group;
use crate::sla::{Search, Sla, parse_rates, parse_share};

#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// Sweep these rates instead of searching: from:to:step (20k:120k:10k) or a list (5k,10k,20k).
    #[arg(long, value_name = "RATES")]
    pub rates: Option<String>,
    /// First rate the adaptive search tries (default: half the flat-out throughput).
    #[arg(long, value_parser = parse_rate)]
    pub start: Option<f64>,
    /// The search stops when the failing rate is within this share above the passing one.
    #[arg(long, value_parser = parse_share, default_value = "5%")]
    pub precision: f64,
    /// Warm-up before each step's measured window.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub warmup: Duration,
    /// Measured window of each step.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub measure: Duration,
    /// Runs per rate; a rate passes only if every repeat passes (later repeats are skipped
    /// once one fails).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: u32,
    /// Do not measure the flat-out throughput first (the search then grows from --start).
    #[arg(long)]
    pub no_probe: bool,
    /// Wipe and restart the local node(s) before each step, as E3 did (profiles are populated
    /// again unless --no-populate).
    #[arg(long)]
    pub fresh_node: bool,
    /// Run the profile's populate phase before each step (default: once, before the first).
    #[arg(long)]
    pub populate: bool,
    /// Price of one node per hour (e.g. 0.576/h): prints the cost per 1k op/s of capacity.
    #[arg(long, value_parser = parse_cost)]
    pub cost: Option<f64>,
    /// Nodes in the cluster, for --cost and --target (default: the local nodes caplab runs).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// A load to size for: prints how many nodes it needs at the capacity found.
    #[arg(long, value_parser = parse_rate)]
    pub target: Option<f64>,
    #[command(flatten)]
    pub common: DriveArgs,
}

fn parse_cost(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/h").trim_end_matches("/hour");
    match t.trim().trim_start_matches('$').parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "'{s}' is not a price: write the price of one node per hour, e.g. 0.576/h"
        )),
    }
}

/// One step as capacity.json records it.
#[derive(Debug, Clone, Serialize)]
struct StepRecord {
    rate: f64,
    repeat: u32,
    pass: bool,
    status: String,
    achieved_rate: f64,
    /// The largest value of each objective over the step's windows.
    worst_ms: BTreeMap<String, Option<f64>>,
    windows_judged: usize,
    windows_failed: usize,
    /// Why the first failing window failed.
    reasons: Vec<String>,
    dir: String,
}

#[derive(Debug, Clone, Serialize)]
struct RateRecord {
    rate: f64,
    pass: bool,
    repeats_run: u32,
}

#[derive(Debug, Serialize)]
struct Report {
    caplab_version: &'static str,
    command: Vec<String>,
    status: String,
    workload: String,
    sla: Sla,
    mode: &'static str,
    precision: Option<f64>,
    warmup_s: f64,
    measure_s: f64,
    repeats: u32,
    fresh_node: bool,
    probe: Option<StepRecord>,
    steps: Vec<StepRecord>,
    rates: Vec<RateRecord>,
    capacity: Option<f64>,
    highest_achieved_rate: f64,
    bracket: Option<String>,
    stopped_early: Option<String>,
    cost: Option<serde_json::Value>,
    started_at: String,
    elapsed_s: f64,
}

impl Report {
    fn save(&mut self, out: &Path, began: Instant) -> Result<()> {
        self.elapsed_s = began.elapsed().as_secs_f64();
        self.highest_achieved_rate = self
            .steps
            .iter()
            .chain(&self.probe)
            .map(|s| s.achieved_rate)
            .fold(0.0, f64::max);
        write_json(&out.join("capacity.json"), &serde_json::to_value(&*self)?)
    }
}

/// Everything a step needs besides its rate.
struct Bench<'a> {
    home: &'a Home,
    args: &'a CapacityArgs,
    chosen: &'a Chosen,
    sla: &'a Sla,
    out: &'a Path,
    target: Target,
    prepared: Prepared,
    stop: Arc<AtomicBool>,
    steps_run: usize,
    jmx: Vec<JmxTarget>,
}

impl Bench<'_> {
    fn engine(&self, rate: f64) -> EngineConfig {
        EngineConfig {
            rate,
            concurrency: self.args.common.load.concurrency as usize,
            duration: Some(self.args.measure),
            ops: None,
            warmup: if self.args.warmup.is_zero() {
                Warmup::None
            } else {
                Warmup::Time(self.args.warmup)
            },
            interval: Duration::from_secs(1),
            give_up_after: self.args.common.load.give_up_after,
            drain_timeout: self.args.common.conn.timeout + Duration::from_secs(2),
            shards: 4 * self.args.common.load.threads as usize,
        }
    }

    /// Runs one step at `rate` (0: flat out) and records it.
    async fn step(&mut self, rate: f64, repeat: u32, label: &str) -> Result<(StepOutcome, StepRecord)> {
        let ecfg = self.engine(rate);
        if self.args.fresh_node {
            self.restart_fresh().await?;
        } else if self.args.populate && !self.args.common.workload.no_populate {
            self.prepared
                .populate(&ecfg, self.args.common.workload.loader, true)
                .await?;
        }
        self.steps_run += 1;
        let dir = self.out.join("steps").join(format!("{:02}-{label}", self.steps_run));
        let step = Step {
            ecfg,
            threads: self.args.common.load.threads,
            out: dir.clone(),
            loader: self.args.common.workload.loader,
            quiet: self.args.common.quiet,
            show_windows: true,
            sla: Some(self.sla.clone()),
            config: json!({"capacity_step": {"rate": rate, "repeat": repeat}}),
            print_summary: false,
            jmx: self.jmx.clone(),
        };
        let outcome = self.prepared.drive(&self.target, &step, self.stop.clone()).await?;
        let verdict = outcome.sla.as_ref().expect("steps are judged");
        let record = StepRecord {
            rate,
            repeat,
            pass: outcome.reason == EndReason::Completed && verdict.pass,
            status: format!("{:?}", outcome.reason),
            achieved_rate: outcome.achieved(),
            worst_ms: verdict
                .objectives
                .iter()
                .map(|o| (o.objective.clone(), o.worst_ms))
                .collect(),
            windows_judged: verdict.windows_judged,
            windows_failed: verdict.windows_failed,
            reasons: verdict
                .windows
                .iter()
                .find(|w| w.judged && !w.pass)
                .map(|w| w.reasons.clone())
                .unwrap_or_default(),
            dir: dir.display().to_string(),
        };
        Ok((outcome, record))
    }

    /// Stops, wipes and restarts the local nodes, then recreates the schema (and data).
    async fn restart_fresh(&mut self) -> Result<()> {
        let nodes: Vec<NodeState> = self.target.local_nodes.clone();
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
        self.target = Target::connect(self.target.copts.clone(), started.nodes).await?;
        self.prepared = Prepared::new(&self.target, self.chosen).await?;
        if !self.args.common.workload.no_populate {
            let ecfg = self.engine(0.0);
            self.prepared
                .populate(&ecfg, self.args.common.workload.loader, true)
                .await?;
        }
        Ok(())
    }
}

/// Exit codes: 0 a capacity was found, 1 none (or the cluster failed), 130 interrupted; the
/// results directory holds capacity.json and every step's results in all cases.
pub fn run(home: &Home, args: CapacityArgs) -> Result<u8> {
    let Some(sla) = args.common.sla.build()? else {
        bail!("capacity needs a service level to meet: add --sla, e.g. --sla 'p99.9<100ms/10s'");
    };
    let longest = sla.windows().last().copied().unwrap_or_default();
    if args.measure < longest {
        bail!(
            "--measure {} is shorter than the SLA's {}s window: no window could be judged; measure at least one window",
            humantime::format_duration(args.measure),
            longest.as_secs()
        );
    }
    let sweep = args
        .rates
        .as_deref()
        .map(parse_rates)
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    args.common.conn.options(Vec::new(), args.common.load.threads)?;
    let chosen = Chosen::from_args(&args.common.workload)?;
    let (hosts, local_nodes) = targets(home, &args.common.conn.hosts)?;
    if args.fresh_node && local_nodes.is_empty() {
        bail!(
            "--fresh-node wipes and restarts local nodes caplab runs; it cannot restart --hosts. Drop --hosts or --fresh-node"
        );
    }
    let copts = args.common.conn.options(hosts, args.common.load.threads)?;
    let nodes = args.nodes.map(|n| n as usize).unwrap_or(local_nodes.len());
    let out = args
        .common
        .out
        .clone()
        .unwrap_or_else(|| default_out(&format!("capacity-{}", chosen.name())));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create the results directory {}", out.display()))?;

    let rt = args.common.load.runtime()?;
    rt.block_on(async {
        let began = Instant::now();
        let target = Target::connect(copts, local_nodes).await?;
        let prepared = Prepared::new(&target, &chosen).await?;
        let jmx = jmx_targets(home, &args.common.telemetry, target.release.as_deref())?;
        let mut bench = Bench {
            home,
            args: &args,
            chosen: &chosen,
            sla: &sla,
            out: &out,
            target,
            prepared,
            stop: stop_on_ctrl_c(),
            steps_run: 0,
            jmx,
        };
        if !args.fresh_node && !args.populate && !args.common.workload.no_populate {
            let ecfg = bench.engine(0.0);
            bench
                .prepared
                .populate(&ecfg, args.common.workload.loader, args.common.quiet)
                .await?;
        }
        let mut report = Report {
            caplab_version: env!("CARGO_PKG_VERSION"),
            command: std::env::args().collect(),
            status: "running".into(),
            workload: chosen.name(),
            sla: sla.clone(),
            mode: if sweep.is_some() { "sweep" } else { "adaptive" },
            precision: sweep.is_none().then_some(args.precision),
            warmup_s: args.warmup.as_secs_f64(),
            measure_s: args.measure.as_secs_f64(),
            repeats: args.repeats,
            fresh_node: args.fresh_node,
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
        report.save(&out, began)?;
        say(&format!(
            "Capacity of {} within SLA {}: {}, {} warm-up + {} measured per step, {} repeat(s); results in {}",
            chosen.name(),
            sla.text(),
            match &sweep {
                Some(r) => format!("sweeping {} rates", r.len()),
                None => format!("adaptive search to {:.0}% precision", args.precision * 100.0),
            },
            humantime::format_duration(args.warmup),
            humantime::format_duration(args.measure),
            args.repeats,
            out.display()
        ));

        let mut search = Search::new(args.start.unwrap_or(1_000.0), args.precision);
        if sweep.is_none() && !args.no_probe {
            say("Probe: flat out, to bound the search and measure the highest throughput");
            let (outcome, record) = bench.step(0.0, 1, "probe").await?;
            say(&format!("Probe: {} op/s flat out", group(record.achieved_rate)));
            let ceiling = record.achieved_rate;
            report.probe = Some(record);
            report.save(&out, began)?;
            if let Some(end) = ended(&outcome, &mut report, &out, began)? {
                return Ok(end);
            }
            search = Search::new(args.start.unwrap_or(ceiling / 2.0), args.precision).with_ceiling(ceiling);
        }

        let mut queue = sweep.clone().unwrap_or_default().into_iter();
        loop {
            let rate = match &sweep {
                Some(_) => queue.next(),
                None => search.next(),
            };
            let Some(rate) = rate.map(|r| r.round().max(1.0)) else {
                break;
            };
            say(&format!("Trying {} op/s", group(rate)));
            let mut all_pass = true;
            let mut run = 0;
            for repeat in 1..=args.repeats {
                run = repeat;
                let label = format!("{}-r{repeat}", rate as u64);
                let (outcome, record) = bench.step(rate, repeat, &label).await?;
                say(&format!(
                    "  {} op/s repeat {repeat}/{}: {}",
                    group(rate),
                    args.repeats,
                    describe(&record)
                ));
                all_pass &= record.pass;
                report.steps.push(record);
                report.save(&out, began)?;
                if let Some(end) = ended(&outcome, &mut report, &out, began)? {
                    return Ok(end);
                }
                if !all_pass {
                    break;
                }
            }
            report.rates.push(RateRecord {
                rate,
                pass: all_pass,
                repeats_run: run,
            });
            search.record(rate, all_pass);
            if sweep.is_none() {
                say(&format!("  bracket: {}", search.bracket()));
                report.bracket = Some(search.bracket());
            }
            report.save(&out, began)?;
        }

        report.capacity = match &sweep {
            Some(_) => report.rates.iter().filter(|r| r.pass).map(|r| r.rate).reduce(f64::max),
            None => search.capacity(),
        };
        report.stopped_early = match (&sweep, report.capacity) {
            (None, _) => search.stopped_early(),
            (Some(_), Some(cap)) => {
                let below: Vec<String> = report
                    .rates
                    .iter()
                    .filter(|r| !r.pass && r.rate < cap)
                    .map(|r| group(r.rate))
                    .collect();
                (!below.is_empty()).then(|| {
                    format!(
                        "{} op/s failed below the capacity: results at these rates vary more than the SLA's margin \
                         (add --repeats or lengthen --measure)",
                        below.join(", ")
                    )
                })
            }
            _ => None,
        };
        report.status = "completed".into();
        if let (Some(price), Some(cap)) = (args.cost, report.capacity)
            && nodes > 0
        {
            let per_hour = price * nodes as f64;
            report.cost = Some(json!({
                "price_per_node_hour": price,
                "nodes": nodes,
                "cluster_per_hour": per_hour,
                "per_1k_ops_per_hour": per_hour / (cap / 1000.0),
                "target_rate": args.target,
                "nodes_for_target": args.target.map(|t| (t / (cap / nodes as f64)).ceil()),
            }));
        }
        report.save(&out, began)?;
        println!("{}", render(&report, nodes, args.cost.is_some() && nodes == 0));
        println!("Results: {}", out.display());
        Ok(if report.capacity.is_some() { 0 } else { 1 })
    })
}

/// Ends the search after a step that was interrupted or lost the cluster.
fn ended(outcome: &StepOutcome, report: &mut Report, out: &Path, began: Instant) -> Result<Option<u8>> {
    let (status, code) = match &outcome.reason {
        EndReason::Completed => return Ok(None),
        EndReason::Interrupted => ("interrupted", 130),
        _ => ("failed", 1),
    };
    report.status = status.into();
    report.save(out, began)?;
    if let Some(m) = &outcome.message {
        eprintln!("error: {m}");
    }
    eprintln!(
        "The search stopped ({status}); what it found so far is in {}",
        out.join("capacity.json").display()
    );
    Ok(Some(code))
}

fn describe(r: &StepRecord) -> String {
    let worst: Vec<String> = r
        .worst_ms
        .iter()
        .map(|(o, ms)| match ms {
            Some(ms) => format!("{} max {ms:.2} ms", o.split('<').next().unwrap_or(o)),
            None => format!("{o}: no data"),
        })
        .collect();
    let verdict = if r.pass {
        "PASS".to_string()
    } else {
        format!("FAIL ({})", r.reasons.join("; "))
    };
    format!(
        "{} op/s achieved, {}  {verdict}",
        group(r.achieved_rate),
        worst.join(", ")
    )
}

/// The end-of-search report: E3's table, the capacity, the highest throughput, the cost.
fn render(r: &Report, nodes: usize, cost_without_nodes: bool) -> String {
    let objectives: Vec<String> = r.sla.objectives.iter().map(|o| o.text()).collect();
    let mut s = format!("Capacity search, SLA {} ({})\n", r.sla.text(), r.mode);
    s.push_str(&format!("{:>12}  {:>6}  {:>12}", "rate op/s", "repeat", "achieved"));
    for o in &r.sla.objectives {
        s.push_str(&format!("  {:>14}", format!("{} max", o.label)));
    }
    s.push_str("  verdict\n");
    for st in &r.steps {
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
        s.push_str(if st.pass { "  pass\n" } else { "  FAIL\n" });
    }
    match r.capacity {
        Some(c) => s.push_str(&format!(
            "Capacity: {} op/s (the highest rate that passed every repeat)\n",
            group(c)
        )),
        None => s.push_str("Capacity: none found: no rate tried met the SLA\n"),
    }
    if let Some(why) = &r.stopped_early {
        s.push_str(&format!("Note: {why}\n"));
    }
    s.push_str(&format!(
        "Highest throughput achieved (any SLA): {} op/s\n",
        group(r.highest_achieved_rate)
    ));
    if let Some(c) = &r.cost {
        s.push_str(&format!(
            "Cost: {} nodes x {}/h = {:.3}/h; {:.4}/h per 1k op/s of capacity",
            nodes,
            c["price_per_node_hour"],
            c["cluster_per_hour"].as_f64().unwrap_or_default(),
            c["per_1k_ops_per_hour"].as_f64().unwrap_or_default()
        ));
        if let (Some(t), Some(n)) = (c["target_rate"].as_f64(), c["nodes_for_target"].as_f64()) {
            s.push_str(&format!("; {} op/s needs {n:.0} nodes", group(t)));
        }
        s.push('\n');
    } else if cost_without_nodes {
        s.push_str("Cost: give --nodes (the cluster's node count) to price the capacity\n");
    }
    s.push_str(&format!("Search took {:.0}s", r.elapsed_s));
    s
}
