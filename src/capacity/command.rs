//! A capacity search from its options, as `caplab capacity` (and an experiment's capacity
//! measurement) takes them: prepared as a run is (`measure::commands`' pieces), then searched
//! step by step (`run`).

use anyhow::{Result, bail};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::options::CapacityOptions;
use super::plan::Plan;
use super::result::CapacityResult;
use super::run::{Capacity, Pricing};
use super::search::parse_rates;
use crate::cluster::Home;
use crate::engine::Stop;
use crate::live::Live;
use crate::measure::commands::{
    fault_schedule, jmx_targets, pin_client, profiler, refuse_validation, start_live, targets, through_proxies,
};
use crate::measure::options::resolve_warmup;
use crate::measure::{Choice, Target};

/// Runs a capacity search as `caplab capacity` does; returns its report, its results
/// directory, and whether a price was asked for with no node count to apply it to.
pub fn capacity(home: &Home, args: &CapacityOptions, stop: &Arc<Stop>) -> Result<(CapacityResult, PathBuf, bool)> {
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
    let plan = match (args.rates.as_deref(), args.curve) {
        (Some(rates), _) => Plan::sweep(parse_rates(rates).map_err(|e| anyhow::anyhow!(e))?, args.repeats),
        (None, Some(_)) if args.no_probe => bail!(
            "--curve without --rates sweeps up to the flat-out throughput, which --no-probe skips: give --rates, or drop --no-probe"
        ),
        (None, Some(points)) => Plan::curve(points, args.repeats),
        (None, None) => Plan::adaptive(args.start, args.precision, !args.no_probe, args.repeats),
    };
    common.conn.options(Vec::new(), common.load.threads)?;
    let choice = Choice::of(&common.workload)?;
    if let Choice::Replay(..) = &choice {
        refuse_for_replay(args)?;
    }
    refuse_validation(common, &choice)?;
    common.metrics.check()?;
    pin_client(common)?;
    let (hosts, local_nodes) = targets(home, &common.conn.hosts, &common.node)?;
    let faults = fault_schedule(home, common, &local_nodes, Some(args.measure), "--measure")?;
    let local_nodes = common.telemetry.watched(local_nodes);
    if args.fresh_node && local_nodes.is_empty() {
        bail!(
            "--fresh-node wipes and restarts local nodes caplab runs; it cannot restart --hosts. Drop --hosts or --fresh-node"
        );
    }
    let server_profile = profiler(home, common, &local_nodes, &hosts)?;
    let copts = common.conn.options(hosts, common.load.threads)?;
    let nodes = args.nodes.map(|n| n as usize).unwrap_or(local_nodes.len());
    let confirm = args.confirm.unwrap_or_else(|| default_confirm(&sla));
    let mut search = Capacity {
        sla,
        load: common.load(),
        warmup: resolve_warmup(args.warmup, args.warmup_max)?,
        measure: args.measure,
        confirm,
        fresh_node: args.fresh_node,
        populate_each: args.populate,
        no_populate: common.workload.no_populate,
        loader: common.workload.loader,
        quiet: common.quiet,
        out: common.out_dir(&format!("capacity-{}", choice.name()))?,
        jmx: Vec::new(),
        command: crate::measure::out::command_line(),
        server_profile,
        pools: common.telemetry.pools(),
        pricing: args.cost.map(|price| Pricing {
            price,
            nodes,
            target: args.target,
        }),
        faults: faults.as_ref().map(|(f, _)| f.clone()),
        labels: common.labels.iter().cloned().collect(),
        validate: common.validation()?,
        live: None,
        knee: args.curve.map(|_| crate::measure::phases::KneeRule {
            percentile: args.knee_on,
            factor: args.knee_factor,
        }),
    };

    let out = search.out.clone();
    let live = start_live(common, &choice, &out)?;
    search.live = live.as_ref().map(Live::feed);
    let rt = common.load.runtime()?;
    let report = rt.block_on(async {
        let target = Target::connect(through_proxies(copts, faults.as_ref()).await?, local_nodes).await?;
        search.jmx = jmx_targets(home, &common.jmx(), target.site.release.as_deref())?;
        search.run(plan, home, target, &choice, stop.clone()).await
    });
    crate::measure::target::remove_jmx_workdir();
    let report = report?;
    if let Some(live) = live {
        live.finish();
    }
    Ok((report, out, args.cost.is_some() && nodes == 0))
}

/// What a capacity search of a replay cannot take: it searches the speed itself, and its steps
/// loop the trace into the schema the cluster has.
fn refuse_for_replay(args: &CapacityOptions) -> Result<()> {
    if args.common.workload.speed.is_some() {
        bail!(
            "capacity searches a replay's speed itself: drop --speed (its rates are the trace's mean rate times a speed)"
        );
    }
    if args.fresh_node {
        bail!(
            "--fresh-node wipes the nodes, and with them the schema a replay sends its trace into: drop --fresh-node"
        );
    }
    Ok(())
}

/// Windows of the service level a confirmation holds the capacity for, unless `--confirm`
/// says otherwise: twelve (two minutes at E3's 10 s windows), so that it spans at least one of
/// G1's once-a-minute mixed pauses, which a 30 s step meets or not by chance (two searches of
/// one configuration came out nearly 7 times apart: bench/results/seeds.md, E3).
pub const CONFIRM_WINDOWS: u32 = 12;

/// `CONFIRM_WINDOWS` of the service level's longest window.
pub fn default_confirm(sla: &crate::sla::Sla) -> Duration {
    sla.objectives
        .iter()
        .map(|o| o.window)
        .max()
        .unwrap_or(Duration::from_secs(10))
        * CONFIRM_WINDOWS
}
