//! Driving one measured run ("step"): choosing the workload from the options, connecting,
//! preparing the schema and data, then running the engine with the interval log, CSV,
//! progress and service-level judge attached, and writing result.json. `run` drives one
//! step; `capacity` drives many over the same prepared workload.

use anyhow::{Context, Result, bail};
use clap::Parser;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriter;
use scylla::client::session::Session;
use serde_json::json;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use super::args::{TelemetryArgs, WorkloadArgs};
use super::node::StartArgs;
use super::say;
use crate::client::{self, ClientOptions};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions};
use crate::cluster::node::{Liveness, NodeState};
use crate::cluster::nodetool::JmxTarget;
use crate::engine::{self, EndReason, EngineConfig, IntervalSink, LoaderSlice, Sliced, Warmup, Workload};
use crate::metrics::summary::{Summary, group};
use crate::metrics::{Interval, OpStats, csv::CsvLog, hdrlog};
use crate::sla::{Judge, Sla, SlaVerdict};
use crate::telemetry::{ServerReport, Watch, jmx};
use crate::workload::builtin;
use crate::workload::dynamic::{Dynamic, Populate};
use crate::workload::e1::{E1, E1Options, Kind};
use crate::workload::profile::Profile;
use crate::workload::stress;

/// The workload a run drives, settled before anything touches the cluster.
pub enum Chosen {
    E1(E1Options),
    Profile {
        profile: Box<Profile>,
        origin: String,
        /// What a cassandra-stress profile could not carry over exactly.
        notes: Vec<String>,
    },
}

impl Chosen {
    pub fn name(&self) -> String {
        match self {
            Chosen::E1(o) => o.kind.name().to_string(),
            Chosen::Profile { profile, origin, .. } => profile.name.clone().unwrap_or_else(|| origin.clone()),
        }
    }

    /// Reads and checks the workload options (and profile file); prints what a
    /// cassandra-stress profile does differently.
    pub fn from_args(args: &WorkloadArgs) -> Result<Chosen> {
        let chosen = choose(args)?;
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
        Ok(chosen)
    }

    /// Whether preparing the workload loads data first.
    pub fn populates(&self) -> bool {
        matches!(self, Chosen::Profile { profile, .. } if profile.populate.is_some())
    }
}

fn choose(args: &WorkloadArgs) -> Result<Chosen> {
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

/// Where load goes: the client options, the session, and what the results say about it.
pub struct Target {
    pub copts: ClientOptions,
    pub session: Arc<Session>,
    pub local_nodes: Vec<NodeState>,
    pub release: Option<String>,
}

impl Target {
    pub async fn connect(copts: ClientOptions, local_nodes: Vec<NodeState>) -> Result<Target> {
        let session = Arc::new(client::connect(&copts).await?);
        let release = release_version(&session).await;
        Ok(Target {
            copts,
            session,
            local_nodes,
            release,
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} (Cassandra {})",
            self.copts.hosts.join(","),
            self.release.as_deref().unwrap_or("?")
        )
    }

    fn environment(&self) -> serde_json::Value {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        json!({
            "client_host": hostname(),
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "ram_bytes": crate::cluster::jvm::total_ram(),
            "kernel": kernel.trim(),
            "cassandra_release_version": self.release,
            "local_nodes": self.local_nodes,
        })
    }
}

/// Where to send load: `--hosts`, else the running local nodes, else a local node started now.
pub fn targets(home: &Home, hosts: &[String]) -> Result<(Vec<String>, Vec<NodeState>)> {
    if !hosts.is_empty() {
        // Local nodes named by --hosts are watched like any other local node.
        let named: Vec<NodeState> = local::nodes(home)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.liveness() == Liveness::Running)
            .filter(|n| {
                let addr = n.cql_addr();
                hosts.iter().any(|h| {
                    let h = h.trim();
                    h == addr.to_string() || (h == addr.ip().to_string() && addr.port() == 9042)
                })
            })
            .collect();
        return Ok((hosts.to_vec(), named));
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

/// NodeTool targets for `--jmx`, using the jars of the cluster's Cassandra version.
pub fn jmx_targets(home: &Home, args: &TelemetryArgs, release: Option<&str>) -> Result<Vec<JmxTarget>> {
    if args.jmx.is_empty() {
        return Ok(Vec::new());
    }
    let Some(version) = release else {
        bail!(
            "--jmx: the cluster did not say its Cassandra version (system.local), so caplab cannot pick the nodetool to use"
        );
    };
    let classpath = local::nodetool_classpath(home, version, &mut |m| say(m))?;
    let java = crate::cluster::java::find(None, version)?.java;
    let workdir = std::env::temp_dir().join(format!("caplab-jmx-{}", std::process::id()));
    args.jmx
        .iter()
        .map(|e| {
            let (host, port) = e
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
                .with_context(|| format!("--jmx '{e}': write host:port, e.g. 10.0.0.1:7199"))?;
            Ok(JmxTarget {
                java: java.clone(),
                classpath: classpath.clone(),
                host,
                port,
                user: args.jmx_user.clone(),
                password: args.jmx_password.clone(),
                workdir: workdir.clone(),
            })
        })
        .collect()
}

/// What result.json and the CSV say about the workload.
#[derive(Clone)]
pub struct About {
    pub name: String,
    pub workload: serde_json::Value,
    pub schema: Vec<String>,
    pub statements: Vec<String>,
    /// Table of each operation type, for the CSV.
    pub tables: Vec<String>,
}

/// A workload whose schema exists on the target, ready to drive.
pub enum Prepared {
    E1(Arc<E1>, About),
    Profile(Arc<Dynamic>, About, Option<String>),
}

impl Prepared {
    /// Creates the schema (a rejected profile leaves none behind).
    pub async fn new(target: &Target, chosen: &Chosen) -> Result<Prepared> {
        let session = target.session.clone();
        Ok(match chosen {
            Chosen::E1(opts) => {
                let workload = Arc::new(E1::setup(session, opts.clone()).await?);
                let about = About {
                    name: opts.kind.name().into(),
                    workload: serde_json::to_value(opts)?,
                    schema: opts.ddl(),
                    statements: vec![opts.insert_cql()],
                    tables: vec![opts.table()],
                };
                Prepared::E1(workload, about)
            }
            Chosen::Profile { profile, origin, notes } => {
                let workload = Arc::new(Dynamic::setup(session, profile).await?);
                let about = About {
                    name: profile.name.clone().unwrap_or_else(|| origin.clone()),
                    workload: json!({"profile": origin, "definition": &**profile, "not_mapped": notes}),
                    schema: profile.schema.clone(),
                    statements: profile.operations.values().map(|o| o.cql.clone()).collect(),
                    tables: workload.op_tables(),
                };
                Prepared::Profile(workload, about, profile.populate.clone())
            }
        })
    }

    /// Runs the profile's populate phase, if it has one.
    pub async fn populate(&self, base: &EngineConfig, loader: LoaderSlice, quiet: bool) -> Result<()> {
        if let Prepared::Profile(workload, _, Some(op)) = self {
            populate(workload, op, base, loader, quiet).await?;
        }
        Ok(())
    }

    pub async fn drive(&self, target: &Target, step: &Step, stop: Arc<AtomicBool>) -> Result<StepOutcome> {
        match self {
            Prepared::E1(w, about) => step.drive(target, w.clone(), about.clone(), stop).await,
            Prepared::Profile(w, about, _) => step.drive(target, w.clone(), about.clone(), stop).await,
        }
    }
}

/// Sets `stop` on Ctrl-C (a second one exits at once); call inside the runtime.
pub fn stop_on_ctrl_c() -> Arc<AtomicBool> {
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
    stop
}

/// One measured run's settings.
pub struct Step {
    pub ecfg: EngineConfig,
    /// Client threads (for the record; the runtime already has them).
    pub threads: u32,
    pub out: PathBuf,
    pub loader: LoaderSlice,
    /// No per-second progress lines.
    pub quiet: bool,
    /// Print each SLA window's verdict as it closes.
    pub show_windows: bool,
    pub sla: Option<Sla>,
    /// Extra fields for result.json's `config` (e.g. the capacity step).
    pub config: serde_json::Value,
    /// Print the summary to stdout (a single run) or not (capacity steps print their own line).
    pub print_summary: bool,
    /// JMX endpoints to read GCInspector from, before and after the run.
    pub jmx: Vec<JmxTarget>,
}

/// What one measured run came to.
pub struct StepOutcome {
    pub reason: EndReason,
    pub summary: Summary,
    pub sla: Option<SlaVerdict>,
    /// Exit code for a single run: 0 done (and SLA met), 1 failed, 130 interrupted.
    pub code: u8,
    pub message: Option<String>,
}

impl StepOutcome {
    /// Successful operations per second over the measured window.
    pub fn achieved(&self) -> f64 {
        self.summary.total.op_rate
    }
}

impl Step {
    pub async fn drive<W: Workload>(
        &self,
        target: &Target,
        workload: Arc<W>,
        about: About,
        stop: Arc<AtomicBool>,
    ) -> Result<StepOutcome> {
        let (ecfg, out) = (&self.ecfg, &self.out);
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create the results directory {}", out.display()))?;
        let workload = Arc::new(Sliced {
            inner: workload,
            slice: self.loader,
        });
        let names = workload.op_names();
        let started = SystemTime::now();
        let mut config = json!({
            "client": target.copts,
            "engine": {
                "rate": ecfg.rate, "concurrency": ecfg.concurrency, "threads": self.threads,
                "duration_s": ecfg.duration.map(|d| d.as_secs_f64()), "ops": ecfg.ops,
                "warmup": format!("{:?}", ecfg.warmup), "interval_s": 1.0,
                "loader": self.loader.to_string(),
            },
            "workload": about.workload,
            "sla": self.sla,
        });
        if let (Some(c), Some(extra)) = (config.as_object_mut(), self.config.as_object()) {
            c.extend(extra.clone());
        }
        let mut doc = json!({
            "caplab_version": env!("CARGO_PKG_VERSION"),
            "status": "running",
            "workload": about.name,
            "started_at": humantime::format_rfc3339_millis(started).to_string(),
            "command": std::env::args().collect::<Vec<_>>(),
            "config": config,
            "environment": target.environment(),
            "schema": about.schema,
            "statements": about.statements,
            "files": {"hdr_log": "latency.hlog", "csv": "latency.csv"},
        });
        write_json(&out.join("result.json"), &doc)?;
        say(&format!(
            "Running {}{} against {} {}; results in {}",
            about.name,
            if self.loader.is_whole() {
                String::new()
            } else {
                format!(" as loader {}", self.loader)
            },
            target.describe(),
            describe_load(ecfg),
            out.display()
        ));

        let mut hlog_file = File::create(out.join("latency.hlog"))?;
        let mut serializer = V2DeflateSerializer::new();
        let hlog = hdrlog::begin(&mut hlog_file, &mut serializer, started)?;
        let csv = CsvLog::create(File::create(out.join("latency.csv"))?, hostname())?;
        let target_rate = (ecfg.rate > 0.0).then_some(ecfg.rate);
        let mut sink = Outputs {
            hlog,
            csv,
            csv_ops: names.iter().cloned().zip(about.tables).collect(),
            names: names.clone(),
            started,
            tag: String::new(),
            quiet: self.quiet,
            show_windows: self.show_windows,
            windows_shown: 0,
            planned: ecfg.duration,
            warmup: ecfg.warmup,
            judge: self.sla.as_ref().map(|s| Judge::new(s, target_rate)),
            watch: Watch::new(&target.local_nodes),
            window: None,
        };
        if !self.jmx.is_empty() {
            // Starts GCInspector's interval (it reports since its previous reading).
            let targets = self.jmx.clone();
            tokio::task::spawn_blocking(move || jmx::read(&targets)).await?;
        }
        let end = engine::run(workload, ecfg, stop, &mut sink).await;
        let verdict = sink.judge.take().map(Judge::finish);
        let server = match (sink.watch.take(), sink.window) {
            (Some(w), Some((from, to))) => w.report(started + from, started + to),
            (Some(_), None) => ServerReport::not_collected("nothing was measured"),
            (None, _) => ServerReport::not_collected(if self.jmx.is_empty() {
                "the target is not a node caplab runs on this machine: server GC and CPU are read from local \
                 nodes' GC logs and /proc; give --jmx HOST:PORT to read GC from Cassandra over JMX"
            } else {
                "the target is not a node caplab runs on this machine: CPU, RSS and the GC log are read for \
                 local nodes only; GC over JMX is below"
            }),
        };
        if let Some(v) = &verdict
            && self.show_windows
        {
            // Windows closed by the end of the run rather than by a later interval.
            for w in v.windows.iter().skip(sink.windows_shown) {
                eprintln!("  {}", w.line());
            }
        }
        drop(sink);

        let summary = Summary::of(&names, &end.totals, end.measured, end.not_started);
        let mut histograms = serde_json::Map::new();
        for (n, t) in names.iter().zip(&end.totals) {
            histograms.insert(format!("{n}.response"), hdrlog::encode(&t.response).into());
            histograms.insert(format!("{n}.service"), hdrlog::encode(&t.service).into());
            histograms.insert(format!("{n}.error"), hdrlog::encode(&t.error_response).into());
        }
        let (status, mut code, message) = match &end.reason {
            EndReason::Completed => ("completed", 0u8, None),
            EndReason::Interrupted => ("interrupted", 130, None),
            EndReason::ClusterLost { last_errors } => (
                "failed",
                1,
                Some(format!(
                    "the cluster stopped answering: no operation succeeded for {}s (last second: {last_errors}); \
                     the run was stopped and everything measured until then is in {}",
                    ecfg.give_up_after.as_secs(),
                    out.display()
                )),
            ),
            EndReason::OutputFailed(e) => ("failed", 1, Some(format!("results could not be written: {e}"))),
        };
        if code == 0 && verdict.as_ref().is_some_and(|v| !v.pass) {
            code = 1;
        }
        doc["status"] = status.into();
        doc["end_reason"] = message.clone().into();
        doc["finished_at"] = humantime::format_rfc3339_millis(SystemTime::now()).to_string().into();
        doc["summary"] = serde_json::to_value(&summary)?;
        doc["sla"] = serde_json::to_value(&verdict)?;
        let mut server = server;
        if !self.jmx.is_empty() {
            let targets = self.jmx.clone();
            server.jmx = tokio::task::spawn_blocking(move || jmx::read(&targets)).await?;
        }
        doc["server"] = serde_json::to_value(&server)?;
        doc["started_ops"] = end.started_ops.into();
        doc["histograms"] = histograms.into();
        write_json(&out.join("result.json"), &doc)?;
        if self.print_summary {
            println!("{}", summary.render());
            println!("{}", server.render());
            if let Some(v) = &verdict {
                println!("{}", v.render());
            }
            println!("Results: {}", out.display());
        }
        Ok(StepOutcome {
            reason: end.reason,
            summary,
            sla: verdict,
            code,
            message,
        })
    }
}

/// Writes every row of every partition with the profile's populate operation, flat out,
/// before measuring; progress goes to stderr, nothing to the results.
async fn populate(
    workload: &Arc<Dynamic>,
    op_name: &str,
    base: &EngineConfig,
    loader: LoaderSlice,
    quiet: bool,
) -> Result<()> {
    let op = workload.op_index(op_name).expect("validated populate operation");
    let all = workload.populate_ops(op);
    let total = loader.share(all);
    say(&format!(
        "Populating: {} operations of '{op_name}' ({})",
        group(total as f64),
        if loader.is_whole() {
            "every row of every partition".to_string()
        } else {
            format!("loader {loader}'s share of {}", group(all as f64))
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
        quiet,
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
            slice: loader,
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

pub fn default_out(name: &str) -> PathBuf {
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

async fn release_version(s: &Session) -> Option<String> {
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

/// Writes JSON through a temporary file, so a reader never sees half a document.
pub fn write_json(path: &Path, doc: &serde_json::Value) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(doc)?).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes each interval to the interval log and CSV as it closes, judges it against the
/// service level, and prints progress.
struct Outputs<'a> {
    hlog: IntervalLogWriter<'a, 'a, File, V2DeflateSerializer>,
    csv: CsvLog,
    names: Vec<String>,
    csv_ops: Vec<(String, String)>,
    started: SystemTime,
    tag: String,
    quiet: bool,
    show_windows: bool,
    windows_shown: usize,
    planned: Option<Duration>,
    warmup: Warmup,
    judge: Option<Judge>,
    watch: Option<Watch>,
    /// The measured window, since the run started.
    window: Option<(Duration, Duration)>,
}

impl IntervalSink for Outputs<'_> {
    fn interval(&mut self, iv: &Interval) -> Result<()> {
        let end = iv.start + iv.length;
        if !iv.warmup {
            self.window.get_or_insert((iv.start, end)).1 = end;
        }
        let server = self.watch.as_mut().map(|w| {
            let s = w.tick(self.started + end, iv.length.as_secs_f64(), !iv.warmup);
            (s.gc_pause_ms, s.server_cpu_cores)
        });
        if iv.is_reported() {
            hdrlog::write_interval(&mut self.hlog, &self.names, iv, &mut self.tag)?;
            self.csv.write(self.started, iv, &self.csv_ops, server)?;
        }
        if !self.quiet && iv.length >= Duration::from_millis(200) {
            let mut line = self.progress(iv);
            if let Some((gc_ms, cpu)) = server {
                line.push_str(&format!("  server gc {gc_ms:.0} ms cpu {cpu:.2}"));
            }
            eprintln!("{line}");
        }
        if let Some(judge) = &mut self.judge {
            for w in judge.feed(iv) {
                if self.show_windows {
                    eprintln!("  {}", w.line());
                }
                self.windows_shown += 1;
            }
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
        let mut all = OpStats::default();
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
