//! Experiments: configurations compared side by side, on fresh nodes, with honest statistics,
//! in three stages that go one way.
//!
//! - **Plan** (`plan`, printed by `check`): rounds that are randomized complete blocks (every
//!   variant and measurement once per round, in an order drawn from the sitting's seed; with
//!   `design: duet`, a measurement's two variants at once), the windows each node serves,
//!   replacements for a window still warming, and the budget. The file is read and checked
//!   first (`spec`, its option keys parsed as the commands' flags by `keys`; its question,
//!   `question`).
//! - **Run** (`runner`, one step at a time by `step`, or a duet's two at once by `duet`): a
//!   sitting executes its plan on freshly started nodes of each variant with the same code as
//!   `caplab run` / `capacity`, and records every step's values in experiment.json (`record`),
//!   rewritten after every step so an interrupted sitting resumes where it stopped. Running the
//!   file again into the same directory adds a sitting (another day or machine).
//! - **Analyse** (`analyse`, with `compare`): from the record alone, each measurement's variants
//!   compared metric by metric, paired by round; the primary questions answered for the sitting
//!   running after every round, or pooled across sittings; server profiles frame by frame
//!   (`profile_diff`).
//!
//! `calibrate` runs the file's baseline as an A/A and splits each metric's variance into
//! its levels, for planning and for decisions that borrow it.

pub mod analyse;
pub mod calibrate;
pub mod compare;
pub mod duet;
pub mod file;
pub mod k8s;
pub mod keys;
pub mod plan;
pub mod preview;
pub mod profile_diff;
pub mod question;
pub mod record;
pub mod runner;
pub mod spec;
pub mod spread;
pub mod step;

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::cluster::Home;
use crate::console::say;
use crate::engine::Stop;
use crate::measure::RunStatus;
use crate::stats::sequential::Design;
use analyse::ALPHA;
use compare::{Ask, Comparison, Question, Unit, compare};
use record::{ExperimentRecord, Sitting};
use runner::Opening;
use spec::{Experiment, What};

/// Runs a sitting of `exp` into `out` (a new experiment, a resumed sitting or a new sitting,
/// as `opening` says). Nodes live under `out/home` (jars come from `cache`), apart from any the
/// user runs.
pub fn run(
    exp: &Experiment,
    out: &Path,
    cache: &Path,
    opening: Opening,
    history: Option<&crate::history::Location>,
    stop: &Arc<Stop>,
) -> Result<ExperimentRecord> {
    std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let priors = analyse::priors(exp)?;
    let home = Home::at(out.join("home"), cache);
    let began = Instant::now();
    let mut record = runner::open_record(exp, out, opening)?;
    let prior_elapsed = record.current().elapsed_s;
    let fresh = exp.file.fresh;
    let duet_homes: Vec<Home> = exp
        .file
        .variants
        .iter()
        .map(|v| duet::home(out, cache, &v.name))
        .collect();
    runner::run_rounds(
        exp,
        &mut record,
        out,
        stop,
        &mut |calls, how| {
            let outcomes = match calls {
                [one] => vec![step::run_step(&home, fresh, one.cell, &one.dir, how, stop)?],
                [a, b] => duet::run_pair(
                    &[side(exp, &duet_homes, a), side(exp, &duet_homes, b)],
                    fresh,
                    how,
                    stop,
                )?
                .into(),
                _ => bail!("{} steps at once: a round runs one, or a duet's two", calls.len()),
            };
            for c in calls {
                for w in 1..=how.windows.max(1) {
                    let wdir = step::window_dir(&c.dir, how.windows, w);
                    crate::history::record_finished(history, &wdir, &Default::default());
                }
            }
            Ok(outcomes)
        },
        &mut |record| analyse::sitting_comparisons(exp, record, out, &priors),
    )?;
    step::stop_nodes(&home);
    if exp.file.design == spec::RoundDesign::Duet {
        duet_homes.iter().for_each(step::stop_nodes);
    }
    let status = runner::final_status(&record, stop);
    let s = record.current_mut();
    s.status = status;
    if status == RunStatus::Interrupted {
        s.interrupted_by = stop.cause().map(str::to_string);
    }
    s.elapsed_s = prior_elapsed + began.elapsed().as_secs_f64();
    let own = analyse::sitting_comparisons(exp, &record, out, &priors);
    record.current_mut().comparison = own;
    let tau = spread::priors(exp, &record.name, history);
    record.comparison = analyse::comparisons(exp, &record, out, &priors, &tau);
    let ids: Vec<_> = record.sittings.iter().map(analyse::sitting_id).collect();
    spread::record(&record.name, &ids, &record.comparison, history);
    let profiled = exp
        .cells
        .iter()
        .flatten()
        .any(|c| matches!(&c.what, What::Run(o) if o.common.telemetry.server_profile.is_some()));
    if profiled {
        let tools = crate::server_profile::Tools::get(&home, &mut |m| say(m))
            .map_err(|e| say(&format!("differential flame graphs not made: {e:#}")))
            .ok();
        record.profile_diffs = profile_diff::diffs(exp, &record, out, tools.as_ref());
    }
    record.save(out)?;
    Ok(record)
}

/// A duet's side for step `c`: its variant's name and home (of `homes`, one per variant).
fn side<'a>(exp: &'a Experiment, homes: &'a [Home], c: &runner::StepCall<'a>) -> duet::Side<'a> {
    duet::Side {
        name: &exp.file.variants[c.variant].name,
        home: &homes[c.variant],
        cell: c.cell,
        dir: c.dir.clone(),
    }
}

/// The design every primary question of `exp` shares.
pub fn design(exp: &Experiment) -> Design {
    analyse::design(exp)
}

/// `caplab compare`: experiment directories (one: its comparison across its sittings; several
/// of the same experiment, run on other days or machines: their sittings pooled), or variants
/// given as results directories, repeats of one variant joined by commas (`a1,a2,a3
/// b1,b2,b3`); the first is the baseline.
/// `history` gives the priors on the spread between machines and keeps what pooling measured.
pub fn compare_dirs(
    args: &[String],
    floor: f64,
    steady_only: bool,
    history: Option<&crate::history::Location>,
) -> Result<Vec<Comparison>> {
    let experiments: Vec<&String> = args
        .iter()
        .filter(|a| Path::new(a).join(record::EXPERIMENT_FILE).exists())
        .collect();
    if !experiments.is_empty() {
        if experiments.len() != args.len() {
            bail!("give either experiment directories or results directories to compare, not both");
        }
        let (exp, record, out) = pooled_records(args)?;
        let mut exp = exp;
        exp.file.steady_only |= steady_only;
        let tau = spread::priors(&exp, &record.name, history);
        let comparisons = analyse::comparisons(&exp, &record, &out, &analyse::priors(&exp).unwrap_or_default(), &tau);
        let ids: Vec<_> = record.sittings.iter().map(analyse::sitting_id).collect();
        spread::record(&record.name, &ids, &comparisons, history);
        return Ok(comparisons);
    }
    if args.len() < 2 {
        bail!(
            "compare needs an experiment directory, or two or more results directories (the first is the baseline; \
             join repeats of one configuration with commas: a1,a2,a3 b1,b2,b3)"
        );
    }
    let mut variants = Vec::new();
    for arg in args {
        let dirs: Vec<PathBuf> = arg.split(',').filter(|s| !s.is_empty()).map(PathBuf::from).collect();
        let units = dirs
            .iter()
            .map(|d| compare::Observation::load(d).map(|o| Unit::from_observation(&o, 0, None)))
            .collect::<Result<Vec<_>>>()?;
        let name = dirs
            .first()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| arg.clone());
        variants.push((name, units));
    }
    // Directories given by hand: not in blocks, one look, at the repeats there are.
    let n = variants
        .iter()
        .map(|(_, u)| u.len())
        .min()
        .unwrap_or(0)
        .max(question::AUTO_MIN as usize);
    let primary: Vec<(String, f64)> = if variants
        .iter()
        .flat_map(|(_, u)| u)
        .any(|u| u.value("capacity").is_some())
    {
        question::PRIMARY_CAPACITY.to_vec()
    } else {
        question::PRIMARY_RUN.to_vec()
    }
    .into_iter()
    .map(|k| (k.to_string(), question::default_effect(k)))
    .collect();
    let ask = Ask {
        baseline: 0,
        floor,
        tested: None,
        steady_only,
        question: Some(Question {
            primary: &primary,
            design: Design::new(ALPHA, primary.len() * variants.len().saturating_sub(1), n, n),
            round: n,
            complete: true,
            priors: &[],
            tau_priors: &[],
        }),
        earlier: &[],
        sittings: &[],
        own: &[],
    };
    Ok(vec![compare("compare", &variants, ask)])
}

/// One record holding every sitting of the experiment directories `dirs` (the first's
/// experiment; the others must have run the same one), its steps' directories made absolute.
pub fn pooled_records(dirs: &[String]) -> Result<(Experiment, ExperimentRecord, PathBuf)> {
    let first = Path::new(&dirs[0]);
    let mut record = ExperimentRecord::load(first)?;
    let exp = Experiment::parse_kept(&record.text, &record.origin)?;
    if dirs.len() == 1 {
        return Ok((exp, record, first.to_path_buf()));
    }
    for s in &mut record.steps {
        s.dir = first.join(&s.dir).display().to_string();
    }
    for dir in &dirs[1..] {
        let other = ExperimentRecord::load(Path::new(dir))?;
        runner::same_experiment(
            &exp,
            &Experiment::parse_kept(&other.text, &other.origin)?,
            Path::new(dir),
        )?;
        let offset = record.steps.iter().map(|s| s.index).max().unwrap_or(0);
        for mut sitting in other.sittings {
            if let Some(same) = record.sittings.iter().find(|s| same_sitting(s, &sitting)) {
                bail!(
                    "{dir} holds sitting {} again, the one already given as {} (the same seed, start and boot): pooled twice, \
                     its rounds would count as a second machine's or day's; give each experiment directory once",
                    sitting.name,
                    same.name
                );
            }
            let old = sitting.name.clone();
            if record.sitting_index(&sitting.name).is_some() {
                sitting.name = format!("{}@{dir}", sitting.name);
            }
            for s in other.steps.iter().filter(|s| s.sitting == old) {
                let mut s = s.clone();
                s.sitting = sitting.name.clone();
                s.index += offset;
                s.dir = Path::new(dir).join(&s.dir).display().to_string();
                record.steps.push(s);
            }
            record.sittings.push(sitting);
        }
    }
    // Steps' directories are absolute now: joined to nothing.
    Ok((exp, record, PathBuf::new()))
}

/// Whether two sittings are one: the same seed, start and boot (a directory given twice, or a
/// copy of one).
fn same_sitting(a: &Sitting, b: &Sitting) -> bool {
    a.seed == b.seed && a.started_at == b.started_at && a.host.boot_id == b.host.boot_id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::RunStatus;
    use step::StepOutcome;

    /// A sitting of `exp` into `dir` whose steps measure b at `ratio` times a's throughput.
    fn sitting(exp: &Experiment, dir: &Path, name: &str, ratio: f64) {
        let opening = match ExperimentRecord::load(dir) {
            Ok(r) => Opening::Sitting(r, Some(name.into())),
            Err(_) => Opening::New(Some(name.into())),
        };
        let mut record = runner::open_record(exp, dir, opening).unwrap();
        let stop = Stop::new();
        let mut n = 0;
        runner::run_rounds(
            exp,
            &mut record,
            dir,
            &stop,
            &mut |calls, _| {
                n += 1;
                let is_b = calls[0].variant == 1;
                let v = 1000.0 * (1.0 + 0.01 * (n % 3) as f64) * if is_b { ratio } else { 1.0 };
                Ok(vec![StepOutcome {
                    status: RunStatus::Completed,
                    line: String::new(),
                    steady: None,
                    settled: Some(true),
                    values: [("throughput".to_string(), v)].into(),
                    window_values: Vec::new(),
                }])
            },
            &mut |r| analyse::sitting_comparisons(exp, r, dir, &[]),
        )
        .unwrap();
        record.current_mut().status = RunStatus::Completed;
        record.current_mut().comparison = analyse::sitting_comparisons(exp, &record, dir, &[]);
        record.comparison = analyse::comparisons(exp, &record, dir, &[], &[]);
        record.save(dir).unwrap();
    }

    #[test]
    fn experiment_directories_of_one_experiment_pool_as_sittings() {
        let text = "name: t\nrepeats: 3\nprimary: [throughput]\nnode: {version: 5.0.9, java: 17}\n\
                    run: {duration: 5s}\nvariants: [{name: a}, {name: b}]\nmeasure: [{name: insert, workload: insert}]\n";
        let exp = Experiment::parse(text, "t.yaml").unwrap();
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        sitting(&exp, one.path(), "monday", 1.10);
        sitting(&exp, two.path(), "tuesday", 1.30);
        let dirs = [one.path().display().to_string(), two.path().display().to_string()];
        let cmp = compare_dirs(&dirs, 0.02, false, None).unwrap();
        let a = &cmp[0].answers[0];
        // Both ran on this boot: one machine, whose two sittings disagree beyond their errors.
        assert_eq!(a.covers, "across 2 sittings on 1 machine", "{a:?}");
        assert_eq!((a.machines, a.tau), (1, None), "{a:?}");
        let names: Vec<&str> = a.sittings.iter().map(|p| p.sitting.as_str()).collect();
        assert_eq!(names, ["monday", "tuesday"]);
        assert!(
            (a.sittings[0].ratio - 1.10).abs() < 0.03 && (a.sittings[1].ratio - 1.30).abs() < 0.03,
            "{a:?}"
        );
        let (lo, hi) = a.ci.unwrap();
        assert!(lo < 1.10 && hi > 1.30, "{a:?}");
        assert_eq!(a.decision, crate::stats::sequential::Decision::Open, "{a:?}");
        let (plo, phi) = a.prediction.unwrap();
        assert!(plo < lo && phi > hi, "a new machine sees more: {a:?}");
        // Each sitting's own ratio is printed under the answer (its rounds' order is drawn, so
        // the ratio is 1.3 within a few per cent).
        let render = cmp[0].render();
        assert!(
            render.contains("sitting tuesday: ×1.") && render.contains("its own answer BETTER"),
            "{render}"
        );
        // The second sitting on another boot: two machines, the spread between them estimated.
        let mut moved = ExperimentRecord::load(two.path()).unwrap();
        moved.sittings[0].host.boot_id = "another-boot".into();
        moved.save(two.path()).unwrap();
        let a = compare_dirs(&dirs, 0.02, false, None).unwrap()[0].answers[0].clone();
        assert_eq!(a.covers, "across 2 sittings on 2 machines", "{a:?}");
        assert!(a.tau.unwrap() > 0.05, "{a:?}");
        assert_eq!(a.decision, crate::stats::sequential::Decision::Open, "{a:?}");
        // The same directory twice is refused: its rounds would count twice.
        let err = compare_dirs(&[dirs[0].clone(), dirs[0].clone()], 0.02, false, None).unwrap_err();
        assert!(
            format!("{err:#}").contains("give each experiment directory once"),
            "{err:#}"
        );
        // Each sitting alone is decided: better, for this sitting only.
        let alone = compare_dirs(&dirs[..1], 0.02, false, None).unwrap();
        assert_eq!(alone[0].answers[0].covers, "this sitting only");
        assert_eq!(alone[0].answers[0].decision, crate::stats::sequential::Decision::Better);
        // A directory of another experiment is refused, naming what differs.
        let other = Experiment::parse(&text.replace("{name: b}", "{name: c}"), "u.yaml").unwrap();
        let three = tempfile::tempdir().unwrap();
        sitting(&other, three.path(), "wednesday", 1.0);
        let err = compare_dirs(
            &[dirs[0].clone(), three.path().display().to_string()],
            0.02,
            false,
            None,
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("variants differ"), "{err:#}");
    }
}
