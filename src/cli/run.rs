//! `caplab run`: drive a workload against a cluster once, write its results, and judge it
//! against a service level when given one.

use anyhow::Result;
use clap::Args;

use crate::cluster::Home;
use crate::history::HistoryArgs;
use crate::measure::options::RunOptions;
use crate::measure::signal::stop_on_signals;
use crate::measure::{RunStatus, commands};

/// `caplab run`'s options: the run's, and where it is recorded.
#[derive(Debug, Args)]
pub struct RunCommand {
    #[command(flatten)]
    pub run: RunOptions,
    #[command(flatten)]
    pub history: HistoryArgs,
}

/// Exit codes: 0 done (and the service level met), 1 failed or missed the service level
/// (results kept), 130 (143, 129) interrupted by SIGINT (SIGTERM, SIGHUP), results kept.
pub fn run(home: &Home, cmd: RunCommand) -> Result<u8> {
    let args = cmd.run;
    let history = cmd.history.location(&home.data);
    let stop = stop_on_signals(args.common.load.drain);
    let (result, out) = commands::run(home, &args, &stop)?;
    println!("{}", result.render());
    println!("Results: {}", out.display());
    super::say_operations(&result);
    super::page_of(&out);
    crate::history::record_finished(history.as_ref(), &out, &Default::default());
    if let (RunStatus::Failed, Some(m)) = (result.status, &result.end_reason) {
        eprintln!("error: {m}");
    }
    Ok(result.exit_code())
}
