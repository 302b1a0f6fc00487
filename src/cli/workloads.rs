//! `caplab workloads [show NAME]`: the built-in workloads, and their profiles to copy.

use anyhow::Result;
use clap::Subcommand;

use crate::workload::builtin::{self, BUILTINS};

#[derive(Debug, Subcommand)]
pub enum WorkloadsCommand {
    /// Print a built-in profile (YAML) to copy and edit.
    Show { name: String },
}

pub fn run(cmd: Option<WorkloadsCommand>) -> Result<()> {
    match cmd {
        None => {
            for b in BUILTINS {
                println!("{:<12} {}", b.name, b.describe());
            }
            println!("\nRun one with 'caplab run --workload NAME'; 'caplab workloads show NAME' prints its profile.");
        }
        Some(WorkloadsCommand::Show { name }) => {
            let b = builtin::find(&name)?;
            match b.yaml {
                Some(y) => print!("{y}"),
                None => println!(
                    "# '{name}' is built into caplab for E1's write path: {}\n# Its options: caplab run --help (--partitions, --value-size, --value-columns, --batch-size).",
                    b.describe()
                ),
            }
        }
    }
    Ok(())
}
