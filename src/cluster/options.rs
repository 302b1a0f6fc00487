//! The options of a local cluster, as `caplab node start` and experiment variants take them:
//! version, JDK, GC, heap, JVM options, cassandra.yaml overrides, nodes, addresses; and how
//! they become a `ClusterSpec`.

use anyhow::{Result, bail};
use clap::Args;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use super::{ClusterSpec, Gc, Jit, jars, java, jvm, yaml};
use crate::procfs;

#[derive(Debug, Clone, Args)]
pub struct NodeOptions {
    /// Cassandra version: any org.apache.cassandra:cassandra-all version on Maven Central
    /// (default 5.0.9; with --jars, the one their main jar's name says).
    #[arg(long = "version", value_name = "VERSION")]
    pub cassandra_version: Option<String>,
    /// Run Cassandra from these jars instead of Maven Central's: a folder holding cassandra-all
    /// (or apache-cassandra) and its dependencies, or a Cassandra source tree built with `ant
    /// jar` (build/apache-cassandra-*.jar and lib/), e.g. a build of your own.
    #[arg(long, value_name = "DIR")]
    pub jars: Option<PathBuf>,
    /// JDK to run on: a major version found on the machine (17, 21…) or a path to a JDK.
    /// Default: JAVA_HOME or `java` on PATH, if this Cassandra version supports it.
    #[arg(long, value_name = "MAJOR|PATH")]
    pub java: Option<String>,
    /// Run on a JDK this Cassandra version is not known to support.
    #[arg(long)]
    pub unsupported_java: bool,
    /// Garbage collector.
    #[arg(long, value_enum, default_value_t = Gc::G1)]
    pub gc: Gc,
    /// How the JVM compiles Cassandra: `tiered` as shipped (C1, then C2 for hot code), or `c1`
    /// alone (-XX:TieredStopAtLevel=1), to check behaviour rather than speed: C2 compiling is
    /// much of a short-lived node's CPU, so with C1 alone a node starts and serves a fixed rate on
    /// less CPU and runs slower flat out (bench/results/provisioning.md, "C1 alone"). The test
    /// suite's nodes run so.
    #[arg(long, value_enum, default_value_t = Jit::Tiered, env = "CAPLAB_JIT")]
    pub jit: Jit,
    /// Heap per node (e.g. 8G, 512M). Default: min(RAM/4, 8G) divided by the number of nodes.
    #[arg(long)]
    pub heap: Option<String>,
    /// Extra JVM option, after caplab's own so it wins (repeatable).
    #[arg(long = "jvm-opt", value_name = "OPT", allow_hyphen_values = true)]
    pub jvm_opts: Vec<String>,
    /// cassandra.yaml override KEY=VALUE; KEY is a dotted path (lists by index), VALUE is YAML (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Number of nodes, on consecutive loopback addresses, forming one cluster.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub nodes: u32,
    /// Address of node1; node i uses the address i-1 after it.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: Ipv4Addr,
    /// Local JMX port of node1; node i uses the port i-1 after it.
    #[arg(long, default_value_t = 7199)]
    pub jmx_port: u16,
    /// The nodes' `cluster_name` (nodes of different names refuse to join each other): two
    /// clusters caplab starts side by side on other addresses may keep the default.
    #[arg(long, default_value = "caplab")]
    pub cluster_name: String,
    /// Stop nodes running with a different configuration and start them with this one.
    #[arg(long)]
    pub restart: bool,
    /// Remove the nodes' data before starting (implies --restart for running nodes).
    #[arg(long)]
    pub wipe: bool,
    /// Seconds one node may take to accept CQL.
    #[arg(long, default_value_t = 240)]
    pub timeout: u64,
    /// Run the nodes on these cores only (e.g. 1, or 1-3), so caplab's client can have others
    /// (`caplab run --client-cpus 0`; an experiment's `pin: true` splits them so). Default: any.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// How late the kernel may wake the nodes' sleeping threads (Linux's timer slack, 50 µs by
    /// default), e.g. 1ms. Cassandra's idle request workers sleep 10 µs to 1 ms at a time while
    /// they wait for work, which costs an idle-ish 5.0 node about a third of a core or more;
    /// with 1ms, about half that, for a p50 up to 1 ms higher (bench/results/provisioning.md). The test
    /// suite's nodes run so. Default: the kernel's.
    #[arg(long, value_name = "DURATION", env = "CAPLAB_TIMER_SLACK", value_parser = parse_slack)]
    pub timer_slack: Option<u64>,
}

/// A timer slack (`1ms`, `200us`) in nanoseconds, at most one second.
fn parse_slack(s: &str) -> Result<u64, String> {
    match humantime::parse_duration(s.trim()) {
        Ok(d) if d > std::time::Duration::ZERO && d <= std::time::Duration::from_secs(1) => Ok(d.as_nanos() as u64),
        _ => Err(format!(
            "'{s}' is not a timer slack: write a length from 1ns to 1s, like 1ms or 200us"
        )),
    }
}

/// The release a node runs when none is named.
pub const DEFAULT_VERSION: &str = "5.0.9";

impl NodeOptions {
    /// The release: named, else the one --jars holds, else the default.
    pub fn version(&self) -> Result<String> {
        match (&self.cassandra_version, &self.jars) {
            (Some(v), _) => Ok(v.clone()),
            (None, Some(dir)) => jars::version_of(dir),
            (None, None) => Ok(DEFAULT_VERSION.to_string()),
        }
    }

    /// The cluster `caplab node start` starts with no flags.
    pub fn default_spec() -> Result<ClusterSpec> {
        default_options().spec()
    }

    /// Checks what the flags say on their own, whatever the machine has: cassandra.yaml
    /// overrides, the heap's form, room for the nodes' addresses and ports, and the collector
    /// against a JDK asked for by its major version. (`spec` then checks them against the
    /// machine: its JDKs and memory.)
    pub fn check(&self) -> Result<()> {
        for o in &self.overrides {
            yaml::Override::parse(o)?;
        }
        if let Some(h) = &self.heap {
            jvm::parse_heap(h)?;
        }
        if let Some(major) = self.java.as_deref().and_then(|j| j.parse::<u32>().ok()) {
            if !self.unsupported_java && (self.jars.is_none() || self.cassandra_version.is_some()) {
                java::check_major(self.cassandra_version.as_deref().unwrap_or(DEFAULT_VERSION), major)?;
            }
            jvm::Gc::flags(self.gc, major)?;
        }
        if u32::from(self.address).checked_add(self.nodes - 1).is_none()
            || u32::from(self.jmx_port) + self.nodes > 65535
        {
            bail!("--address/--jmx-port leave no room for {} nodes", self.nodes);
        }
        Ok(())
    }

    /// Validates the flags, on this machine, and turns them into a cluster specification.
    pub fn spec(&self) -> Result<ClusterSpec> {
        self.check()?;
        let version = self.version()?;
        let jdk = java::find(self.java.as_deref(), &version)?;
        if !self.unsupported_java {
            java::check_supported(&version, &jdk)?;
        }
        let heap = match &self.heap {
            Some(h) => {
                let heap = jvm::parse_heap(h)?;
                let ram = procfs::total_ram();
                // Heaps beyond the memory the machine has cannot all be resident: the node swaps
                // (or is killed) and measures the pager, not Cassandra.
                if heap.saturating_mul(u64::from(self.nodes)) > ram / 10 * 9 {
                    bail!(
                        "--heap {h} for {} node(s) is more than this machine's {} GiB of memory can hold with room for \
                         the rest of the JVM: choose a smaller --heap (the default, {}, is a quarter of it)",
                        self.nodes,
                        ram >> 30,
                        jvm::heap_flag_value(jvm::default_heap(ram, self.nodes))
                    );
                }
                heap
            }
            None => jvm::default_heap(procfs::total_ram(), self.nodes),
        };
        jvm::Gc::flags(self.gc, jdk.major)?;
        Ok(ClusterSpec {
            version,
            jars: self.jars.as_deref().map(jars::folder).transpose()?,
            jdk,
            gc: self.gc,
            jit: self.jit,
            heap,
            jvm_opts: self.jvm_opts.clone(),
            overrides: self.overrides.clone(),
            nodes: self.nodes,
            address: self.address,
            jmx_port: self.jmx_port,
            cluster_name: self.cluster_name.clone(),
            cpus: self
                .cpus
                .as_deref()
                .map(crate::cpus::parse)
                .transpose()?
                .unwrap_or_default(),
            timer_slack_ns: self.timer_slack,
        })
    }
}

/// The local node a run or a capacity search uses when it starts one itself (no `--hosts`):
/// the local nodes' own configuration (or `caplab node start`'s defaults when there are none),
/// with the version and cassandra.yaml overrides given here, fresh (`--wipe`) or restarted
/// (`--restart`) when asked. This is what lets one command line name the configuration, as
/// `caplab bisect` and a history's confirmation rerun it.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Local node (when no --hosts)")]
pub struct LocalNode {
    /// Cassandra version of the local node (one is started when none runs, by default 5.0.9);
    /// a node running another version is refused unless --restart or --wipe.
    #[arg(long = "version", value_name = "VERSION", conflicts_with = "hosts")]
    pub cassandra_version: Option<String>,
    /// Cassandra's jars for the local node instead of Maven Central's, as `caplab node start
    /// --jars` takes them: a folder of jars, or a source tree built with `ant jar`.
    #[arg(long, value_name = "DIR", conflicts_with = "hosts")]
    pub jars: Option<PathBuf>,
    /// cassandra.yaml override of the local node, KEY=VALUE as `caplab node start --set` takes
    /// it, in place of the node's own for that key (repeatable); a node running without it is
    /// refused unless --restart or --wipe.
    #[arg(long = "set", value_name = "KEY=VALUE", conflicts_with = "hosts")]
    pub overrides: Vec<String>,
    /// Stop local nodes running with another configuration and start them with this one (their
    /// data kept).
    #[arg(long, conflicts_with = "hosts")]
    pub restart: bool,
    /// Stop and remove every local node (data included) and start a fresh one for this run:
    /// each run on a new node, as a bisection or an experiment wants.
    #[arg(long, conflicts_with = "hosts")]
    pub wipe: bool,
}

impl LocalNode {
    /// Whether any of these options was given.
    pub fn given(&self) -> bool {
        self.cassandra_version.is_some()
            || self.jars.is_some()
            || !self.overrides.is_empty()
            || self.restart
            || self.wipe
    }

    /// The nodes to start: `base` (the local nodes' configuration; `caplab node start`'s
    /// defaults when `None`) with this version (on a JDK that runs it, unless the base's runs
    /// it too) and these overrides in place of the base's for the same keys.
    pub fn spec(&self, base: Option<&ClusterSpec>) -> Result<ClusterSpec> {
        let mut spec = match base {
            Some(b) => b.clone(),
            None => NodeOptions::default_spec()?,
        };
        // Jars named, or a version alone (from Maven Central, whatever jars ran before).
        let version = match (&self.jars, &self.cassandra_version) {
            (Some(dir), v) => {
                spec.jars = Some(jars::folder(dir)?);
                Some(match v {
                    Some(v) => v.clone(),
                    None => jars::version_of(dir)?,
                })
            }
            (None, Some(v)) => {
                spec.jars = None;
                Some(v.clone())
            }
            (None, None) => None,
        };
        if let Some(v) = version.as_ref().filter(|v| **v != spec.version) {
            let keep = java::check_supported(v, &spec.jdk).is_ok();
            if !keep {
                spec.jdk = java::find(None, v)?;
                java::check_supported(v, &spec.jdk)?;
            }
            jvm::Gc::flags(spec.gc, spec.jdk.major)?;
            spec.version = v.clone();
        }
        let mut asked = Vec::new();
        for o in &self.overrides {
            asked.push((yaml::Override::parse(o)?.path, o.clone()));
        }
        spec.overrides
            .retain(|o| yaml::Override::parse(o).map_or(true, |have| asked.iter().all(|(path, _)| *path != have.path)));
        spec.overrides.extend(asked.into_iter().map(|(_, o)| o));
        Ok(spec)
    }
}

fn default_options() -> NodeOptions {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        start: NodeOptions,
    }
    <Defaults as clap::Parser>::parse_from(["caplab"]).start
}
