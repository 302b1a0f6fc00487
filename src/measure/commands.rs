//! A whole measurement from its options, as `caplab run` (and each step of an experiment) takes
//! them: the targets (a local node started if there is none), the connection, the workload
//! prepared and populated, then the step. The pieces a capacity search prepares the same way
//! (`capacity::command`) are public here.
//! Blocking: each builds the client runtime its options ask for; `stop` (signals) ends it.

use anyhow::{Result, bail};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::options::{DriveOptions, Rate, RunOptions, resolve_warmup};
pub use super::target::{jmx_targets, targets};
use super::{Choice, Prepared, RunResult, Show, Step, Target};
use crate::client::ClientOptions;
use crate::cluster::Home;
use crate::cluster::node::NodeState;
use crate::engine::{EngineConfig, Stop, Warmup};
use crate::faults::Injector;
use crate::live::{Identity, Live};
use crate::server_profile::Profiler;

/// A run's measured window when neither a duration nor a count is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// What a rate shape cannot be combined with yet, each named with its fix.
fn refuse_with_shape(rate: &Rate, warmup: Warmup, ops: Option<u64>) -> Result<()> {
    let Some(shape) = &rate.shape else {
        return Ok(());
    };
    if matches!(warmup, Warmup::Auto { .. } | Warmup::Ops(_)) {
        bail!(
            "--rate {}: a shape starts with the measured window, after a warm-up of known length at its \
             first rate: give --warmup 30s (or --warmup 0)",
            shape.text
        );
    }
    if ops.is_some() {
        bail!(
            "--rate {}: a shape runs for a time, not a count: give --duration (default: the shape's own length)",
            shape.text
        );
    }
    Ok(())
}

/// Runs one measured step as `caplab run` does; returns its result and results directory.
pub fn run(home: &Home, args: &RunOptions, stop: &Arc<Stop>) -> Result<(RunResult, PathBuf)> {
    let common = &args.common;
    let sla = common.sla.build()?;
    common.conn.options(Vec::new(), common.load.threads)?; // checks --consistency before anything starts
    let choice = Choice::of(&common.workload)?;
    refuse_validation(common, &choice)?;
    if args.trace_slow.is_some() && matches!(choice, Choice::Bank(..)) {
        bail!(
            "--trace-slow: the {} workload {}",
            choice.name(),
            super::traces::UNTRACED
        );
    }
    common.metrics.check()?;
    let (rate, warmup, duration, ops, in_flight) = match &choice {
        Choice::Replay(trace, replay) => {
            let s = super::replay::schedule(args, trace, replay)?;
            (s.rate, s.warmup, s.duration, s.ops, s.in_flight)
        }
        _ => {
            let warmup = resolve_warmup(args.warmup, args.warmup_max)?;
            let rate = args.rate()?;
            refuse_with_shape(&rate, warmup, args.ops)?;
            let duration = match (args.duration, args.ops) {
                // A shape that ends (a ramp, steps, a trace) is measured to its end.
                (None, None) => Some(rate.shape.as_ref().and_then(|s| s.length()).unwrap_or(DEFAULT_DURATION)),
                (d, _) => d,
            };
            (rate, warmup, duration, args.ops, None)
        }
    };
    pin_client(common)?;
    let out = common.out_dir(&choice.name())?;
    let ops_file = ops_target(args.ops_parquet.as_ref(), &out, common.workload.loader)?;
    let (hosts, local_nodes) = targets(home, &common.conn.hosts, &common.node)?;
    let window = if ops.is_some() { None } else { duration };
    let faults = fault_schedule(home, common, &local_nodes, window, "--duration")?;
    let local_nodes = common.telemetry.watched(local_nodes);
    let server_profile = profiler(home, common, &local_nodes, &hosts)?;
    let copts = common.conn.options(hosts, common.load.threads)?;
    let mut step = Step {
        engine: EngineConfig {
            shape: rate.shape.clone(),
            concurrency: in_flight.unwrap_or(common.load.concurrency as usize),
            ops_file,
            trace: args.trace_slow,
            ..common.load().engine(rate.per_s, duration, ops, warmup)
        },
        threads: common.load.threads,
        out,
        loader: common.workload.loader,
        show: Show {
            progress: !common.quiet,
            windows: !common.quiet,
        },
        sla,
        capacity_step: None,
        jmx: Vec::new(),
        command: crate::measure::out::command_line(),
        server_profile,
        start_at: args.start_at,
        meet: args.meet.clone(),
        pools: common.telemetry.pools(),
        faults: faults.as_ref().map(|(f, _)| f.clone()),
        labels: common.labels.iter().cloned().collect(),
        validate: common.validation()?,
        live: None,
        knee: crate::measure::phases::KneeRule {
            percentile: args.knee_on,
            factor: args.knee_factor,
        },
    };

    let out = step.out.clone();
    let live = start_live(common, &choice, &out)?;
    step.live = live.as_ref().map(Live::feed);
    let rt = common.load.runtime()?;
    let result = rt.block_on(async move {
        let target = Target::connect(through_proxies(copts, faults.as_ref()).await?, local_nodes).await?;
        step.jmx = jmx_targets(home, &common.jmx(), target.site.release.as_deref())?;
        let prepared = Prepared::new(&target, &choice).await?;
        if !common.workload.no_populate {
            prepared.populate(&step.engine, step.loader, common.quiet, stop).await?;
        }
        prepared.run(&step, &target.site, stop.clone()).await
    });
    crate::measure::target::remove_jmx_workdir();
    let result = result?;
    if let Some(live) = live {
        live.finish();
    }
    Ok((result, out))
}

/// Where `--ops-parquet` writes (alone: the results directory's operations.parquet), refused
/// before anything runs when its directory is missing.
fn ops_target(
    asked: Option<&Option<PathBuf>>,
    out: &std::path::Path,
    loader: crate::engine::LoaderSlice,
) -> Result<Option<crate::metrics::ops::OpsTarget>> {
    let target = |path: PathBuf| crate::metrics::ops::OpsTarget {
        path,
        loader: loader.index() as u32 + 1,
    };
    let path = match asked {
        None => return Ok(None),
        Some(None) => return Ok(Some(target(std::path::absolute(out.join(OPS_FILE))?))),
        Some(Some(path)) => path,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!(
            "--ops-parquet {}: the directory {} does not exist: create it, or give a file in one that does",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        bail!(
            "--ops-parquet {} is a directory: give a file name, like {}/ops.parquet",
            path.display(),
            path.display()
        );
    }
    Ok(Some(target(std::path::absolute(path)?)))
}

/// The operations file's name in a results directory.
pub const OPS_FILE: &str = "operations.parquet";

/// Pins caplab (this process, and the threads it starts from now on) to `--client-cpus`.
pub fn pin_client(common: &crate::measure::options::DriveOptions) -> Result<()> {
    match &common.client_cpus {
        Some(list) => crate::cpus::pin_self(&crate::cpus::parse(list)?),
        None => Ok(()),
    }
}

/// The live metrics `--metrics-listen` and `--metrics-push` ask for, labelled with who measures.
pub fn start_live(common: &DriveOptions, choice: &Choice, out: &std::path::Path) -> Result<Option<Live>> {
    let run = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let who = Identity {
        loader: common.workload.loader.index(),
        workload: &choice.name(),
        run: &run,
        labels: &common.labels,
    };
    Live::start(&common.metrics, &who)
}

/// The fault schedule (`--fault`), checked before anything runs against the cluster it acts on:
/// every node caplab runs here when the targets are among them (a home holds one cluster).
/// `window` is each measured window's length, set by `flag`. Returns the injector and the
/// nodes a network fault puts proxies in front of.
pub fn fault_schedule(
    home: &Home,
    common: &DriveOptions,
    local_nodes: &[NodeState],
    window: Option<Duration>,
    flag: &str,
) -> Result<Option<(Arc<Injector>, Vec<NodeState>)>> {
    if common.faults.is_empty() {
        return Ok(None);
    }
    let cluster: Vec<NodeState> = if local_nodes.is_empty() {
        Vec::new()
    } else {
        crate::cluster::local::nodes(home)?
            .into_iter()
            .filter(|n| n.liveness() == crate::cluster::node::Liveness::Running)
            .collect()
    };
    let names: Vec<String> = cluster.iter().map(|n| n.name.clone()).collect();
    crate::faults::spec::check(&common.faults, &names, window, flag).map_err(|e| anyhow::anyhow!(e))?;
    // An upgrade's jars are fetched now, not in the middle of the window.
    for version in common.faults.iter().filter_map(|f| f.version.as_deref()) {
        crate::cluster::local::nodetool_classpath(home, version, &mut |m| crate::console::say(m))?;
    }
    Ok(Some((Injector::new(home.clone(), common.faults.clone()), cluster)))
}

/// The connection, through a proxy in front of every node when the schedule has a network
/// fault (a run without one does not go through proxies at all).
pub async fn through_proxies(
    mut copts: ClientOptions,
    faults: Option<&(Arc<Injector>, Vec<NodeState>)>,
) -> Result<ClientOptions> {
    if let Some((injector, nodes)) = faults.filter(|(f, _)| f.has_network()) {
        copts.via = injector.start_proxies(nodes).await?;
    }
    Ok(copts)
}

/// The server profiler `--server-profile` asks for, ready (tools fetched, nodes checked).
pub fn profiler(
    home: &Home,
    common: &DriveOptions,
    local_nodes: &[NodeState],
    hosts: &[String],
) -> Result<Option<Arc<Profiler>>> {
    let Some(spec) = common.telemetry.server_profile.clone() else {
        return Ok(None);
    };
    let p = Profiler::new(home, spec, local_nodes, hosts, &mut |m| crate::console::say(m))?;
    Ok(Some(Arc::new(p)))
}

/// `--validate` reads back E1's rows and counter workloads' totals (a profile whose writes are not
/// all counter increments is refused once its schema is known, before it runs).
pub fn refuse_validation(common: &DriveOptions, choice: &Choice) -> Result<()> {
    if let (Some(_), Choice::Profile { profile, origin, .. }) = (&common.validate, choice)
        && profile.operations.values().all(|o| o.is_read())
    {
        bail!("--validate reads back acknowledged writes, and {origin} has none to read back: drop --validate");
    }
    Ok(())
}
