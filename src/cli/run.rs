//! `caplab run`: drive a workload against a cluster once, write its results, and judge it
//! against a service level when given one.

use anyhow::{Context, Result};
use clap::Args;
use std::time::Duration;

use super::args::{DriveArgs, parse_rate, parse_warmup};
use super::drive::{Chosen, Prepared, Step, Target, default_out, jmx_targets, stop_on_ctrl_c, targets};
use crate::cluster::Home;
use crate::engine::{EngineConfig, Warmup};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Length of the measured window (after warm-up), e.g. 60s, 5m. Default 60s unless -n.
    #[arg(long, value_parser = humantime::parse_duration)]
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
    let chosen = Chosen::from_args(&common.workload)?;
    let duration = match (args.duration, args.ops) {
        (None, None) => Some(Duration::from_secs(60)),
        (d, _) => d,
    };
    let (hosts, local_nodes) = targets(home, &common.conn.hosts)?;
    let copts = common.conn.options(hosts, common.load.threads)?;
    let mut step = Step {
        ecfg: EngineConfig {
            rate: args.rate,
            concurrency: common.load.concurrency as usize,
            duration,
            ops: args.ops,
            warmup: args.warmup,
            interval: Duration::from_secs(1),
            give_up_after: common.load.give_up_after,
            drain_timeout: common.conn.timeout + Duration::from_secs(2),
            shards: 4 * common.load.threads as usize,
        },
        threads: common.load.threads,
        out: common.out.clone().unwrap_or_else(|| default_out(&chosen.name())),
        loader: common.workload.loader,
        quiet: common.quiet,
        show_windows: !common.quiet,
        sla,
        config: serde_json::json!({}),
        print_summary: true,
        jmx: Vec::new(),
    };
    std::fs::create_dir_all(&step.out)
        .with_context(|| format!("cannot create the results directory {}", step.out.display()))?;

    let rt = common.load.runtime()?;
    rt.block_on(async move {
        let target = Target::connect(copts, local_nodes).await?;
        step.jmx = jmx_targets(home, &common.telemetry, target.release.as_deref())?;
        let prepared = Prepared::new(&target, &chosen).await?;
        if !common.workload.no_populate {
            prepared.populate(&step.ecfg, step.loader, step.quiet).await?;
        }
        let outcome = prepared.drive(&target, &step, stop_on_ctrl_c()).await?;
        if let Some(m) = &outcome.message {
            eprintln!("error: {m}");
        }
        Ok(outcome.code)
    })
}
