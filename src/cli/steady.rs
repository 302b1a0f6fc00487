//! `caplab steady DIR [--window 60s]`: the steady-state verdict of a run's measured window,
//! judged again from its files, or of each consecutive window of a length within it. On a long
//! run of a settled node, the share of its windows that come out flat says how far windows of
//! that length can be trusted on this machine (bench/steady-calibration.sh uses it).

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

use crate::measure::RunResult;
use crate::steady::{self, Class, SecondFigures};

#[derive(Debug, Args)]
pub struct SteadyArgs {
    /// A run's results directory.
    pub dir: PathBuf,
    /// Judge each consecutive window of this length within the measured window (the last,
    /// shorter one is left out).
    #[arg(long, value_parser = crate::measure::options::parse_duration, value_name = "TIME")]
    pub window: Option<Duration>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct Judged {
    from_s: f64,
    to_s: f64,
    class: Option<Class>,
    steady: bool,
    summary: String,
}

pub fn run(args: SteadyArgs) -> Result<u8> {
    let result = RunResult::load(&args.dir)?;
    let seconds = result.seconds(&args.dir)?;
    let length = match args.window {
        Some(w) if w.as_secs() < steady::verdict::MIN_WINDOW as u64 => bail!(
            "--window {}: the verdict needs at least {} s",
            humantime::format_duration(w),
            steady::verdict::MIN_WINDOW
        ),
        Some(w) => w.as_secs() as usize,
        None => seconds.len().max(1),
    };
    let judged: Vec<Judged> = seconds
        .chunks_exact(length)
        .map(|w| {
            let from = w[0].at_s;
            let rebased: Vec<SecondFigures> = w
                .iter()
                .map(|s| SecondFigures {
                    at_s: s.at_s - from,
                    ..*s
                })
                .collect();
            let v = steady::judge(&rebased, steady::Load::of(result.config.engine.rate));
            Judged {
                from_s: from,
                to_s: from + w.len() as f64,
                class: v.class,
                steady: v.steady,
                summary: v.summary,
            }
        })
        .collect();
    if judged.is_empty() {
        bail!(
            "{} has {} measured seconds: fewer than one window of {length} s",
            args.dir.display(),
            seconds.len()
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&judged)?);
        return Ok(0);
    }
    for (i, j) in judged.iter().enumerate() {
        println!("{:>3}  {:>5.0}-{:<5.0} s  {}", i + 1, j.from_s, j.to_s, j.summary);
    }
    let count = |c: Class| judged.iter().filter(|j| j.class == Some(c)).count();
    println!(
        "{} window(s) of {length} s: flat {}, warm-up {}, slowdown {}, no steady state {}",
        judged.len(),
        count(Class::Flat),
        count(Class::Warmup),
        count(Class::Slowdown),
        count(Class::None)
    );
    Ok(0)
}
