//! `caplab node start|status|stop|logs|wipe`.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use std::net::Ipv4Addr;
use std::time::Duration;

use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::{Liveness, NodeState, dir_size, tail};
use crate::cluster::{ClusterSpec, Gc, Home, java, jvm, yaml};
use crate::console::say;
use crate::procfs;

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Start a local cluster (one node unless --nodes) and return once it accepts CQL.
    Start(StartArgs),
    /// Show each node's state, configuration and resource use.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Stop nodes gracefully (drain, SIGTERM, SIGKILL after a timeout). All nodes if none named.
    Stop {
        nodes: Vec<String>,
        /// Skip `nodetool drain` (faster; unflushed memtables are replayed from the commit log).
        #[arg(long)]
        no_drain: bool,
        /// Seconds to wait after SIGTERM before SIGKILL.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Print the end of a node's log (system.log unless --gc or --console).
    Logs {
        /// Node name (default: node1).
        node: Option<String>,
        /// Number of lines.
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
        /// The JVM's unified GC log instead.
        #[arg(long, conflicts_with = "console")]
        gc: bool,
        /// The JVM's stdout/stderr instead.
        #[arg(long)]
        console: bool,
    },
    /// Remove nodes' data, logs and configuration. All nodes if none named.
    Wipe {
        nodes: Vec<String>,
        /// Stop running nodes first instead of refusing.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Cassandra version: any org.apache.cassandra:cassandra-all version on Maven Central.
    #[arg(long = "version", value_name = "VERSION", default_value = "5.0.9")]
    pub cassandra_version: String,
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
}

impl StartArgs {
    /// The cluster `caplab node start` starts with no flags.
    pub fn default_spec() -> Result<ClusterSpec> {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            start: StartArgs,
        }
        <Defaults as clap::Parser>::parse_from(["caplab"]).start.spec()
    }

    /// Validates the flags and turns them into a cluster specification.
    pub fn spec(&self) -> Result<ClusterSpec> {
        for o in &self.overrides {
            yaml::Override::parse(o)?;
        }
        let jdk = java::find(self.java.as_deref(), &self.cassandra_version)?;
        if !self.unsupported_java {
            java::check_supported(&self.cassandra_version, &jdk)?;
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
        if u32::from(self.address).checked_add(self.nodes - 1).is_none()
            || u32::from(self.jmx_port) + self.nodes > 65535
        {
            bail!("--address/--jmx-port leave no room for {} nodes", self.nodes);
        }
        Ok(ClusterSpec {
            version: self.cassandra_version.clone(),
            jdk,
            gc: self.gc,
            heap,
            jvm_opts: self.jvm_opts.clone(),
            overrides: self.overrides.clone(),
            nodes: self.nodes,
            address: self.address,
            jmx_port: self.jmx_port,
            cluster_name: self.cluster_name.clone(),
        })
    }
}

pub fn run(home: &Home, cmd: NodeCommand) -> Result<()> {
    let mut progress = |m: &str| say(m);
    match cmd {
        NodeCommand::Start(args) => {
            let spec = args.spec()?;
            if args.wipe {
                local::wipe(&local::nodes(home)?, true, &mut progress)?;
            }
            let opts = StartOptions {
                restart: args.restart || args.wipe,
                timeout: Some(Duration::from_secs(args.timeout)),
            };
            let started = local::start(home, &spec, opts, &mut progress)?;
            if started.reused {
                say("Already running with this configuration; reusing it.");
            }
            print_started(&started.nodes);
            Ok(())
        }
        NodeCommand::Status { json } => status(home, json),
        NodeCommand::Stop {
            nodes,
            no_drain,
            timeout,
        } => {
            let sel = local::select(home, &nodes)?;
            if sel.iter().all(|s| s.liveness() != Liveness::Running) {
                say("No node is running.");
            }
            local::stop(
                &sel,
                StopOptions {
                    drain: !no_drain,
                    timeout: Duration::from_secs(timeout),
                },
                &mut progress,
            )
        }
        NodeCommand::Logs {
            node,
            lines,
            gc,
            console,
        } => {
            let name = node.unwrap_or_else(|| "node1".into());
            let sel = local::select(home, std::slice::from_ref(&name))?;
            let s = &sel[0];
            let path = if gc {
                &s.gc_log
            } else if console {
                &s.console_log
            } else {
                &s.system_log
            };
            say(&format!("==> {} <==", path.display()));
            println!("{}", tail(path, lines));
            Ok(())
        }
        NodeCommand::Wipe { nodes, force } => {
            let sel = local::select(home, &nodes)?;
            if sel.is_empty() {
                say("No nodes to wipe.");
            }
            local::wipe(&sel, force, &mut progress)
        }
    }
}

fn print_started(nodes: &[NodeState]) {
    for s in nodes {
        println!(
            "{}  {}:{}  Cassandra {}  JDK {} ({})  GC {}  heap {}  pid {}",
            s.name,
            s.address,
            s.native_port,
            s.spec.version,
            s.spec.jdk.version,
            s.spec.jdk.java.display(),
            s.spec.gc,
            jvm::heap_flag_value(s.spec.heap),
            s.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into())
        );
        println!("       data {}", s.data_dir.display());
        println!("       logs {} (GC log {})", s.system_log.display(), s.gc_log.display());
    }
}

fn status(home: &Home, json: bool) -> Result<()> {
    let all = local::nodes(home)?;
    if json {
        let rows: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                let live = s.liveness();
                let usage = s
                    .pid
                    .filter(|_| live == Liveness::Running)
                    .and_then(procfs::sample)
                    .map(|p| p.usage());
                serde_json::json!({
                    "node": s, "state": live.to_string(), "usage": usage, "data_bytes": dir_size(&s.data_dir),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    if all.is_empty() {
        say(&format!(
            "No nodes under {}. Start one with 'caplab node start'.",
            home.nodes_dir().display()
        ));
        return Ok(());
    }
    println!(
        "{:<7} {:<8} {:<16} {:<11} {:<5} {:<17} {:<6} {:>8} {:>9} {:>9} {:>10}",
        "NODE", "STATE", "ADDRESS", "VERSION", "JDK", "GC", "HEAP", "PID", "RSS", "CPU s", "DATA"
    );
    for s in &all {
        let live = s.liveness();
        let usage = s
            .pid
            .filter(|_| live == Liveness::Running)
            .and_then(procfs::sample)
            .map(|p| p.usage());
        println!(
            "{:<7} {:<8} {:<16} {:<11} {:<5} {:<17} {:<6} {:>8} {:>9} {:>9} {:>10}",
            s.name,
            live.to_string(),
            format!("{}:{}", s.address, s.native_port),
            s.spec.version,
            s.spec.jdk.major,
            s.spec.gc.to_string(),
            jvm::heap_flag_value(s.spec.heap),
            s.pid
                .filter(|_| live == Liveness::Running)
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
            usage.map(|u| mib(u.rss_bytes)).unwrap_or_else(|| "-".into()),
            usage
                .map(|u| format!("{:.1}", u.user_seconds + u.system_seconds))
                .unwrap_or_else(|| "-".into()),
            mib(dir_size(&s.data_dir)),
        );
        if live == Liveness::Dead {
            println!(
                "        {} exited unexpectedly; its log: {}",
                s.name,
                s.system_log.display()
            );
        }
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{:.0}M", bytes as f64 / 1048576.0)
}
