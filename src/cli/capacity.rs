//! `caplab capacity`: the highest rate a cluster carries within a service level. The options
//! become a `Plan` (adaptive search or `--rates` sweep) and a `Capacity` search's settings
//! (`capacity::command`); the search itself is `capacity::run`.

use anyhow::Result;
use clap::Args;

use crate::capacity::{self, CapacityOptions};
use crate::cluster::Home;
use crate::history::HistoryArgs;
use crate::measure::RunStatus;
use crate::measure::result::CAPACITY_FILE;
use crate::measure::signal::stop_on_signals;

/// `caplab capacity`'s options: the search's, and where it is recorded.
#[derive(Debug, Args)]
pub struct CapacityCommand {
    #[command(flatten)]
    pub search: CapacityOptions,
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// Exit codes: 0 a capacity was found, 1 none (or the cluster failed), 130 (143, 129)
/// interrupted; the results directory holds capacity.json and every step's results in all cases.
pub fn run(home: &Home, cmd: CapacityCommand) -> Result<u8> {
    let args = cmd.search;
    let history = cmd.history.location(&home.data);
    let stop = stop_on_signals(args.common.load.drain);
    let (report, out, cost_without_nodes) = capacity::command::capacity(home, &args, &stop)?;
    // Searches cut short are recorded too: what they found so far is a result (status
    // interrupted or failed), and detection leaves them out.
    crate::history::record_finished(history.as_ref(), &out, &Default::default());
    println!("{}", report.render());
    if report.status != RunStatus::Completed {
        if let Some(m) = &report.end_reason {
            eprintln!("error: {m}");
        }
        eprintln!(
            "The search stopped ({}); what it found so far is in {}",
            report.status.name(),
            out.join(CAPACITY_FILE).display()
        );
        super::page_of(&out);
        return Ok(report.exit_code());
    }
    if cost_without_nodes {
        println!("Cost: give --nodes (the cluster's node count) to price the capacity");
    }
    println!("Results: {}", out.display());
    super::page_of(&out);
    Ok(report.exit_code())
}
