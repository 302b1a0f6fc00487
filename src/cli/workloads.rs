//! `caplab workloads [show NAME]`: the built-in workloads, and their profiles to copy.

use anyhow::Result;
use clap::Subcommand;

use crate::workload::builtin::{self, BUILTINS};

#[derive(Debug, Subcommand)]
pub enum WorkloadsCommand {
    /// Print a built-in profile (YAML) to copy and edit (the bank's statements, CQL).
    Show { name: String },
}

pub fn run(cmd: Option<WorkloadsCommand>) -> Result<()> {
    match cmd {
        None => {
            for b in BUILTINS {
                println!("{:<12} {}", b.name, b.describe());
            }
            println!(
                "\nRun one with 'caplab run --workload NAME'; 'caplab workloads show NAME' prints its profile (the bank's: its CQL)."
            );
        }
        Some(WorkloadsCommand::Show { name }) => {
            print!("{}", builtin::find(&name)?.yaml);
        }
    }
    Ok(())
}
