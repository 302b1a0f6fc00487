//! `caplab report DIR [DIR...]`: (re)build the HTML page of results on disk.

use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;

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
}

pub fn run(args: ReportArgs) -> Result<u8> {
    let path = match args.dirs.as_slice() {
        [one] if !one.is_dir() => bail!(
            "{} is not a directory: give the results directory a caplab run, capacity or \
             experiment wrote (it holds result.json, capacity.json or experiment.json)",
            one.display()
        ),
        [one] => report::write(one)?,
        many => report::overlay(many, &args.out)?,
    };
    println!("Report: {}", path.display());
    Ok(0)
}
