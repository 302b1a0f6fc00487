//! The command line: one file per subcommand. `main.rs` parses and dispatches here.

pub mod bisect;
pub mod capacity;
pub mod capture;
pub mod confirm;
pub mod experiment;
pub mod history;
pub mod history_check;
pub mod merge;
pub mod node;
pub mod report;
pub mod run;
pub mod steady;
pub mod validate;
pub mod workloads;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

use crate::cluster::Home;

#[derive(Debug, Parser)]
#[command(
    name = "caplab",
    version,
    about = "A performance lab for Apache Cassandra: provision nodes, drive CQL workloads, measure latency correctly"
)]
pub struct Cli {
    /// Where nodes, their data and logs live [env: CAPLAB_HOME; default: ~/.local/share/caplab].
    /// Downloaded Cassandra jars are cached apart, under CAPLAB_CACHE (default ~/.cache/caplab).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Provision and manage local Cassandra nodes.
    #[command(subcommand)]
    Node(node::NodeCommand),
    /// Drive a workload against a cluster and record latency and throughput (default: E1 inserts
    /// for 60 s against the local node, starting one if none runs).
    Run(Box<run::RunCommand>),
    /// Find the highest rate the cluster carries within a service level: an adaptive search
    /// (or a --rates sweep, as E3), with per-window verdicts and capacity.json.
    Capacity(Box<capacity::CapacityCommand>),
    /// Compare configurations side by side on fresh nodes: variants x measurements x repeats,
    /// with confidence intervals, ratios to the baseline and significance (experiment.json).
    Experiment(Box<experiment::ExperimentArgs>),
    /// Compare results that already exist: an experiment directory, or run / capacity
    /// directories (the first is the baseline).
    Compare(experiment::CompareArgs),
    /// Merge the results of several loaders (run --loader i/n) into one results directory:
    /// interval logs added second by second on the wall clock, percentiles exact.
    Merge(merge::MergeArgs),
    /// Write the HTML page of results on disk (DIR/report.html), or overlay several runs.
    Report(report::ReportArgs),
    /// Judge a run's measured window again from its files, or each consecutive window of a
    /// length within it (how often windows of that length are flat here).
    Steady(steady::SteadyArgs),
    /// The performance history every measuring command records in: its series, one series'
    /// records, or results written earlier imported (`caplab history import DIR...`).
    History(history::HistoryCommand),
    /// Find where along ordered values (Cassandra versions, a setting's values) a figure
    /// changes: `caplab bisect --values 5.0.0,5.0.4,5.0.9 -- run --version {} --wipe --duration 60s`.
    Bisect(Box<bisect::BisectArgs>),
    /// Capture what an application sends: the full query log of caplab's nodes turned on for a
    /// while, read into a trace of every query and batch with its time, statement and values.
    Capture(capture::CaptureArgs),
    /// Read back a finished run's acknowledged writes again (a run made with --validate), e.g.
    /// after a repair, a node replacement or an upgrade; exit 1 when any is missing or wrong.
    Validate(validate::ValidateArgs),
    /// List the built-in workloads, or print one's profile.
    Workloads {
        #[command(subcommand)]
        command: Option<workloads::WorkloadsCommand>,
    },
}

impl Cli {
    pub fn home(&self) -> Home {
        match &self.home {
            Some(dir) => Home::with_data(dir),
            None => Home::from_env(),
        }
    }

    /// Runs the command; the result is the process exit code.
    pub fn run(self) -> anyhow::Result<u8> {
        let home = self.home();
        match self.command {
            Command::Node(cmd) => node::run(&home, cmd).map(|()| 0),
            Command::Run(args) => run::run(&home, *args),
            Command::Capacity(args) => capacity::run(&home, *args),
            Command::Experiment(args) => experiment::run(&home, *args),
            Command::Compare(args) => experiment::compare(&home, args),
            Command::Merge(args) => merge::run(&home, args),
            Command::History(args) => history::run(&home, args),
            Command::Report(args) => report::run(&home, args),
            Command::Steady(args) => steady::run(args),
            Command::Validate(args) => validate::run(args),
            Command::Capture(args) => capture::run(&home, args),
            Command::Bisect(args) => bisect::run(&home, *args),
            Command::Workloads { command } => workloads::run(command).map(|()| 0),
        }
    }
}

/// Where a run's or a merge's operations went (`--ops-parquet`), when it kept them.
pub fn say_operations(result: &crate::measure::RunResult) {
    if let Some(o) = &result.files.operations {
        println!(
            "Operations: {} rows in {} ({:.1} MB, {} row groups)",
            o.rows,
            o.path,
            o.bytes as f64 / 1e6,
            o.row_groups
        );
    }
}

/// The page of results a command just wrote: its path, or why there is none (the results
/// themselves are already on disk, so this never fails the command).
pub fn page_of(dir: &Path) {
    match crate::report::write(dir) {
        Ok(path) => println!("Report: {}", path.display()),
        Err(e) => eprintln!("warning: no report page ({e:#}); the results are in {}", dir.display()),
    }
}
