//! `caplab experiment FILE | --resume DIR` and `caplab compare DIR...`.

use anyhow::{Result, bail};
use clap::Args;
use std::path::PathBuf;

use crate::cluster::Home;
use crate::console::say;
use crate::experiment::record::ExperimentRecord;
use crate::experiment::runner::Opening;
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
    /// Results directory (default caplab-results/<time>-<experiment>-<pid>). A directory that
    /// already holds this experiment gets a new sitting: another day's or machine's rounds,
    /// pooled with the earlier ones.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the results already in --out (instead of adding a sitting).
    #[arg(long, requires = "out")]
    pub force: bool,
    /// The new sitting's name (default: the date and this host's name).
    #[arg(long, value_name = "NAME", conflicts_with = "resume")]
    pub sitting: Option<String>,
    /// Continue the interrupted sitting of the experiment in DIR, without redoing its finished
    /// steps.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Only read and check the file (and this machine's JDKs), and print its plan: every step
    /// of the first rounds in order and an estimate of the time. Starts nothing.
    #[arg(long, requires = "file", conflicts_with_all = ["out", "force", "resume", "calibrate"])]
    pub check: bool,
    /// With --check: estimate the repeats and time the question needs from an earlier run of
    /// the same file (its experiment directory), at the spreads it measured.
    #[arg(long, value_name = "DIR", requires = "check")]
    pub from: Option<PathBuf>,
    /// With --check: plan windows per node and rounds at the least wall time from this
    /// calibration (`--calibrate`'s directory; default: the file's `calibration:`).
    #[arg(long, value_name = "DIR", requires = "check")]
    pub calibration: Option<PathBuf>,
    /// Write a Kubernetes Indexed Job (and the ConfigMap holding FILE) whose N pods each run one
    /// sitting of FILE on a node of their own, starting their own Cassandra nodes, to standard
    /// output, and exit (`| kubectl apply -f -`). Pod i writes /results/NAME/sitting-i on the
    /// results volume; `caplab compare /results/NAME/sitting-*` pools them by machine.
    #[arg(long, value_name = "N", requires = "file", conflicts_with_all = ["out", "force", "resume", "calibrate", "check"])]
    pub k8s: Option<u32>,
    /// The image the --k8s Job's pods run (deploy/k8s/Dockerfile).
    #[arg(long, value_name = "IMAGE", default_value = "caplab:0.1", requires = "k8s")]
    pub image: String,
    /// Calibrate this machine for FILE: its baseline configuration run as an A/A in random
    /// blocks, each node serving several windows, and each primary metric's variance split into
    /// window, node, round and sitting (calibration.json in --out). Name the directory in the
    /// file's `calibration:` to borrow it.
    #[arg(long, requires = "file")]
    pub calibrate: bool,
    /// Rounds of a calibration.
    #[arg(long, value_name = "N", default_value_t = crate::experiment::calibrate::ROUNDS, requires = "calibrate")]
    pub calibrate_rounds: u32,
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
    /// Experiment directories (several of the same experiment, run on other days or machines,
    /// are pooled as sittings, those on one boot as one machine), or results directories to
    /// compare (the first is the baseline; join repeats of one configuration with commas:
    /// a1,a2,a3 b1,b2,b3). The history (--history) gives the prior on the spread between
    /// machines and keeps what the pool measured of it.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<String>,
    /// Differences below this share are negligible, whatever their p-value.
    #[arg(long, value_parser = parse_share, default_value = "2%")]
    pub floor: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Leave out runs whose measured window was not steady (by default every window after a
    /// settled warm-up is compared, and the steady-only analysis is shown beside).
    #[arg(long)]
    pub steady_only: bool,
    /// Retired: every window is compared by default now (refused, saying so).
    #[arg(long, hide = true)]
    pub include_unsteady: bool,
    #[command(flatten)]
    pub history: crate::history::HistoryArgs,
}

/// The experiment to run and how its record opens.
fn opening(args: &ExperimentArgs) -> Result<Option<(Experiment, PathBuf, Opening)>> {
    if let Some(dir) = &args.resume {
        let record = ExperimentRecord::load(dir)?;
        let mut exp = Experiment::parse_kept(&record.text, &record.origin)?;
        exp.check_here()?;
        experiment::step::pin(&mut exp)?;
        return Ok(Some((exp, dir.clone(), Opening::Resume(record))));
    }
    let Some(file) = &args.file else {
        bail!("give an experiment file, or --resume DIR");
    };
    let text =
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("cannot read experiment {}: {e}", file.display()))?;
    let mut exp = Experiment::parse(&text, &file.display().to_string())?;
    exp.check_here()?;
    if let Some(placement) = experiment::step::pin(&mut exp)? {
        say(&format!("Pinned: {placement}"));
    }
    if let Some(pods) = args.k8s {
        let name = file
            .file_name()
            .map_or("experiment.yaml".into(), |n| n.to_string_lossy().into_owned());
        print!(
            "{}",
            experiment::k8s::job(&exp.name(), &name, &text, pods.max(1), &args.image)?
        );
        return Ok(None);
    }
    if args.check {
        print!("{}", experiment::preview::steps_text(&exp));
        if let Some(dir) = &args.from {
            println!("{}", experiment::preview::estimate_from(&exp, dir)?);
        }
        let calibration = args
            .calibration
            .clone()
            .or(exp.file.calibration.as_ref().map(PathBuf::from));
        if let Some(dir) = calibration {
            println!("{}", experiment::preview::allocation(&exp, &dir)?);
        }
        return Ok(None);
    }
    if args.calibrate {
        exp = experiment::calibrate::aa_experiment(
            &exp,
            args.calibrate_rounds,
            exp.file.windows.max(experiment::calibrate::WINDOWS),
        )?;
        experiment::step::pin(&mut exp)?;
    }
    let Some(dir) = &args.out else {
        return Ok(Some((
            exp.clone(),
            default_out(&exp.name(), Default::default()),
            Opening::New(args.sitting.clone()),
        )));
    };
    let file = dir.join(experiment::record::EXPERIMENT_FILE);
    if file.exists() && !args.force {
        // The same experiment again: a new sitting beside the earlier ones.
        let record = ExperimentRecord::load(dir)?;
        return Ok(Some((exp, dir.clone(), Opening::Sitting(record, args.sitting.clone()))));
    }
    claim(dir, args.force)?;
    if args.force {
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(dir.join(experiment::calibrate::CALIBRATION_FILE));
    }
    Ok(Some((exp, dir.clone(), Opening::New(args.sitting.clone()))))
}

/// Exit codes: 0 every step completed, 1 a step failed, 130 (143, 129) interrupted.
pub fn run(home: &Home, args: ExperimentArgs) -> Result<u8> {
    let Some((mut exp, out, opening)) = opening(&args)? else {
        return Ok(0);
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
    let record = experiment::run(&exp, &out, &home.cache, opening, history.as_ref(), &stop)?;
    for c in &record.comparison {
        println!("{}", c.render());
    }
    for d in &record.profile_diffs {
        println!("{}\n", d.render());
    }
    let now = record.current();
    let done = record
        .current_steps()
        .filter(|s| s.status == Some(crate::measure::RunStatus::Completed))
        .count();
    println!(
        "Experiment {}, sitting {} of {}: {} ({done} of {} steps completed, {})",
        record.name,
        now.name,
        record.sittings.len(),
        now.status.name(),
        record.current_steps().count(),
        humantime::format_duration(std::time::Duration::from_secs(now.elapsed_s as u64))
    );
    if let Some(why) = &now.stopped {
        println!("Rounds: {why}");
    }
    if args.calibrate && now.status == crate::measure::RunStatus::Completed {
        match experiment::calibrate::analyse(&exp, &record) {
            Ok(cal) => {
                cal.save(&out)?;
                print!("{}", cal.render());
                println!(
                    "Borrow it: add `calibration: {}` to {}",
                    out.display(),
                    args.file
                        .as_ref()
                        .map_or("the experiment file".into(), |f| f.display().to_string())
                );
            }
            Err(e) => say(&format!("no calibration: {e:#}")),
        }
    }
    if now.status == crate::measure::RunStatus::Interrupted {
        say(&format!(
            "Continue it with: caplab experiment --resume {}",
            out.display()
        ));
    }
    println!("Results: {}", out.display());
    super::page_of(&out);
    Ok(record.exit_code())
}

pub fn compare(home: &Home, args: CompareArgs) -> Result<u8> {
    if args.include_unsteady {
        bail!(
            "--include-unsteady: every window after a settled warm-up is compared now, so the flag does nothing: \
             leave it out (--steady-only leaves out windows that were not flat)"
        );
    }
    let history = args.history.location(&home.data);
    let comparisons = compare_dirs(&args.dirs, args.floor, args.steady_only, history.as_ref())?;
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
    // Two replays that kept their answers (--results): the statements whose answers differ.
    if let [a, b] = args.dirs.as_slice()
        && let Some(d) = crate::measure::replay::compare_reads(a.as_ref(), b.as_ref())?
    {
        if !args.json {
            println!("{}", d.render());
        }
        if d.differing() > 0 {
            return Ok(1);
        }
    }
    Ok(0)
}
