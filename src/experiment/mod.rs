//! Experiments: configurations compared side by side, on fresh nodes, with honest statistics.
//! An experiment file (`spec`) names variants and measurements and asks a question
//! (`question`: primary metrics, effects, repeats, budget); rounds of steps run in an order
//! that favours no variant (`rounds`, `order`), each on the variant's own freshly started nodes
//! and with the same code as `caplab run` / `capacity` (`step`), until the question is answered;
//! experiment.json (`record`) is rewritten after every step so an interrupted experiment keeps
//! what it did and resumes where it stopped; each measurement's variants are compared metric by
//! metric (`compare`), and their server profiles frame by frame (`profile_diff`). `check` prints
//! the steps of a file without running them.

pub mod check;
pub mod compare;
pub mod order;
pub mod profile_diff;
pub mod question;
pub mod record;
pub mod rounds;
pub mod spec;
pub mod step;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::cluster::Home;
use crate::console::say;
use crate::engine::Stop;
use crate::measure::RunStatus;
use crate::stats::sequential::Design;
use compare::{Answer, Ask, Comparison, Excluded, Observation, Question, compare};
use record::ExperimentRecord;
use spec::{Experiment, What};

/// The chance of any wrong decision over every primary question and look of an experiment.
pub const ALPHA: f64 = 0.05;

/// Runs (or, given the record of an interrupted run, resumes) `exp` into `out`. Nodes live
/// under `out/home` (jars come from `cache`), apart from any the user runs.
pub fn run(
    exp: &Experiment,
    out: &Path,
    cache: &Path,
    resume: Option<ExperimentRecord>,
    history: Option<&crate::history::Location>,
    stop: &Arc<Stop>,
) -> Result<ExperimentRecord> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let home = Home {
        data: out.join("home"),
        cache: cache.to_path_buf(),
    };
    let began = Instant::now();
    let mut record = rounds::open_record(exp, out, resume)?;
    let prior_elapsed = record.elapsed_s;
    let fresh = exp.file.fresh;
    rounds::run_rounds(
        exp,
        &mut record,
        out,
        stop,
        &mut |cell, dir| {
            let outcome = step::run_step(&home, fresh, cell, dir, stop)?;
            crate::history::record_finished(history, dir, &Default::default());
            Ok(outcome)
        },
        &mut |record| comparisons(exp, record, out),
    )?;
    step::stop_nodes(&home);
    record.status = rounds::final_status(&record, stop);
    if record.status == RunStatus::Interrupted {
        record.interrupted_by = stop.cause().map(str::to_string);
    }
    record.comparison = comparisons(exp, &record, out);
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
    record.elapsed_s = prior_elapsed + began.elapsed().as_secs_f64();
    record.save(out)?;
    Ok(record)
}

/// The design every primary question of `exp` shares: the error split over them, looked at
/// from the least to the most rounds.
pub fn design(exp: &Experiment) -> Design {
    let others = exp.cells.len().saturating_sub(1);
    let questions: usize = (0..exp.file.measure.len()).map(|m| exp.primary(m).len() * others).sum();
    let r = exp.file.repeats;
    Design::new(ALPHA, questions, r.min() as usize, r.max() as usize)
}

/// Each measurement's comparison, from the completed steps' results on disk, with the answers
/// to its primary questions at the record's round (those decided earlier carried over).
pub fn comparisons(exp: &Experiment, record: &ExperimentRecord, out: &Path) -> Vec<Comparison> {
    let design = design(exp);
    (0..exp.file.measure.len())
        .map(|m| {
            // A completed step whose files cannot be read is left out and named, not dropped.
            let mut unreadable = Vec::new();
            let variants: Vec<(String, Vec<Observation>)> = exp
                .file
                .variants
                .iter()
                .enumerate()
                .map(|(v, variant)| {
                    let mut obs = Vec::new();
                    let done = record
                        .steps
                        .iter()
                        .filter(|s| s.at.variant == v && s.at.measurement == m)
                        .filter(|s| s.status == Some(RunStatus::Completed));
                    for s in done {
                        match Observation::load(&out.join(&s.dir)) {
                            Ok(o) => obs.push(o),
                            Err(e) => unreadable.push(Excluded {
                                variant: variant.name.clone(),
                                dir: s.dir.clone(),
                                why: format!("{e:#}"),
                                unreadable: true,
                            }),
                        }
                    }
                    (variant.name.clone(), obs)
                })
                .collect();
            let name = &exp.file.measure[m].name;
            let primary: Vec<(String, f64)> = exp
                .primary(m)
                .into_iter()
                .map(|k| {
                    let e = exp.effect(&k);
                    (k, e)
                })
                .collect();
            let earlier: Vec<Answer> = record
                .comparison
                .iter()
                .find(|c| &c.measurement == name)
                .map(|c| c.answers.clone())
                .unwrap_or_default();
            let ask = Ask {
                baseline: exp.baseline,
                floor: exp.file.floor,
                tested: exp.file.metrics.as_deref(),
                steady_only: !exp.file.include_unsteady,
                question: Some(Question {
                    primary: &primary,
                    design,
                    round: record.rounds() as usize,
                    complete: record.round_complete(),
                }),
                earlier: &earlier,
            };
            let mut cmp = compare(name, &variants, ask);
            cmp.excluded.extend(unreadable);
            cmp
        })
        .collect()
}

/// `caplab compare`: one experiment directory (its comparison, from its steps on disk), or
/// variants given as results directories, repeats of one variant joined by commas
/// (`a1,a2,a3 b1,b2,b3`); the first is the baseline. Runs that were not steady are left out
/// unless `include_unsteady` (or the experiment file says so).
pub fn compare_dirs(args: &[String], floor: f64, include_unsteady: bool) -> Result<Vec<Comparison>> {
    if let [one] = args
        && Path::new(one).join(record::EXPERIMENT_FILE).exists()
    {
        let dir = Path::new(one);
        let record = ExperimentRecord::load(dir)?;
        let mut exp = Experiment::parse(&record.text, &record.origin)?;
        exp.file.include_unsteady |= include_unsteady;
        return Ok(comparisons(&exp, &record, dir));
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
        let obs = dirs.iter().map(|d| Observation::load(d)).collect::<Result<Vec<_>>>()?;
        let name = dirs
            .first()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| arg.clone());
        variants.push((name, obs));
    }
    // Directories given by hand: one look, at the repeats there are, at the run defaults.
    let n = variants
        .iter()
        .map(|(_, o)| o.len())
        .min()
        .unwrap_or(0)
        .max(question::AUTO_MIN as usize);
    let primary: Vec<(String, f64)> = variants
        .iter()
        .flat_map(|(_, o)| o.first())
        .next()
        .map(|o| match o {
            Observation::Capacity(_) => question::PRIMARY_CAPACITY.to_vec(),
            Observation::Run { .. } => question::PRIMARY_RUN.to_vec(),
        })
        .unwrap_or_default()
        .into_iter()
        .map(|k| (k.to_string(), question::default_effect(k)))
        .collect();
    let ask = Ask {
        baseline: 0,
        floor,
        tested: None,
        steady_only: !include_unsteady,
        question: Some(Question {
            primary: &primary,
            design: Design::new(ALPHA, primary.len() * variants.len().saturating_sub(1), n, n),
            round: n,
            complete: true,
        }),
        earlier: &[],
    };
    Ok(vec![compare("compare", &variants, ask)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_step_whose_results_cannot_be_read_is_named_not_dropped() {
        let text = "name: t\nrepeats: 2\nnode: {version: 5.0.9, java: 17}\nrun: {duration: 5s}\n\
                    variants: [{name: a}, {name: b}]\nmeasure: [{name: insert, workload: insert}]\n";
        let exp = Experiment::parse(text, "t.yaml").unwrap();
        // Steps recorded as completed whose directories hold nothing: no result.json.
        let out = tempfile::tempdir().unwrap();
        let mut record = rounds::open_record(&exp, out.path(), None).unwrap();
        for s in &mut record.steps {
            s.status = Some(RunStatus::Completed);
        }
        let cmp = &comparisons(&exp, &record, out.path())[0];
        assert_eq!(cmp.excluded.len(), 4, "{cmp:?}");
        assert!(
            cmp.excluded
                .iter()
                .all(|e| e.unreadable && e.why.contains("result.json"))
        );
        let text = cmp.render();
        assert!(text.contains("Left out, unreadable (4 run(s)):"), "{text}");
        assert!(text.contains("steps/001-a-r1-insert: cannot read"), "{text}");
    }
}
