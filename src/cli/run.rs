//! `caplab run`: drive a workload against a cluster and write its results.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriter;
use serde_json::json;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use super::node::StartArgs;
use super::say;
use crate::client::{self, ClientOptions};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions};
use crate::cluster::node::{Liveness, NodeState};
use crate::engine::{self, EndReason, EngineConfig, IntervalSink, LoaderSlice, Sliced, Warmup, Workload};
use crate::metrics::summary::{Summary, group};
use crate::metrics::{Interval, csv::CsvLog, hdrlog};
use crate::workload::builtin;
use crate::workload::dynamic::{Dynamic, Populate};
use crate::workload::e1::{E1, E1Options, Kind};
use crate::workload::profile::Profile;
use crate::workload::stress;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Built-in workload ('caplab workloads' lists them).
    #[arg(long, default_value = "insert")]
    pub workload: String,
    /// A workload profile (YAML) instead of a built-in ('caplab workloads show NAME' prints one to start from).
    #[arg(long, value_name = "FILE", conflicts_with = "workload")]
    pub profile: Option<PathBuf>,
    /// Skip the profile's populate phase (the data is already there).
    #[arg(long)]
    pub no_populate: bool,
    /// Length of the measured window (after warm-up), e.g. 60s, 5m. Default 60s unless -n.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Number of measured operations instead of a duration.
    #[arg(short = 'n', long = "count", conflicts_with = "duration")]
    pub ops: Option<u64>,
    /// Profile operations to run and their weights, e.g. 'insert=1,read1=2' (as cassandra-stress's
    /// ops(...)); operations not named do not run. Default: the profile's weights.
    #[arg(long = "ops", value_name = "NAME=WEIGHT,...")]
    pub weights: Option<String>,
    /// Seed for a profile's generated values and operation order (overrides the profile's `seed`);
    /// the same seed always produces the same data.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Excluded from results: a time (30s) or a number of operations (10000).
    #[arg(long, value_parser = parse_warmup, default_value = "0s")]
    pub warmup: Warmup,
    /// Operations per second on an open-model schedule (2000, 50k); 0 runs flat out.
    #[arg(long, value_parser = parse_rate, default_value = "0")]
    pub rate: f64,
    /// Operations in flight at most.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: u32,
    /// Run share i of n of the workload's operations (loaders numbered 1..n), so n caplab
    /// processes split the key space without overlap; populate is split too, -n is per loader.
    #[arg(long, value_name = "I/N", value_parser = LoaderSlice::parse, default_value = "1/1")]
    pub loader: LoaderSlice,
    /// Client threads (every one is a core taken from a server on the same machine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,

    /// Contact points (host or host:port), comma-separated. Default: the local caplab nodes,
    /// starting one if none runs.
    #[arg(long, value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// Prefer coordinators in this datacenter.
    #[arg(long)]
    pub dc: Option<String>,
    /// Consistency level.
    #[arg(long, default_value = "local_one")]
    pub consistency: String,
    /// Connections per host.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub connections: u32,
    /// LZ4 protocol compression.
    #[arg(long)]
    pub compression: bool,
    #[arg(long)]
    pub user: Option<String>,
    #[arg(long, env = "CAPLAB_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Encrypt connections with TLS.
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate authority (or server certificate) to trust with --tls; default: the system's.
    #[arg(long, value_name = "PEM", requires = "tls")]
    pub tls_ca: Option<PathBuf>,
    /// With --tls, accept any server certificate (encrypted but unauthenticated).
    #[arg(long, requires = "tls")]
    pub tls_insecure: bool,
    /// Client request timeout.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "12s")]
    pub timeout: Duration,
    /// End the run when nothing has succeeded (and something failed) for this long.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub give_up_after: Duration,

    /// Partitions addressed (E1: operation i writes partition i mod N; default 100000; profiles:
    /// overrides the profile's `partitions`).
    #[arg(long)]
    pub partitions: Option<u64>,
    /// Characters per value column.
    #[arg(long, default_value_t = 10)]
    pub value_size: usize,
    #[arg(long, default_value_t = 5)]
    pub value_columns: usize,
    /// Rows per batch (batch workload).
    #[arg(long, default_value_t = 10)]
    pub batch_size: usize,
    #[arg(long, default_value = "caplab")]
    pub keyspace: String,
    #[arg(long, default_value_t = 1)]
    pub replication_factor: u32,
    /// Keep the commit log on (E1 turns it off with durable_writes = false).
    #[arg(long)]
    pub durable_writes: bool,
    /// Keep compaction on (E1 turns it off).
    #[arg(long)]
    pub compaction: bool,

    /// Results directory. Default: caplab-results/<time>-<workload> under the current directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No per-second progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('m') {
            Some(n) => (n, 1e6),
            None => (t.as_str(), 1.0),
        },
    };
    match num.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!(
            "'{s}' is not a rate: write operations per second, like 2000, 50k or 0 for flat out"
        )),
    }
}

fn parse_warmup(s: &str) -> Result<Warmup, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(if n == 0 { Warmup::None } else { Warmup::Ops(n) });
    }
    match humantime::parse_duration(s) {
        Ok(d) if d.is_zero() => Ok(Warmup::None),
        Ok(d) => Ok(Warmup::Time(d)),
        Err(_) => Err(format!(
            "'{s}' is not a warm-up: write a time (30s, 2m) or a number of operations (10000)"
        )),
    }
}

/// Exit codes: 0 done, 1 failed (results kept), 130 interrupted (results kept).
/// The workload a run drives, settled before anything touches the cluster.
enum Chosen {
    E1(E1Options),
    Profile {
        profile: Box<Profile>,
        origin: String,
        /// What a cassandra-stress profile could not carry over exactly.
        notes: Vec<String>,
    },
}

impl Chosen {
    fn name(&self) -> String {
        match self {
            Chosen::E1(o) => o.kind.name().to_string(),
            Chosen::Profile { profile, origin, .. } => profile.name.clone().unwrap_or_else(|| origin.clone()),
        }
    }
}

fn choose(args: &RunArgs) -> Result<Chosen> {
    let profile = |profile: Profile, origin: String, notes: Vec<String>| {
        let mut profile = Box::new(profile);
        if let Some(n) = args.partitions {
            profile.partitions = n;
        }
        if let Some(w) = &args.weights {
            profile.set_weights(w).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        }
        if let Some(seed) = args.seed {
            profile.seed = seed;
        }
        profile.validate().map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        Ok(Chosen::Profile { profile, origin, notes })
    };
    if let Some(path) = &args.profile {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read profile {}", path.display()))?;
        let origin = path.display().to_string();
        if stress::is_stress_profile(&text) {
            let imported = stress::import(&text, &origin)?;
            let mut notes = imported.notes;
            if args.weights.is_none() {
                notes.push(format!(
                    "no --ops: running insert only; choose operations with e.g. --ops 'insert=1,{}=1'",
                    imported
                        .profile
                        .op_names()
                        .into_iter()
                        .find(|n| n != "insert")
                        .unwrap_or_else(|| "query".into())
                ));
            }
            return profile(imported.profile, origin, notes);
        }
        return profile(Profile::parse(&text, &origin)?, origin, Vec::new());
    }
    let builtin = builtin::find(&args.workload)?;
    if !builtin.e1 {
        return profile(
            builtin.profile()?,
            format!("workloads/{}.yaml", builtin.name),
            Vec::new(),
        );
    }
    if args.seed.is_some() {
        bail!(
            "--seed applies to profile workloads; '{}' writes E1's fixed data (use its profile: caplab workloads show {0} > {0}.yaml)",
            builtin.name
        );
    }
    if args.weights.is_some() {
        bail!(
            "--ops chooses among a profile's operations; '{}' has one operation type (use another workload or --profile)",
            builtin.name
        );
    }
    let kind = if builtin.name == "batch" {
        Kind::Batch
    } else {
        Kind::Insert
    };
    let opts = E1Options {
        kind,
        keyspace: args.keyspace.clone(),
        partitions: args.partitions.unwrap_or(100_000),
        value_columns: args.value_columns,
        value_size: args.value_size,
        batch_size: args.batch_size,
        replication_factor: args.replication_factor,
        durable_writes: args.durable_writes,
        compaction: args.compaction,
    };
    opts.validate()?;
    Ok(Chosen::E1(opts))
}

/// Exit codes: 0 done, 1 failed (results kept), 130 interrupted (results kept).
pub fn run(home: &Home, args: RunArgs) -> Result<u8> {
    let consistency = client::parse_consistency(&args.consistency)?;
    let chosen = choose(&args)?;
    if let Chosen::Profile { origin, notes, .. } = &chosen
        && !notes.is_empty()
    {
        say(&format!(
            "{origin} is a cassandra-stress profile; what caplab does differently (also in result.json):"
        ));
        for n in notes {
            say(&format!("  - {n}"));
        }
    }
    let duration = match (args.duration, args.ops) {
        (None, None) => Some(Duration::from_secs(60)),
        (d, _) => d,
    };
    let (hosts, local_nodes) = targets(home, &args.hosts)?;
    let copts = ClientOptions {
        hosts,
        dc: args.dc.clone(),
        consistency,
        connections_per_host: args.connections as usize,
        compression: args.compression,
        user: args.user.clone(),
        password: args.password.clone(),
        request_timeout: args.timeout,
        connect_timeout: Duration::from_secs(3),
        tls: args.tls,
        tls_ca: args.tls_ca.clone(),
        tls_insecure: args.tls_insecure,
    };
    let ecfg = EngineConfig {
        rate: args.rate,
        concurrency: args.concurrency as usize,
        duration,
        ops: args.ops,
        warmup: args.warmup,
        interval: Duration::from_secs(1),
        give_up_after: args.give_up_after,
        drain_timeout: args.timeout + Duration::from_secs(2),
        shards: 4 * args.threads as usize,
    };
    let out = args.out.clone().unwrap_or_else(|| default_out(&chosen.name()));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create the results directory {}", out.display()))?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads as usize)
        .enable_all()
        .build()
        .context("cannot start the client runtime")?;
    rt.block_on(async move {
        let session = Arc::new(client::connect(&copts).await?);
        let release = release_version(&session).await;
        let run = Drive {
            args: &args,
            ecfg: &ecfg,
            out: &out,
            config: json!({
                "client": copts,
                "engine": {
                    "rate": ecfg.rate, "concurrency": ecfg.concurrency, "threads": args.threads,
                    "duration_s": ecfg.duration.map(|d| d.as_secs_f64()), "ops": ecfg.ops,
                    "warmup": format!("{:?}", ecfg.warmup), "interval_s": 1.0,
                    "loader": args.loader.to_string(),
                },
            }),
            environment: environment(release.as_deref(), &local_nodes),
            target: format!(
                "{} (Cassandra {})",
                copts.hosts.join(","),
                release.as_deref().unwrap_or("?")
            ),
        };
        match chosen {
            Chosen::E1(opts) => {
                let workload = Arc::new(E1::setup(session.clone(), opts.clone()).await?);
                let table = opts.table();
                let about = About {
                    name: opts.kind.name().into(),
                    workload: serde_json::to_value(&opts)?,
                    schema: opts.ddl(),
                    statements: vec![opts.insert_cql()],
                    tables: vec![table],
                };
                run.drive(workload, about).await
            }
            Chosen::Profile { profile, origin, notes } => {
                let workload = Arc::new(Dynamic::setup(session.clone(), &profile).await?);
                if let Some(op) = profile.populate.as_deref().filter(|_| !args.no_populate) {
                    populate(&workload, op, &args, &ecfg).await?;
                }
                let about = About {
                    name: run_name(&profile, &origin),
                    workload: json!({"profile": origin, "definition": &*profile, "not_mapped": notes}),
                    schema: profile.schema.clone(),
                    statements: profile.operations.values().map(|o| o.cql.clone()).collect(),
                    tables: workload.op_tables(),
                };
                run.drive(workload, about).await
            }
        }
    })
}

fn run_name(p: &Profile, origin: &str) -> String {
    p.name.clone().unwrap_or_else(|| origin.to_string())
}

/// What result.json and the CSV say about the workload.
struct About {
    name: String,
    workload: serde_json::Value,
    schema: Vec<String>,
    statements: Vec<String>,
    /// Table of each operation type, for the CSV.
    tables: Vec<String>,
}

/// Everything a run needs besides the workload.
struct Drive<'a> {
    args: &'a RunArgs,
    ecfg: &'a EngineConfig,
    out: &'a Path,
    config: serde_json::Value,
    environment: serde_json::Value,
    target: String,
}

impl Drive<'_> {
    async fn drive<W: Workload>(self, workload: Arc<W>, about: About) -> Result<u8> {
        let (args, ecfg, out) = (self.args, self.ecfg, self.out);
        let workload = Arc::new(Sliced {
            inner: workload,
            slice: args.loader,
        });
        let names = workload.op_names();
        let started = SystemTime::now();
        let mut config = self.config;
        config["workload"] = about.workload;
        let mut doc = json!({
            "caplab_version": env!("CARGO_PKG_VERSION"),
            "status": "running",
            "workload": about.name,
            "started_at": humantime::format_rfc3339_millis(started).to_string(),
            "command": std::env::args().collect::<Vec<_>>(),
            "config": config,
            "environment": self.environment,
            "schema": about.schema,
            "statements": about.statements,
            "files": {"hdr_log": "latency.hlog", "csv": "latency.csv"},
        });
        write_json(&out.join("result.json"), &doc)?;
        say(&format!(
            "Running {}{} against {} {}; results in {}",
            about.name,
            if args.loader.is_whole() {
                String::new()
            } else {
                format!(" as loader {}", args.loader)
            },
            self.target,
            describe_load(ecfg),
            out.display()
        ));

        let mut hlog_file = File::create(out.join("latency.hlog"))?;
        let mut serializer = V2DeflateSerializer::new();
        let hlog = hdrlog::begin(&mut hlog_file, &mut serializer, started)?;
        let csv = CsvLog::create(File::create(out.join("latency.csv"))?, hostname())?;
        let mut sink = Outputs {
            hlog,
            csv,
            csv_ops: names.iter().cloned().zip(about.tables).collect(),
            names: names.clone(),
            started,
            tag: String::new(),
            quiet: args.quiet,
            planned: ecfg.duration,
            warmup: ecfg.warmup,
        };

        let stop = Arc::new(AtomicBool::new(false));
        let on_signal = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                say("Stopping (Ctrl-C): finishing operations in flight, then writing results");
                on_signal.store(true, Ordering::Relaxed);
                if tokio::signal::ctrl_c().await.is_ok() {
                    say("Second Ctrl-C: exiting now; intervals so far are in the results directory");
                    std::process::exit(130);
                }
            }
        });
        let end = engine::run(workload, ecfg, stop, &mut sink).await;
        drop(sink);

        let summary = Summary::of(&names, &end.totals, end.measured, end.not_started);
        let mut histograms = serde_json::Map::new();
        for (n, t) in names.iter().zip(&end.totals) {
            histograms.insert(format!("{n}.response"), hdrlog::encode(&t.response).into());
            histograms.insert(format!("{n}.service"), hdrlog::encode(&t.service).into());
            histograms.insert(format!("{n}.error"), hdrlog::encode(&t.error_response).into());
        }
        let (status, code, message) = match &end.reason {
            EndReason::Completed => ("completed", 0u8, None),
            EndReason::Interrupted => ("interrupted", 130, None),
            EndReason::ClusterLost { last_errors } => (
                "failed",
                1,
                Some(format!(
                    "the cluster stopped answering: no operation succeeded for {}s (last second: {last_errors}); \
                     the run was stopped and everything measured until then is in {}",
                    args.give_up_after.as_secs(),
                    out.display()
                )),
            ),
            EndReason::OutputFailed(e) => ("failed", 1, Some(format!("results could not be written: {e}"))),
        };
        doc["status"] = status.into();
        doc["end_reason"] = message.clone().into();
        doc["finished_at"] = humantime::format_rfc3339_millis(SystemTime::now()).to_string().into();
        doc["summary"] = serde_json::to_value(&summary)?;
        doc["started_ops"] = end.started_ops.into();
        doc["histograms"] = histograms.into();
        write_json(&out.join("result.json"), &doc)?;
        println!("{}", summary.render());
        println!("Results: {}", out.display());
        if let Some(m) = message {
            eprintln!("error: {m}");
        }
        Ok(code)
    }
}

/// Writes every row of every partition with the profile's populate operation, flat out,
/// before measuring; progress goes to stderr, nothing to the results.
async fn populate(workload: &Arc<Dynamic>, op_name: &str, args: &RunArgs, base: &EngineConfig) -> Result<()> {
    let op = workload.op_index(op_name).expect("validated populate operation");
    let all = workload.populate_ops(op);
    let total = args.loader.share(all);
    say(&format!(
        "Populating: {} operations of '{op_name}' ({})",
        group(total as f64),
        if args.loader.is_whole() {
            "every row of every partition".to_string()
        } else {
            format!("loader {}'s share of {}", args.loader, group(all as f64))
        }
    ));
    struct Progress {
        quiet: bool,
        done: u64,
        errors: u64,
    }
    impl IntervalSink for Progress {
        fn interval(&mut self, iv: &Interval) -> Result<()> {
            let ok: u64 = iv.ops.iter().map(|o| o.ok).sum();
            self.done += ok;
            self.errors += iv.ops.iter().map(|o| o.error_count()).sum::<u64>();
            if !self.quiet && iv.length >= Duration::from_millis(200) {
                eprintln!(
                    "populate {:>10} done  {:>9} op/s",
                    group(self.done as f64),
                    group(ok as f64 / iv.length.as_secs_f64())
                );
            }
            Ok(())
        }
    }
    let cfg = EngineConfig {
        rate: 0.0,
        duration: None,
        ops: Some(total),
        warmup: Warmup::None,
        ..base.clone()
    };
    let mut progress = Progress {
        quiet: args.quiet,
        done: 0,
        errors: 0,
    };
    let begin = std::time::Instant::now();
    let end = engine::run(
        Arc::new(Sliced {
            inner: Arc::new(Populate {
                inner: workload.clone(),
                op,
            }),
            slice: args.loader,
        }),
        &cfg,
        Arc::new(AtomicBool::new(false)),
        &mut progress,
    )
    .await;
    if end.reason != EndReason::Completed || progress.errors > 0 {
        bail!(
            "populating failed: {} of {} operations succeeded, {} failed ({:?}); the measured run did not start",
            group(progress.done as f64),
            group(total as f64),
            group(progress.errors as f64),
            end.reason
        );
    }
    say(&format!("Populated in {:.1}s", begin.elapsed().as_secs_f64()));
    Ok(())
}

/// Where to send load: `--hosts`, else the running local nodes, else a local node started now.
fn targets(home: &Home, hosts: &[String]) -> Result<(Vec<String>, Vec<NodeState>)> {
    if !hosts.is_empty() {
        return Ok((hosts.to_vec(), Vec::new()));
    }
    let running: Vec<NodeState> = local::nodes(home)?
        .into_iter()
        .filter(|n| n.liveness() == Liveness::Running)
        .collect();
    if !running.is_empty() {
        return Ok((running.iter().map(|n| n.cql_addr().to_string()).collect(), running));
    }
    say("No --hosts and no local node running: starting one with 'caplab node start' defaults");
    #[derive(Parser)]
    struct Defaults {
        #[command(flatten)]
        start: StartArgs,
    }
    let spec = Defaults::parse_from(["caplab"]).start.spec()?;
    let started = local::start(home, &spec, StartOptions::default(), &mut |m| say(m))?;
    Ok((
        started.nodes.iter().map(|n| n.cql_addr().to_string()).collect(),
        started.nodes,
    ))
}

fn default_out(name: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp: String = stamp.chars().filter(|c| c.is_ascii_digit() || *c == 'T').collect();
    PathBuf::from("caplab-results").join(format!("{}-{name}", stamp.replace('T', "-")))
}

fn describe_load(c: &EngineConfig) -> String {
    let rate = if c.rate > 0.0 {
        format!("at {} op/s", group(c.rate))
    } else {
        "flat out".into()
    };
    let length = match (c.duration, c.ops) {
        (Some(d), _) => format!("for {}", humantime::format_duration(d)),
        (None, Some(n)) => format!("for {} ops", group(n as f64)),
        _ => String::new(),
    };
    let warm = match c.warmup {
        Warmup::None => String::new(),
        Warmup::Time(d) => format!(" after {} warm-up", humantime::format_duration(d)),
        Warmup::Ops(n) => format!(" after {} warm-up ops", group(n as f64)),
    };
    format!("{rate} {length}{warm}, {} in flight", c.concurrency)
}

async fn release_version(s: &scylla::client::session::Session) -> Option<String> {
    let r = s
        .query_unpaged("SELECT release_version FROM system.local", ())
        .await
        .ok()?;
    r.into_rows_result().ok()?.single_row::<(String,)>().ok().map(|r| r.0)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

fn environment(release: Option<&str>, nodes: &[NodeState]) -> serde_json::Value {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    json!({
        "client_host": hostname(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "ram_bytes": crate::cluster::jvm::total_ram(),
        "kernel": kernel.trim(),
        "cassandra_release_version": release,
        "local_nodes": nodes,
    })
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(doc)?).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes each interval to the interval log and CSV as it closes, and prints progress.
struct Outputs<'a> {
    hlog: IntervalLogWriter<'a, 'a, File, V2DeflateSerializer>,
    csv: CsvLog,
    names: Vec<String>,
    csv_ops: Vec<(String, String)>,
    started: SystemTime,
    tag: String,
    quiet: bool,
    planned: Option<Duration>,
    warmup: Warmup,
}

impl IntervalSink for Outputs<'_> {
    fn interval(&mut self, iv: &Interval) -> Result<()> {
        if iv.is_reported() {
            hdrlog::write_interval(&mut self.hlog, &self.names, iv, &mut self.tag)?;
            self.csv.write(self.started, iv, &self.csv_ops)?;
        }
        if !self.quiet && iv.length >= Duration::from_millis(200) {
            eprintln!("{}", self.progress(iv));
        }
        Ok(())
    }
}

impl Outputs<'_> {
    fn progress(&self, iv: &Interval) -> String {
        let secs = iv.length.as_secs_f64();
        let end = iv.start + iv.length;
        if iv.warmup && !iv.has_measured() {
            let warm: u64 = iv.ops.iter().map(|o| o.warmup_ops).sum();
            let of = match self.warmup {
                Warmup::Time(d) => format!("/{:.0}s", d.as_secs_f64()),
                _ => String::new(),
            };
            return format!(
                "warm-up {:>4.0}s{of}  {:>9} op/s",
                end.as_secs_f64(),
                group(warm as f64 / secs)
            );
        }
        let mut all = crate::metrics::OpStats::default();
        iv.ops.iter().for_each(|o| all.add(o));
        let h = &all.response;
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
        let elapsed = match (self.warmup, self.planned) {
            (Warmup::Time(w), Some(p)) => format!(
                "{:>4.0}s/{:.0}s",
                (end.saturating_sub(w)).as_secs_f64(),
                p.as_secs_f64()
            ),
            (_, Some(p)) => format!("{:>4.0}s/{:.0}s", end.as_secs_f64(), p.as_secs_f64()),
            _ => format!("{:>4.0}s", end.as_secs_f64()),
        };
        let mut line = format!(
            "{elapsed}  {:>9} op/s {:>10} row/s  p50 {:>7.2}  p99 {:>7.2}  p99.9 {:>7.2}  max {:>8.2} ms  errors {}",
            group(all.ok as f64 / secs),
            group(all.rows as f64 / secs),
            ms(0.5),
            ms(0.99),
            ms(0.999),
            h.max() as f64 / 1e6,
            all.error_count()
        );
        if all.late > 0 {
            line.push_str(&format!(
                "  BEHIND SCHEDULE: {} ops started >10 ms late (up to {:.0} ms): raise --concurrency or lower --rate",
                all.late,
                all.max_lag_ns as f64 / 1e6
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_warmups_parse() {
        assert_eq!(parse_rate("2000").unwrap(), 2000.0);
        assert_eq!(parse_rate("50k").unwrap(), 50_000.0);
        assert_eq!(parse_rate("1.5M").unwrap(), 1_500_000.0);
        assert!(parse_rate("fast").unwrap_err().contains("flat out"));
        assert!(parse_rate("-5").is_err());
        assert_eq!(parse_warmup("30s").unwrap(), Warmup::Time(Duration::from_secs(30)));
        assert_eq!(parse_warmup("10000").unwrap(), Warmup::Ops(10_000));
        assert_eq!(parse_warmup("0s").unwrap(), Warmup::None);
        assert!(parse_warmup("a while").is_err());
    }
}
