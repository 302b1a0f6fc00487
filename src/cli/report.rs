//! `caplab report DIR [DIR...]`: (re)build the HTML page of results on disk.

use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;

use crate::cluster::Home;
use crate::experiment::record::EXPERIMENT_FILE;
use crate::report;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run, capacity or experiment results directory (its page is DIR/report.html); several
    /// run directories are overlaid on one page (--out).
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Where the page of several runs goes.
    #[arg(long, default_value = "caplab-report.html")]
    pub out: PathBuf,
    /// An experiment's page draws its comparison as `caplab compare` makes it from the record,
    /// with the prior on the spread between machines this history gives.
    #[command(flatten)]
    pub history: crate::history::HistoryArgs,
}

pub fn run(home: &Home, args: ReportArgs) -> Result<u8> {
    let path = match args.dirs.as_slice() {
        [one] if !one.is_dir() => bail!(
            "{} is not a directory: give the results directory a caplab run, capacity or \
             experiment wrote (it holds result.json, capacity.json or experiment.json)",
            one.display()
        ),
        [one] if one.join(EXPERIMENT_FILE).exists() => {
            let history = args.history.location(&home.data);
            let comparison =
                crate::experiment::compare_dirs(&[one.display().to_string()], 0.0, false, history.as_ref()).ok();
            report::write_with(one, comparison)?
        }
        [one] => report::write(one)?,
        many => report::overlay(many, &args.out)?,
    };
    println!("Report: {}", path.display());
    Ok(0)
}
