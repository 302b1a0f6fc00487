//! The options that choose a step's workload and settle its schema (`--workload`, `--profile`,
//! E1's sizes, `--tables`, keyspace and replication, `--compaction`, `--recreate`,
//! `--truncate`), as flags or experiment keys; `workload` turns them into a workload.

use clap::Args;
use std::path::PathBuf;

use crate::engine::LoaderSlice;
use crate::workload::compaction::Compaction;

/// Which workload, and its settings.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadOptions {
    /// Built-in workload ('caplab workloads' lists them).
    #[arg(long, default_value = "insert")]
    pub workload: String,
    /// A workload profile (YAML) instead of a built-in ('caplab workloads show NAME' prints one to
    /// start from); cassandra-stress user profiles are accepted as they are.
    #[arg(long, value_name = "FILE", conflicts_with = "workload")]
    pub profile: Option<PathBuf>,
    /// Replay a trace `caplab capture` wrote instead of a workload: its queries and batches with
    /// their values, consistency and timing, each distinct statement prepared once (docs/replay.md).
    #[arg(long, value_name = "TRACE", conflicts_with_all = ["workload", "profile"])]
    pub replay: Option<PathBuf>,
    /// Keep a digest of every answer a replay gets (reads.tsv in its results), the trace sent in
    /// order, one operation at a time, so each read sees exactly the writes before it;
    /// `caplab compare` of two such replays names the statements whose answers differ.
    #[arg(long, requires = "replay")]
    pub results: bool,
    /// How many times as fast as captured a replay runs (2 halves every gap between operations).
    #[arg(long, value_name = "FACTOR", requires = "replay", value_parser = parse_speed)]
    pub speed: Option<f64>,
    /// Skip the profile's populate phase (the data is already there).
    #[arg(long)]
    pub no_populate: bool,
    /// Profile operations to run and their weights, e.g. 'insert=1,read1=2' (as cassandra-stress's
    /// ops(...)); operations not named do not run. Default: the profile's weights.
    #[arg(long = "ops", value_name = "NAME=WEIGHT,...")]
    pub weights: Option<String>,
    /// Seed for a profile's generated values and operation order (overrides the profile's `seed`);
    /// the same seed always produces the same data.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run share i of n of the workload's operations (loaders numbered 1..n), so n caplab
    /// processes split the key space without overlap; populate is split too, -n is per loader.
    #[arg(long, value_name = "I/N", value_parser = LoaderSlice::parse, default_value = "1/1")]
    pub loader: LoaderSlice,
    /// Partitions addressed (E1: operation i writes partition i mod N; default 100000; profiles:
    /// overrides the profile's `partitions`).
    #[arg(long)]
    pub partitions: Option<u64>,
    /// Characters per value column (E1).
    #[arg(long, default_value_t = 10)]
    pub value_size: usize,
    /// Value columns (E1).
    #[arg(long, default_value_t = 5)]
    pub value_columns: usize,
    /// Rows per batch (E1 batch workload).
    #[arg(long, default_value_t = 10)]
    pub batch_size: usize,
    /// Spread E1's rows over N tables of the same schema (e1_insert_0000 …; partition p to
    /// table p mod N, or as --table-select says): the tables that exist are kept, the rest created
    /// with progress, and the run records how long that took and how many tables the cluster holds.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub tables: u32,
    /// With --tables: uniform (partition p to table p mod N), or skewed by a hash of the
    /// partition: gaussian (around the middle table), exponential, zipf (to the first tables).
    #[arg(long, value_name = "DISTRIBUTION", value_parser = crate::workload::spread::parse_select)]
    pub table_select: Option<crate::workload::values::Distribution>,
    /// Keyspace (default: caplab for E1's workloads, a profile's own for the others; a replay
    /// goes to this keyspace instead of its trace's, with the trace's schema copied there if
    /// it does not exist).
    #[arg(long)]
    pub keyspace: Option<String>,
    /// Replication factor, SimpleStrategy (default: 1 for E1's workloads, a profile's own
    /// replication for the others).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub replication_factor: Option<u32>,
    /// Keep the commit log on (E1 turns it off with durable_writes = false).
    #[arg(long)]
    pub durable_writes: bool,
    /// Keep compaction on (E1 turns it off), size-tiered, or with the strategy given: stcs,
    /// lcs, ucs (5.0+) or twcs, options after commas (`ucs,T4`, `lcs,sstable_size_in_mb=160`).
    /// A profile's tables are altered to it after its schema runs.
    #[arg(long, value_name = "STRATEGY", num_args = 0..=1, default_missing_value = "stcs",
          value_parser = crate::workload::compaction::parse_arg)]
    pub compaction: Option<Compaction>,
    /// When the workload's keyspace (or E1's table) exists with other settings than asked
    /// (replication, durable writes, compaction, columns), drop it and create it as asked
    /// (its data is lost) instead of refusing to run.
    #[arg(long)]
    pub recreate: bool,
    /// Empty the tables the workload's operations name (TRUNCATE) before the run (and before a
    /// profile's populate phase), so a validated run reads back only its own writes: an earlier
    /// run's identical rows can hide a lost write. Every node must be up.
    #[arg(long)]
    pub truncate: bool,
}

/// A replay's speed: a factor above 0 (`2`, `0.5`, `4x`).
fn parse_speed(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches(['x', 'X']).parse::<f64>() {
        Ok(k) if k > 0.0 && k.is_finite() => Ok(k),
        _ => Err(format!("'{s}' is not a speed: give a factor above 0, like 1, 4 or 0.5")),
    }
}
