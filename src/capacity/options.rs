//! `caplab capacity`'s options, on the command line and as an experiment's capacity
//! measurement: the plan (a search or a sweep of rates), each step's warm-up and window, the
//! confirmation, and the price and target to size for; with every option a run has.

use clap::Args;
use std::time::Duration;

use crate::engine::Warmup;
use crate::measure::options::{DriveOptions, parse_duration, parse_rate, parse_warmup};
use crate::sla::parse_share;

/// `--rates` as written, once it has parsed: a bad list is refused with the options, before
/// any node starts.
fn checked_rates(s: &str) -> Result<String, String> {
    super::search::parse_rates(s).map(|_| s.to_string())
}

/// `caplab capacity`'s options.
#[derive(Debug, Clone, Args)]
pub struct CapacityOptions {
    /// Sweep these rates instead of searching: from:to:step (20k:120k:10k) or a list (5k,10k,20k).
    /// (Checked as it is read; kept as written, as results record it.)
    #[arg(long, value_name = "RATES", value_parser = checked_rates)]
    pub rates: Option<String>,
    /// First rate the adaptive search tries (default: half the flat-out throughput).
    #[arg(long, value_parser = parse_rate)]
    pub start: Option<f64>,
    /// The search stops when the failing rate is within this share above the passing one.
    #[arg(long, value_parser = parse_share, default_value = "5%")]
    pub precision: f64,
    /// Warm-up before each step's measured window: auto (until it settles), a time, or 0.
    #[arg(long, value_parser = parse_warmup, default_value = "auto")]
    pub warmup: Warmup,
    /// The longest each step's automatic warm-up waits.
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    pub warmup_max: Option<Duration>,
    /// Measured window of each step.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub measure: Duration,
    /// Hold the capacity found this long to confirm it, stepping down through the rates that
    /// passed until one holds (default: 12 of the SLA's windows, 2m at 10 s windows; 0 to skip).
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    pub confirm: Option<Duration>,
    /// Runs per rate; a rate passes only if every repeat passes (later repeats are skipped
    /// once one fails).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: u32,
    /// Also draw the latency–throughput curve of the steps and name its knee (as a ramp's:
    /// --knee-on, --knee-factor). Without --rates, sweep N rates (default 10) evenly from
    /// 1/N of the flat-out throughput up to it, each a step of its own (docs/capacity.md).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "10",
          value_parser = clap::value_parser!(u32).range(2..=100))]
    pub curve: Option<u32>,
    /// With --curve: the knee is where the percentile --knee-on rises past this many times
    /// its low-load level and stays there, or a step stops keeping up.
    #[arg(long, value_name = "FACTOR", default_value_t = 3.0, value_parser = crate::measure::options::parse_factor)]
    pub knee_factor: f64,
    /// With --curve: the percentile the knee is judged on.
    #[arg(long, value_enum, default_value = "p99")]
    pub knee_on: crate::measure::phases::Percentile,
    /// Do not measure the flat-out throughput first (the search then grows from --start).
    #[arg(long)]
    pub no_probe: bool,
    /// Wipe and restart the local node(s) before each step, as E3 did (profiles are populated
    /// again unless --no-populate).
    #[arg(long)]
    pub fresh_node: bool,
    /// Run the profile's populate phase before each step (default: once, before the first).
    #[arg(long)]
    pub populate: bool,
    /// Price of one node per hour (e.g. 0.576/h): prints the cost per 1k op/s of capacity.
    #[arg(long, value_parser = parse_cost)]
    pub cost: Option<f64>,
    /// Nodes in the cluster, for --cost and --target (default: the local nodes caplab runs).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// A load to size for: prints how many nodes it needs at the capacity found.
    #[arg(long, value_parser = parse_rate)]
    pub target: Option<f64>,
    #[command(flatten)]
    pub common: DriveOptions,
}

fn parse_cost(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/h").trim_end_matches("/hour");
    match t.trim().trim_start_matches('$').parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!(
            "'{s}' is not a price: write the price of one node per hour, e.g. 0.576/h"
        )),
    }
}
