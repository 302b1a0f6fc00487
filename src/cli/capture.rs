//! `caplab capture --for 30s --out trace.jsonl`: the full query log of caplab's running nodes
//! turned on for a while and read into a trace (see `capture`).

use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

use crate::capture::{CaptureOptions, capture};
use crate::cluster::node::Liveness;
use crate::cluster::{Home, local};

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// How long the full query log stays on (Ctrl-C ends it early; what was logged is kept).
    #[arg(long = "for", value_parser = crate::measure::options::parse_duration, value_name = "TIME")]
    pub length: Duration,
    /// The trace to write: one JSON object a line per query or batch. The nodes' raw full query
    /// logs are kept in a folder beside it (trace.jsonl → trace.fql/), which the next capture to
    /// the same file replaces.
    #[arg(long, value_name = "FILE", default_value = "trace.jsonl")]
    pub out: PathBuf,
    /// Capture on these of caplab's nodes only (node1, node2, …); default: every running one.
    #[arg(long = "node", value_name = "NAME")]
    pub nodes: Vec<String>,
    /// Keep the statements a driver sends about the cluster itself (on the system keyspaces).
    #[arg(long)]
    pub keep_system: bool,
}

/// Exit codes: 0 the trace written, 130 ended early by a signal (the trace of what was logged
/// written all the same), 1 an error.
pub fn run(home: &Home, args: CaptureArgs) -> Result<u8> {
    let nodes: Vec<_> = local::select(home, &args.nodes)?
        .into_iter()
        .filter(|n| n.liveness() == Liveness::Running)
        .collect();
    if nodes.is_empty() {
        bail!(
            "no running node under {} to capture from: start one (caplab node start) \
             or give the home your nodes run under (--home)",
            home.nodes_dir().display()
        );
    }
    let opts = CaptureOptions {
        length: args.length,
        out: args.out,
        keep_system: args.keep_system,
    };
    // After a signal the capture still turns each node's log off (nodetool, a JVM of its own) and
    // reads it (another): tens of seconds on a busy machine, so the stop's bound is minutes, not
    // a drain's seconds. A second signal still exits at once.
    let bound = Duration::from_secs(60 + 120 * nodes.len() as u64);
    let stop = crate::measure::signal::stop_on_signals_for(
        bound,
        format!(
            "turning the full query log off and writing the trace (at most {})",
            humantime::format_duration(bound)
        ),
    );
    let done = capture(&nodes, &opts, &|| stop.is_requested(), &mut |m| eprintln!("{m}"))?;
    println!(
        "Captured {} queries and {} batches in {:.1} s ({} distinct statements; {} about the cluster \
         itself left out): {}",
        done.queries,
        done.batches,
        done.seconds,
        done.statements,
        done.system,
        opts.out.display()
    );
    println!("Raw full query logs: {}", done.raw.display());
    Ok(if stop.is_requested() { 130 } else { 0 })
}
