//! `caplab capacity`: the highest rate a cluster carries within a service level. The options
//! become a `Plan` (adaptive search or `--rates` sweep) and a `Capacity` search's settings;
//! the search itself is `measure::capacity`.

use anyhow::{Result, bail};
use clap::Args;
use std::time::Duration;

use super::args::{DriveArgs, parse_duration, parse_rate};
use super::node::StartArgs;
use crate::cluster::Home;
use crate::measure::signal::stop_on_signals;
use crate::measure::target::{jmx_targets, targets};
use crate::measure::{Capacity, Choice, Pricing, RunStatus, Target};
use crate::sla::{Plan, parse_rates, parse_share};

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
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub warmup: Duration,
    /// Measured window of each step.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
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

/// Exit codes: 0 a capacity was found, 1 none (or the cluster failed), 130 interrupted; the
/// results directory holds capacity.json and every step's results in all cases.
pub fn run(home: &Home, args: CapacityArgs) -> Result<u8> {
    let common = &args.common;
    let Some(sla) = common.sla.build()? else {
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
    let plan = match args.rates.as_deref() {
        Some(rates) => Plan::sweep(parse_rates(rates).map_err(|e| anyhow::anyhow!(e))?, args.repeats),
        None => Plan::adaptive(args.start, args.precision, !args.no_probe, args.repeats),
    };
    common.conn.options(Vec::new(), common.load.threads)?;
    let choice = Choice::of(&common.workload)?;
    let (hosts, local_nodes) = targets(home, &common.conn.hosts, StartArgs::default_spec)?;
    if args.fresh_node && local_nodes.is_empty() {
        bail!(
            "--fresh-node wipes and restarts local nodes caplab runs; it cannot restart --hosts. Drop --hosts or --fresh-node"
        );
    }
    let copts = common.conn.options(hosts, common.load.threads)?;
    let nodes = args.nodes.map(|n| n as usize).unwrap_or(local_nodes.len());
    let mut search = Capacity {
        sla,
        load: common.load(),
        warmup: args.warmup,
        measure: args.measure,
        fresh_node: args.fresh_node,
        populate_each: args.populate,
        no_populate: common.workload.no_populate,
        loader: common.workload.loader,
        quiet: common.quiet,
        out: common.out_dir(&format!("capacity-{}", choice.name()))?,
        jmx: Vec::new(),
        command: crate::measure::out::command_line(),
        pricing: args.cost.map(|price| Pricing {
            price,
            nodes,
            target: args.target,
        }),
    };

    let rt = common.load.runtime()?;
    rt.block_on(async {
        let stop = stop_on_signals();
        let target = Target::connect(copts, local_nodes).await?;
        search.jmx = jmx_targets(home, &common.jmx(), target.site.release.as_deref())?;
        let report = search.run(plan, home, target, &choice, stop).await?;
        let file = search.out.join(crate::measure::capacity::CAPACITY_FILE);
        println!("{}", report.render());
        if report.status != RunStatus::Completed {
            if let Some(m) = &report.end_reason {
                eprintln!("error: {m}");
            }
            eprintln!(
                "The search stopped ({}); what it found so far is in {}",
                report.status.name(),
                file.display()
            );
            return Ok(report.exit_code());
        }
        if args.cost.is_some() && nodes == 0 {
            println!("Cost: give --nodes (the cluster's node count) to price the capacity");
        }
        println!("Results: {}", search.out.display());
        Ok(report.exit_code())
    })
}
