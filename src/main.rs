//! caplab's command line: parse, dispatch, print errors.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = caplab::cli::Cli::parse();
    match cli.run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
