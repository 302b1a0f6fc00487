//! caplab's command line: parse, dispatch, print errors.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = caplab::cli::Cli::parse();
    match cli.run() {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
