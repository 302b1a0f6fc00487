//! `caplab node start|status|stop|logs|wipe`.

use anyhow::Result;
use clap::Subcommand;
use std::time::Duration;

use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::{Liveness, NodeState, dir_size, tail};
use crate::cluster::options::NodeOptions;
use crate::cluster::{Home, jvm};
use crate::console::say;
use crate::procfs;

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Start a local cluster (one node unless --nodes) and return once it accepts CQL.
    Start(NodeOptions),
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
            "{}  {}:{}  Cassandra {}  JDK {} ({})  GC {}{}  heap {}  pid {}",
            s.name,
            s.address,
            s.native_port,
            s.spec.version,
            s.spec.jdk.version,
            s.spec.jdk.java.display(),
            s.spec.gc,
            if s.spec.jit.is_tiered() {
                String::new()
            } else {
                format!("  JIT {}", s.spec.jit)
            },
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
