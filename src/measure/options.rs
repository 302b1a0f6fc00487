//! The options of a measurement, as `caplab run` and `caplab capacity` take them on the
//! command line and experiment files take them as YAML keys: the run's length and rate (or the
//! capacity search's plan), which workload, how to reach the cluster, how the client generates
//! load, the service level to judge, and where results go.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

pub use super::rate::Rate;
use super::{JmxOptions, Load, WorkloadOptions};
use crate::client::{self, ClientOptions};
use crate::cluster::nodetool::JmxTls;
pub use crate::engine::schedule::parse_rate;
use crate::engine::{Shape, Warmup};
use crate::sla::{Sla, parse_share};

/// Everything a command that drives load needs besides its own length and rate settings.
#[derive(Debug, Clone, Args)]
pub struct DriveOptions {
    /// Results directory. Default: caplab-results/<time>-<workload>[-loader-i-of-n]-<pid>
    /// (capacity: <time>-capacity-<workload>…). One that already holds results is refused.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the results already in --out (caplab's files only).
    #[arg(long, requires = "out")]
    pub force: bool,
    /// No per-second progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run caplab's client on these cores only (e.g. 0), apart from the nodes' (`caplab node
    /// start --cpus 1`), so the two stop taking turns on every core.
    #[arg(long, value_name = "LIST")]
    pub client_cpus: Option<String>,
    #[command(flatten)]
    pub workload: WorkloadOptions,
    #[command(flatten)]
    pub load: LoadOptions,
    #[command(flatten)]
    pub sla: SlaOptions,
    #[command(flatten)]
    pub conn: ConnectOptions,
    #[command(flatten)]
    pub node: crate::cluster::options::LocalNode,
    #[command(flatten)]
    pub telemetry: TelemetryOptions,
    /// A fault during the measured window (each step's, in a capacity search), on a node caplab
    /// runs on this machine (repeatable): 'pause node1 at 5s for 3s', 'kill node2 at 10s for 20s'
    /// (restarted after 20 s), 'stop NODE at T [for D]', 'drain NODE at T [for D]', 'restart NODE
    /// at T', 'upgrade NODE at T to 6.0-alpha2' (drained, stopped and started on that version;
    /// one node at a time), 'delay NODE at T for D by 50ms', 'blackhole NODE at T for D'. Each is undone after
    /// its length, or at the end (and on Ctrl-C or an error); the results say when the client
    /// saw it, when it recovered, and what failed.
    #[arg(long = "fault", alias = "faults", value_name = "SPEC", value_parser = crate::faults::FaultSpec::parse)]
    pub faults: Vec<crate::faults::FaultSpec>,
    /// A label for the results and the history (repeatable): --label commit=abc123 --label
    /// build=nightly. Kept in result.json (capacity.json); not part of what makes a series.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    /// Once the window (and any fault) is over, read back every write the cluster acknowledged
    /// and count rows missing or wrong (E1's insert and batch workloads; counter workloads: each
    /// row's total against its acknowledged increments; claims such as lwt's: each row won is
    /// there, won once); exit 1 if any is. A share reads back that share of the writes, the
    /// same ones each time: --validate 10%.
    #[arg(long, value_name = "SHARE", num_args = 0..=1, default_missing_value = "all",
          value_parser = crate::readback::parse_fraction)]
    pub validate: Option<f64>,
    /// The read-back's consistency (default: the write's where two of it overlap, R + W > RF;
    /// else ALL).
    #[arg(long, value_name = "LEVEL", requires = "validate")]
    pub validate_consistency: Option<String>,
    #[command(flatten)]
    pub metrics: crate::live::MetricsOptions,
}

impl DriveOptions {
    /// What `--validate` asks (None: no read-back).
    pub fn validation(&self) -> Result<Option<crate::readback::ValidateOptions>> {
        let Some(fraction) = self.validate else { return Ok(None) };
        let consistency = match &self.validate_consistency {
            Some(c) => Some(client::parse_consistency(c)?),
            None => None,
        };
        Ok(Some(crate::readback::ValidateOptions { fraction, consistency }))
    }

    /// The results directory: --out (checked), or a new one named after `name`.
    pub fn out_dir(&self, name: &str) -> Result<PathBuf> {
        match &self.out {
            Some(dir) => {
                crate::measure::out::claim(dir, self.force)?;
                Ok(dir.clone())
            }
            None => Ok(crate::measure::out::default_out(name, self.workload.loader)),
        }
    }

    /// How the client generates load.
    pub fn load(&self) -> Load {
        Load {
            concurrency: self.load.concurrency as usize,
            threads: self.load.threads,
            give_up_after: self.load.give_up_after,
            request_timeout: self.conn.timeout,
            drain: self.load.drain,
        }
    }

    /// The JMX endpoints to read GC from.
    pub fn jmx(&self) -> JmxOptions {
        JmxOptions {
            endpoints: self.telemetry.jmx.clone(),
            user: self.telemetry.jmx_user.clone(),
            password: self.telemetry.jmx_password.clone(),
            tls: self.telemetry.jmx_tls(),
        }
    }
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Server telemetry")]
pub struct TelemetryOptions {
    /// JMX endpoints (host:port, comma-separated) to read Cassandra's GCInspector from, before
    /// and after the run (`nodetool gcstats`), and, for a cluster caplab does not run, its GC,
    /// CPU, heap, JIT and compaction once a second. Local caplab nodes are watched without it,
    /// from their GC logs and /proc.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    pub jmx: Vec<String>,
    /// JMX user, for endpoints that ask for one (a readonly role is enough).
    #[arg(long, requires = "jmx")]
    pub jmx_user: Option<String>,
    /// Its password (prefer the environment: a command line's shows in the process list).
    #[arg(long, env = "CAPLAB_JMX_PASSWORD", hide_env_values = true, requires = "jmx_user")]
    pub jmx_password: Option<String>,
    /// JMX over TLS, as Cassandra serves it with `com.sun.management.jmxremote.ssl=true` (the
    /// registry too). Trusts what the JDK trusts unless --jmx-truststore says otherwise.
    #[arg(long, requires = "jmx")]
    pub jmx_ssl: bool,
    /// Trust store (PKCS12 or JKS) holding the endpoints' certificates or their CA; implies
    /// --jmx-ssl.
    #[arg(long, value_name = "FILE", requires = "jmx")]
    pub jmx_truststore: Option<PathBuf>,
    /// The trust store's password (used only with --jmx-truststore).
    #[arg(long, env = "CAPLAB_JMX_TRUSTSTORE_PASSWORD", hide_env_values = true)]
    pub jmx_truststore_password: Option<String>,
    /// Key store with caplab's client certificate, for endpoints that ask for one
    /// (`com.sun.management.jmxremote.ssl.need.client.auth=true`); implies --jmx-ssl.
    #[arg(long, value_name = "FILE", requires = "jmx")]
    pub jmx_keystore: Option<PathBuf>,
    /// The key store's password (used only with --jmx-keystore).
    #[arg(long, env = "CAPLAB_JMX_KEYSTORE_PASSWORD", hide_env_values = true)]
    pub jmx_keystore_password: Option<String>,
    /// Profile each local node with async-profiler over the measured window only (each step
    /// separately): cpu, wall, alloc, lock, each with an optional interval (cpu:1ms,
    /// alloc:256k), itimer or ctimer to force a CPU sampler, jfr to keep the recording.
    /// Writes flame graphs, collapsed stacks and heatmaps under <out>/profile/<node>/.
    #[arg(long, value_name = "EVENTS", value_parser = crate::server_profile::ProfileSpec::parse)]
    pub server_profile: Option<crate::server_profile::ProfileSpec>,
    /// Server facts to collect: auto (GC logs, /proc and flushes of the nodes caplab runs here,
    /// and every node's thread pools and dropped messages over CQL), cql (over CQL only, as for
    /// a cluster caplab does not run), none.
    #[arg(long, value_enum, default_value = "auto")]
    pub server_facts: ServerFacts,
}

impl TelemetryOptions {
    /// The TLS settings, when any of --jmx-ssl, --jmx-truststore or --jmx-keystore is given.
    /// Relative store paths are taken from the working directory.
    pub fn jmx_tls(&self) -> Option<JmxTls> {
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        (self.jmx_ssl || self.jmx_truststore.is_some() || self.jmx_keystore.is_some()).then(|| JmxTls {
            truststore: self.jmx_truststore.as_ref().map(absolute),
            // A password without its store (one left in the environment) is not used.
            truststore_password: self.jmx_truststore.as_ref().and(self.jmx_truststore_password.clone()),
            keystore: self.jmx_keystore.as_ref().map(absolute),
            keystore_password: self.jmx_keystore.as_ref().and(self.jmx_keystore_password.clone()),
        })
    }
}

/// `--server-facts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServerFacts {
    Auto,
    Cql,
    None,
}

impl TelemetryOptions {
    /// The local nodes to watch (GC logs, /proc) among `local`: all of them unless told not to.
    pub fn watched(&self, local: Vec<crate::cluster::node::NodeState>) -> Vec<crate::cluster::node::NodeState> {
        if self.server_facts == ServerFacts::Auto {
            local
        } else {
            Vec::new()
        }
    }

    /// Whether to read every node's thread pools over CQL.
    pub fn pools(&self) -> bool {
        self.server_facts != ServerFacts::None
    }
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Connection")]
pub struct ConnectOptions {
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
    /// Connections per host. Default: one per client thread (a connection carries what one
    /// thread can drive, and fewer connections mean fewer, fuller writes and wake-ups).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub connections: Option<u32>,
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
    #[arg(long, value_parser = parse_duration, default_value = "12s")]
    pub timeout: Duration,
    /// Retry a failed request on another node up to this many times (counted in the results).
    /// Default 0: every failure is reported as the server gave it.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
}

impl ConnectOptions {
    /// The driver's options; `threads` is the client runtime's, which sets the default
    /// connection count.
    pub fn options(&self, hosts: Vec<String>, threads: u32) -> Result<ClientOptions> {
        Ok(ClientOptions {
            hosts,
            dc: self.dc.clone(),
            consistency: client::parse_consistency(&self.consistency)?,
            connections_per_host: self.connections.unwrap_or(threads.max(1)) as usize,
            compression: self.compression,
            user: self.user.clone(),
            password: self.password.clone(),
            request_timeout: self.timeout,
            connect_timeout: Duration::from_secs(3),
            tls: self.tls,
            tls_ca: self.tls_ca.clone(),
            tls_insecure: self.tls_insecure,
            retries: self.retries,
            via: Vec::new(),
        })
    }
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Load")]
pub struct LoadOptions {
    /// Operations in flight at most.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: u32,
    /// Client threads (every one is a core taken from a server on the same machine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// End the run when nothing has succeeded (and something failed) for this long.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub give_up_after: Duration,
    /// At the end, or when stopped (Ctrl-C, SIGTERM), operations in flight get at most this
    /// long to finish; the rest are counted abandoned. A stop then writes results and exits:
    /// within --drain + 10 s in all (Kubernetes' default grace period is 30 s).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub drain: Duration,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Service level")]
pub struct SlaOptions {
    /// Latency objectives every window must meet, e.g. 'p99.9<100ms/10s' or
    /// 'p99<20ms/10s,p50<5ms/10s' (percentile of response time < bound / window).
    #[arg(long, value_name = "OBJECTIVES")]
    pub sla: Option<String>,
    /// Share of the target rate each window must achieve.
    #[arg(long, value_name = "SHARE", value_parser = parse_share, default_value = "97%")]
    pub sla_rate: f64,
    /// Share of a window's operations that may fail (errors and timeouts).
    #[arg(long, value_name = "SHARE", value_parser = parse_share, default_value = "0.1%")]
    pub sla_errors: f64,
}

impl LoadOptions {
    /// The client's runtime: with one thread, a single-threaded scheduler (no cross-thread
    /// wake-ups or work stealing per operation); otherwise one worker per thread.
    pub fn runtime(&self) -> Result<tokio::runtime::Runtime> {
        let mut b = if self.threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(self.threads as usize);
            b
        };
        b.enable_all()
            .build()
            .map_err(|e| anyhow::anyhow!("cannot start the client runtime: {e}"))
    }
}

impl SlaOptions {
    pub fn build(&self) -> Result<Option<Sla>> {
        self.sla
            .as_deref()
            .map(|s| Sla::parse(s, self.sla_rate, self.sla_errors))
            .transpose()
    }
}

/// A length of time: `30s`, `5m`, `1h30m`, `250ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|_| format!("'{s}' is not a length of time: write a number and a unit, like 30s, 5m, 1h30m or 250ms"))
}

/// How long an automatic warm-up may wait for the run to settle, unless `--warmup-max` says.
pub const WARMUP_MAX: Duration = Duration::from_secs(300);

/// A factor above 1 (`--knee-factor 3`).
pub fn parse_factor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 1.0 && f.is_finite() => Ok(f),
        _ => Err(format!(
            "'{s}' is not a factor above 1: write how many times the low-load p99, like 3 or 1.5"
        )),
    }
}

/// `auto`, a time (`30s`) or a number of operations (`10000`); `0` or `0s` for none. An
/// automatic warm-up's maximum is `WARMUP_MAX` until `resolve_warmup` applies `--warmup-max`.
pub fn parse_warmup(s: &str) -> Result<Warmup, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(Warmup::Auto { max: WARMUP_MAX });
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok(if n == 0 { Warmup::None } else { Warmup::Ops(n) });
    }
    match humantime::parse_duration(t) {
        Ok(d) if d.is_zero() => Ok(Warmup::None),
        Ok(d) => Ok(Warmup::Time(d)),
        Err(_) => Err(format!(
            "'{s}' is not a warm-up: write auto (until the run settles), a time (30s, 2m), a number of operations \
             (10000), or 0 for none"
        )),
    }
}

/// The warm-up `--warmup` and `--warmup-max` ask for together: a maximum only bounds an
/// automatic warm-up.
pub fn resolve_warmup(warmup: Warmup, max: Option<Duration>) -> Result<Warmup> {
    match (warmup, max) {
        (Warmup::Auto { .. }, Some(max)) if max < Duration::from_secs(crate::steady::settle::WINDOW as u64) => {
            anyhow::bail!(
                "--warmup-max {} is shorter than the {} s an automatic warm-up judges at a time: give at least {}s",
                humantime::format_duration(max),
                crate::steady::settle::WINDOW,
                crate::steady::settle::WINDOW
            )
        }
        (Warmup::Auto { .. }, Some(max)) => Ok(Warmup::Auto { max }),
        (w, Some(_)) => anyhow::bail!(
            "--warmup-max bounds an automatic warm-up, but --warmup is {}: give --warmup auto, or drop --warmup-max",
            w.describe()
        ),
        (w, None) => Ok(w),
    }
}

/// `caplab run`'s options.
#[derive(Debug, Clone, Args)]
pub struct RunOptions {
    /// Length of the measured window (after warm-up), e.g. 60s, 5m. Default 60s unless -n.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Number of measured operations instead of a duration.
    #[arg(short = 'n', long = "count", conflicts_with = "duration")]
    pub ops: Option<u64>,
    /// Excluded from results: auto (until throughput, or service times at a fixed rate, have no
    /// trend and bounded variation, and local nodes' JIT has gone quiet), a time (30s), a
    /// number of operations (10000), or 0.
    #[arg(long, value_parser = parse_warmup, default_value = "auto")]
    pub warmup: Warmup,
    /// The longest an automatic warm-up waits; a run that has not settled by then is measured
    /// anyway and marked not steady.
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    pub warmup_max: Option<Duration>,
    /// Operations per second on an open-model schedule (2000, 50k; 0 runs flat out), or a
    /// shape the rate follows after the warm-up: ramp:1k..40k/5m, steps:5k,10k,20k/2m,
    /// sine:20k±10k/60s, burst:10k,+30k for 5s every 60s.
    #[arg(long, value_parser = Rate::parse, default_value = "0")]
    pub rate: Rate,
    /// Follows a rate trace instead of --rate: one rate a second, a line each (or `second,rate`
    /// lines, as a dashboard exports them); the last rate holds after it. (--replay sends an
    /// application's captured statements.)
    #[arg(long, value_name = "FILE", conflicts_with = "rate")]
    pub rate_file: Option<PathBuf>,
    /// Along a shape, the knee is where the percentile --knee-on rises past this many times its
    /// low-load level and stays there, or the run stops keeping up (docs/run.md).
    #[arg(long, value_name = "FACTOR", default_value_t = 3.0, value_parser = parse_factor)]
    pub knee_factor: f64,
    /// The percentile the knee is judged on.
    #[arg(long, value_enum, default_value = "p99")]
    pub knee_on: crate::measure::phases::Percentile,
    /// Start the schedule (warm-up first) at this wall-clock time, so that loaders started
    /// apart begin in the same second: a UTC time (2026-11-24T21:30:00Z), Unix seconds, or
    /// next:30s (the next multiple of 30 s). Setup and populate come before it. Default: the
    /// next whole second.
    #[arg(long, value_name = "TIME", value_parser = crate::engine::StartAt::parse)]
    pub start_at: Option<crate::engine::StartAt>,
    /// Not a flag: other runs of this process to start the schedule with, in one second once
    /// all are ready (a duet's two sides).
    #[arg(skip)]
    pub meet: Option<std::sync::Arc<crate::engine::Meeting>>,
    /// Also write every operation, warm-up included, as a Parquet row (alone: the results
    /// directory's operations.parquet): intended and actual start, end, response and service
    /// time, operation, statement, partition or token, error, loader (docs/run.md).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub ops_parquet: Option<Option<PathBuf>>,
    /// Send this share of the measured operations with the server's tracing on (1%, 0.01),
    /// and after the window read the traces of those slower than THRESHOLD (default: their
    /// type's p99 over the window) from system_traces: the slowest 20, each told as time
    /// outside the server, waiting for a replica, or inside the server (docs/run.md).
    #[arg(long, value_name = "RATE[,THRESHOLD]", value_parser = crate::engine::TraceSample::parse)]
    pub trace_slow: Option<crate::engine::TraceSample>,
    #[command(flatten)]
    pub common: DriveOptions,
}

impl RunOptions {
    /// The rate asked: `--rate`, or the trace `--rate-file` names.
    pub fn rate(&self) -> Result<Rate> {
        let Some(path) = &self.rate_file else {
            return Ok(self.rate.clone());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read --rate-file {}: {e}", path.display()))?;
        Ok(Rate::of(
            Shape::from_trace(&text, &path.display().to_string()).map_err(anyhow::Error::msg)?,
        ))
    }
}

/// Parses `KEY=VALUE` (`--label`): a key of letters, digits, `_`, `-` and `.`.
pub fn parse_label(text: &str) -> std::result::Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not KEY=VALUE, e.g. --label commit=abc123"))?;
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
        return Err(format!(
            "label key '{k}' must be letters, digits, '_', '-' or '.', e.g. --label commit=abc123"
        ));
    }
    Ok((k.to_string(), v.to_string()))
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
        assert_eq!(parse_warmup("auto").unwrap(), Warmup::Auto { max: WARMUP_MAX });
        let err = parse_warmup("a while").unwrap_err();
        assert!(err.contains("write auto") && err.contains("30s"), "{err}");
        let two = Some(Duration::from_secs(120));
        assert_eq!(
            resolve_warmup(Warmup::Auto { max: WARMUP_MAX }, two).unwrap(),
            Warmup::Auto {
                max: Duration::from_secs(120)
            }
        );
        let err = resolve_warmup(Warmup::Time(Duration::from_secs(30)), two)
            .unwrap_err()
            .to_string();
        assert!(err.contains("give --warmup auto, or drop --warmup-max"), "{err}");
        assert!(resolve_warmup(Warmup::Auto { max: WARMUP_MAX }, Some(Duration::from_secs(5))).is_err());
        assert!(parse_duration("-5s").unwrap_err().contains("like 30s, 5m"));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
    }

    #[test]
    fn labels_are_key_value_and_name_the_fix() {
        assert_eq!(parse_label("commit=abc123"), Ok(("commit".into(), "abc123".into())));
        assert_eq!(parse_label("build.kind=a=b"), Ok(("build.kind".into(), "a=b".into())));
        assert!(parse_label("commit").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_label("=x").unwrap_err().contains("must be letters"));
        assert!(parse_label("a b=x").unwrap_err().contains("must be letters"));
    }
}
