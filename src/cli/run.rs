//! `caplab run`: drive a workload against a cluster once, write its results, and judge it
//! against a service level when given one.

use anyhow::Result;
use clap::Args;
use std::time::Duration;

use super::args::{DriveArgs, parse_duration, parse_rate, parse_warmup};
use super::node::StartArgs;
use crate::cluster::Home;
use crate::engine::Warmup;
use crate::measure::signal::stop_on_signals;
use crate::measure::target::{jmx_targets, targets};
use crate::measure::{Choice, Prepared, RunStatus, Show, Step, Target};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Length of the measured window (after warm-up), e.g. 60s, 5m. Default 60s unless -n.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Number of measured operations instead of a duration.
    #[arg(short = 'n', long = "count", conflicts_with = "duration")]
    pub ops: Option<u64>,
    /// Excluded from results: a time (30s) or a number of operations (10000).
    #[arg(long, value_parser = parse_warmup, default_value = "0s")]
    pub warmup: Warmup,
    /// Operations per second on an open-model schedule (2000, 50k); 0 runs flat out.
    #[arg(long, value_parser = parse_rate, default_value = "0")]
    pub rate: f64,
    #[command(flatten)]
    pub common: DriveArgs,
}

/// Exit codes: 0 done (and the service level met), 1 failed or missed the service level
/// (results kept), 130 interrupted (results kept).
pub fn run(home: &Home, args: RunArgs) -> Result<u8> {
    let common = &args.common;
    let sla = common.sla.build()?;
    common.conn.options(Vec::new(), common.load.threads)?; // checks --consistency before anything starts
    let choice = Choice::of(&common.workload)?;
    let duration = match (args.duration, args.ops) {
        (None, None) => Some(Duration::from_secs(60)),
        (d, _) => d,
    };
    let (hosts, local_nodes) = targets(home, &common.conn.hosts, StartArgs::default_spec)?;
    let copts = common.conn.options(hosts, common.load.threads)?;
    let mut step = Step {
        engine: common.load().engine(args.rate, duration, args.ops, args.warmup),
        threads: common.load.threads,
        out: common.out_dir(&choice.name())?,
        loader: common.workload.loader,
        show: Show {
            progress: !common.quiet,
            windows: !common.quiet,
        },
        sla,
        capacity_step: None,
        jmx: Vec::new(),
        command: crate::measure::out::command_line(),
    };

    let rt = common.load.runtime()?;
    rt.block_on(async move {
        let stop = stop_on_signals();
        let target = Target::connect(copts, local_nodes).await?;
        step.jmx = jmx_targets(home, &common.jmx(), target.site.release.as_deref())?;
        let prepared = Prepared::new(&target, &choice).await?;
        if !common.workload.no_populate {
            prepared
                .populate(&step.engine, step.loader, common.quiet, &stop)
                .await?;
        }
        let result = prepared.run(&step, &target.site, stop).await?;
        println!("{}", result.render());
        println!("Results: {}", step.out.display());
        if let (RunStatus::Failed, Some(m)) = (result.status, &result.end_reason) {
            eprintln!("error: {m}");
        }
        Ok(result.exit_code())
    })
}
