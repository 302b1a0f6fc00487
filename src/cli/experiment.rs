//! `caplab experiment FILE | --resume DIR` and `caplab compare DIR...`.

use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;

use crate::cluster::Home;
use crate::console::say;
use crate::experiment::record::ExperimentRecord;
use crate::experiment::spec::Experiment;
use crate::experiment::{self, compare_dirs};
use crate::measure::out::{claim, default_out};
use crate::measure::signal::stop_on_signals;
use crate::sla::parse_share;

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The experiment file (YAML; see README and experiments/).
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    pub file: Option<PathBuf>,
    /// Results directory (default caplab-results/<time>-<experiment>-<pid>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the results already in --out.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Continue an interrupted experiment in DIR, without redoing its finished steps.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Only read and check the file (and this machine's JDKs), and print its steps: every step
    /// in order and an estimate of the time. Starts nothing.
    #[arg(long, requires = "file", conflicts_with_all = ["out", "force", "resume"])]
    pub check: bool,
    /// With --check: estimate the repeats and time the question needs from an earlier run of
    /// the same file (its experiment directory), at the spreads it measured.
    #[arg(long, value_name = "DIR", requires = "check")]
    pub from: Option<PathBuf>,
    /// A label for every step's results and history record (repeatable): --label
    /// commit=abc123. Each step is also labelled `experiment` and `variant`.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::measure::options::parse_label)]
    pub labels: Vec<(String, String)>,
    #[command(flatten)]
    pub history: crate::history::HistoryArgs,
    /// Each step serves (and pushes) its live metrics as `caplab run` does; labelled
    /// `experiment` and `variant` too.
    #[command(flatten)]
    pub metrics: crate::live::MetricsOptions,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// An experiment directory, or results directories to compare (the first is the baseline;
    /// join repeats of one configuration with commas: a1,a2,a3 b1,b2,b3).
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<String>,
    /// Differences below this share are negligible, whatever their p-value.
    #[arg(long, value_parser = parse_share, default_value = "2%")]
    pub floor: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Compare runs whose measured window was not steady too (by default they are left out,
    /// and named).
    #[arg(long)]
    pub include_unsteady: bool,
}

/// Exit codes: 0 every step completed, 1 a step failed, 130 (143, 129) interrupted.
pub fn run(home: &Home, args: ExperimentArgs) -> Result<u8> {
    let (mut exp, out, resume) = match (&args.file, &args.resume) {
        (_, Some(dir)) => {
            let record = ExperimentRecord::load(dir)?;
            let exp = Experiment::parse(&record.text, &record.origin)?;
            exp.check_here()?;
            (exp, dir.clone(), Some(record))
        }
        (Some(file), None) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("cannot read experiment {}: {e}", file.display()))?;
            let exp = Experiment::parse(&text, &file.display().to_string())?;
            exp.check_here()?;
            if args.check {
                print!("{}", experiment::check::steps_text(&exp));
                if let Some(dir) = &args.from {
                    println!("{}", experiment::check::estimate_from(&exp, dir)?);
                }
                return Ok(0);
            }
            let out = match &args.out {
                Some(dir) => {
                    claim(dir, args.force)?;
                    if args.force {
                        let _ = std::fs::remove_file(dir.join(experiment::record::EXPERIMENT_FILE));
                    } else if dir.join(experiment::record::EXPERIMENT_FILE).exists() {
                        bail!(
                            "{} holds an experiment: continue it with --resume {0}, choose another --out, or pass --force",
                            dir.display()
                        );
                    }
                    dir.clone()
                }
                None => default_out(&exp.name(), Default::default()),
            };
            (exp, out, None)
        }
        (None, None) => bail!("give an experiment file, or --resume DIR"),
    };
    // Each step's own `drain:` bounds its operations in flight; this only bounds how long a
    // stop may take before it is forced, whatever the steps ask.
    let stop = stop_on_signals(std::time::Duration::from_secs(30));
    for cell in exp.cells.iter_mut().flatten() {
        let common = cell.what.common_mut();
        let mut all = args.labels.clone();
        all.append(&mut common.labels);
        common.labels = all;
        if args.metrics.metrics_listen.is_some() || args.metrics.metrics_push.is_some() {
            common.metrics = args.metrics.clone();
        }
    }
    let history = args.history.location(&home.data);
    let record = experiment::run(&exp, &out, &home.cache, resume, history.as_ref(), &stop)?;
    for c in &record.comparison {
        println!("{}", c.render());
    }
    for d in &record.profile_diffs {
        println!("{}\n", d.render());
    }
    let done = record
        .steps
        .iter()
        .filter(|s| s.status == Some(crate::measure::RunStatus::Completed))
        .count();
    println!(
        "Experiment {}: {} ({done} of {} steps completed, {})",
        record.name,
        record.status.name(),
        record.steps.len(),
        humantime::format_duration(std::time::Duration::from_secs(record.elapsed_s as u64))
    );
    if let Some(why) = &record.stopped {
        println!("Rounds: {why}");
    }
    if record.status == crate::measure::RunStatus::Interrupted {
        say(&format!(
            "Continue it with: caplab experiment --resume {}",
            out.display()
        ));
    }
    println!("Results: {}", out.display());
    super::page_of(&out);
    Ok(record.exit_code())
}

pub fn compare(args: CompareArgs) -> Result<u8> {
    let comparisons = compare_dirs(&args.dirs, args.floor, args.include_unsteady)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparisons)?);
    } else {
        for c in &comparisons {
            println!("{}", c.render());
        }
        // An experiment directory also holds its server profiles' differences.
        if let [one] = args.dirs.as_slice()
            && let Ok(record) = experiment::record::ExperimentRecord::load(std::path::Path::new(one))
        {
            for d in &record.profile_diffs {
                println!("{}\n", d.render());
            }
        }
    }
    Ok(0)
}
