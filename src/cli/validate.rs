//! `caplab validate DIR`: reads back a finished run's acknowledged writes again, later (after a
//! repair, a node replacement, an upgrade), from what its results directory keeps (see
//! `readback`).

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

use crate::measure::validated::validate_dir;
use crate::readback::{ValidateOptions, parse_fraction};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A run's results directory, written with --validate (it keeps acks.bin).
    pub dir: PathBuf,
    /// The share of the acknowledged writes to read back: all, 0.1, 10%.
    #[arg(long, default_value = "all", value_parser = parse_fraction)]
    pub share: f64,
    /// The read's consistency (default: the write's where two of it overlap, else ALL).
    #[arg(long, value_name = "LEVEL")]
    pub consistency: Option<String>,
    /// Contact points, when the cluster is no longer where the run reached it (HOST[:PORT],
    /// comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub hosts: Option<Vec<String>>,
    /// Reads in flight (default: the run's --concurrency).
    #[arg(long)]
    pub concurrency: Option<usize>,
}

/// Exit codes: 0 every row read back as written, 1 some missing or wrong (or unreadable), 130
/// interrupted.
pub fn run(args: ValidateArgs) -> Result<u8> {
    let consistency = match &args.consistency {
        Some(c) => Some(crate::client::parse_consistency(c)?),
        None => None,
    };
    let v = ValidateOptions {
        fraction: args.share,
        consistency,
    };
    let stop = crate::measure::signal::stop_on_signals(std::time::Duration::from_secs(5));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the client runtime")?;
    let found = rt.block_on(validate_dir(&args.dir, args.hosts.clone(), v, args.concurrency, &stop))?;
    println!("Validation (read back)        : {}", found.line());
    if !found.examples.is_empty() {
        println!(
            "  operations with rows missing or wrong (first {}): {:?}",
            found.examples.len(),
            found.examples
        );
    }
    let at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let file = args.dir.join(format!("validation-{}.json", at.replace(':', "")));
    crate::files::write_atomic(&file, serde_json::to_string_pretty(&found)?.as_bytes())?;
    println!("Saved: {}", file.display());
    Ok(if stop.is_requested() {
        130
    } else if found.lost() > 0 || !found.unreadable.is_empty() {
        1
    } else {
        0
    })
}
