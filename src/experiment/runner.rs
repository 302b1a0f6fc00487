//! Running a sitting's plan: its steps in order, the record saved after every one; a step still
//! warming replaced by one with a longer warm-up (`plan::replace`); after every round the
//! sitting's comparison made (`Evaluate`) and its primary questions looked at, and, with auto
//! repeats, rounds added until every one is decided, the most repeats have run, or another
//! round would overrun the budget. A step whose nodes are refused for a reason every step would
//! share (a port another process holds) ends the sitting at once.
//!
//! A record opens three ways (`Opening`): a new experiment (its first sitting), a sitting
//! resumed after an interruption, or a new sitting of an experiment run before (another day or
//! machine), which must be the same experiment.

use anyhow::{Result, bail};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::compare::Comparison;
use super::plan::{self, StepAt};
use super::record::{self, ExperimentRecord, Host, Sitting};
use super::spec::{Cell, Experiment};
use super::step::{StepOutcome, StepPlan};
use crate::cluster::local::Refused;
use crate::console::say;
use crate::engine::Stop;
use crate::measure::RunStatus;

/// Runs steps that share their time (one step, or a duet's two at once): each cell into its
/// directory, an outcome for each in the same order.
pub type RunSteps<'a> = dyn FnMut(&[StepCall], StepPlan) -> Result<Vec<StepOutcome>> + 'a;

/// A step to run: its variant, cell and directory.
pub struct StepCall<'c> {
    pub variant: usize,
    pub cell: &'c Cell,
    pub dir: PathBuf,
}
/// The current sitting's comparisons of what its completed steps left.
pub type Evaluate<'a> = dyn FnMut(&ExperimentRecord) -> Vec<Comparison> + 'a;

/// How a record is opened.
pub enum Opening {
    /// A new experiment: its first sitting (named, or by date and host).
    New(Option<String>),
    /// The current sitting of this record, interrupted, continued.
    Resume(ExperimentRecord),
    /// A new sitting of this record's experiment (named, or by date and host).
    Sitting(ExperimentRecord, Option<String>),
}

/// The record to run, with the current sitting's first rounds planned (every step of a fixed
/// number of repeats) when it is new.
pub fn open_record(exp: &Experiment, out: &Path, opening: Opening) -> Result<ExperimentRecord> {
    let record = match opening {
        Opening::Resume(mut r) => {
            let s = r.current_mut();
            s.status = RunStatus::Running;
            s.interrupted_by = None;
            s.stopped = None;
            r
        }
        Opening::New(name) => {
            let mut r = ExperimentRecord {
                format: record::FORMAT,
                caplab_version: env!("CARGO_PKG_VERSION").into(),
                name: exp.name(),
                origin: exp.origin.clone(),
                text: exp.text.clone(),
                sittings: Vec::new(),
                steps: Vec::new(),
                comparison: Vec::new(),
                profile_diffs: Vec::new(),
            };
            begin_sitting(exp, &mut r, name)?;
            r
        }
        Opening::Sitting(mut r, name) => {
            same_experiment(&Experiment::parse_kept(&r.text, &r.origin)?, exp, out)?;
            let last = r.current();
            if matches!(last.status, RunStatus::Running | RunStatus::Interrupted) && name.is_none() {
                bail!(
                    "{}'s sitting {} did not finish: continue it with --resume {0}, or start another sitting anyway \
                     with --sitting NAME",
                    out.display(),
                    last.name
                );
            }
            r.text = exp.text.clone();
            r.origin = exp.origin.clone();
            begin_sitting(exp, &mut r, name)?;
            r
        }
    };
    let rounds = record.rounds();
    let planned: Vec<StepAt> = record
        .current_steps()
        .filter(|s| !s.replacement)
        .map(|s| s.at)
        .collect();
    if rounds > exp.file.repeats.max() || planned != plan::expected(exp, &record, rounds) {
        bail!(
            "{} does not match its experiment file's steps: it cannot be resumed",
            out.display()
        );
    }
    Ok(record)
}

/// Appends a new sitting to `r` (named `name`, or by date and host, with a suffix if taken)
/// with its first rounds planned.
fn begin_sitting(exp: &Experiment, r: &mut ExperimentRecord, name: Option<String>) -> Result<()> {
    let host = Host::here();
    let name = match name {
        Some(n) => {
            if r.sitting_index(&n).is_some() {
                bail!("the experiment already has a sitting named {n}: choose another --sitting");
            }
            n
        }
        None => {
            let date = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
            let base = format!("{}-{}", &date[..10], host.hostname);
            (1..)
                .map(|i| if i == 1 { base.clone() } else { format!("{base}-{i}") })
                .find(|n| r.sitting_index(n).is_none())
                .expect("a free name")
        }
    };
    if let Some(same) = r
        .sittings
        .iter()
        .find(|s| !host.boot_id.is_empty() && s.host.boot_id == host.boot_id)
    {
        say(&format!(
            "Note: sitting {name} runs on the same boot of the same machine as sitting {}: it measures less of the \
             spread between sittings than another day or machine would",
            same.name
        ));
    }
    r.sittings.push(Sitting {
        name,
        host,
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        command: crate::measure::out::command_line(),
        seed: plan::new_seed(exp),
        status: RunStatus::Running,
        interrupted_by: None,
        elapsed_s: 0.0,
        stopped: None,
        comparison: Vec::new(),
    });
    for round in 1..=exp.file.repeats.min() {
        plan::push_round(exp, r, round);
    }
    Ok(())
}

/// A new sitting (or a record pooled with another) must run the experiment `before` ran: the
/// same variants and measurements with the same options (repeats, budget, order and the like
/// may differ). `out` names where `before` is.
pub fn same_experiment(before: &Experiment, exp: &Experiment, out: &Path) -> Result<()> {
    let what = |e: &Experiment| {
        serde_json::json!({"node": e.file.node, "run": e.file.run, "variants": e.file.variants, "measure": e.file.measure,
            "baseline": e.baseline, "design": e.file.design})
    };
    let (a, b) = (what(before), what(exp));
    if a != b {
        let differs: Vec<&str> = ["node", "run", "variants", "measure", "baseline", "design"]
            .into_iter()
            .filter(|k| a[k] != b[k])
            .collect();
        bail!(
            "{} holds another experiment ({} differ from {}): a sitting must run the same variants and \
             measurements; choose another --out, or pass --force to replace it",
            out.display(),
            differs.join(", "),
            exp.origin
        );
    }
    Ok(())
}

/// Runs the current sitting's steps not completed yet and, with auto repeats, further rounds
/// until its question is answered; `step` runs one step, `evaluate` makes the sitting's
/// comparisons after a round.
pub fn run_rounds(
    exp: &Experiment,
    record: &mut ExperimentRecord,
    out: &Path,
    stop: &Arc<Stop>,
    step: &mut RunSteps,
    evaluate: &mut Evaluate,
) -> Result<()> {
    let already = record
        .current_steps()
        .filter(|s| s.status == Some(RunStatus::Completed))
        .count();
    say(&format!(
        "Experiment {}, sitting {} ({}): {}{}; results in {}",
        record.name,
        record.current().name,
        record.current().host.describe(),
        exp.shape(),
        if already > 0 {
            format!(", {already} steps done before")
        } else {
            String::new()
        },
        out.display()
    ));
    let (began, prior_elapsed) = (Instant::now(), record.current().elapsed_s);
    // Steps completed before a resume time the rounds still to come, as much as new ones.
    let mut timed: Vec<f64> = record
        .current_steps()
        .filter(|s| s.status == Some(RunStatus::Completed))
        .filter_map(|s| s.elapsed_s)
        .collect();
    loop {
        run_pending(exp, record, out, stop, step, &mut timed, (began, prior_elapsed))?;
        if stop.is_requested() || record.current().stopped.is_some() {
            break;
        }
        let rounds = record.rounds();
        let comparison = evaluate(record);
        for c in &comparison {
            for a in &c.answers {
                say(&format!("  after round {rounds}, {}: {}", c.measurement, a.line()));
            }
        }
        record.current_mut().comparison = comparison;
        let stopped = plan::next_round(exp, record, &timed, prior_elapsed + began.elapsed().as_secs_f64());
        record.current_mut().stopped = stopped;
        record.save(out)?;
        if record.current().stopped.is_some() {
            break;
        }
        let before = record.steps.len();
        plan::push_round(exp, record, rounds + 1);
        let decided: Vec<&str> = plan::open_in(exp, record, rounds + 1)
            .iter()
            .zip(&exp.file.measure)
            .filter(|(open, _)| !**open)
            .map(|(_, m)| m.name.as_str())
            .collect();
        if !decided.is_empty() {
            say(&format!(
                "Round {}: {} step(s); {} decided, not run again",
                rounds + 1,
                record.steps.len() - before,
                decided.join(", ")
            ));
        }
    }
    if let Some(why) = &record.current().stopped {
        say(&format!("Sitting ends: {why}"));
    }
    Ok(())
}

/// Runs the current sitting's steps not completed yet, in order, saving the record after each
/// (a duet's two together); a replacement is queued after a step still warming, while its cell
/// has replacements left.
fn run_pending(
    exp: &Experiment,
    record: &mut ExperimentRecord,
    out: &Path,
    stop: &Arc<Stop>,
    step: &mut RunSteps,
    timed: &mut Vec<f64>,
    (began, prior_elapsed): (Instant, f64),
) -> Result<()> {
    let mut i = 0;
    let mut last_round = None;
    // Steps run in this pass (a duet's second step runs with its first).
    let mut ran = BTreeSet::new();
    while i < record.steps.len() {
        let index = record.steps[i].index;
        if !record.in_current(&record.steps[i])
            || record.steps[i].status == Some(RunStatus::Completed)
            || ran.contains(&index)
        {
            if record.in_current(&record.steps[i]) {
                last_round = Some(record.steps[i].at.repeat);
            }
            i += 1;
            continue;
        }
        if stop.is_requested() {
            break;
        }
        let at = record.steps[i].clone();
        // The first rounds (up to the first look) are planned together: each still starts
        // only if it can end within the budget.
        let first_of_round = last_round.is_some_and(|r| r < at.at.repeat);
        last_round = Some(at.at.repeat);
        if first_of_round
            && let Some(why) = plan::round_over_budget(
                exp,
                record,
                at.at.repeat,
                timed,
                prior_elapsed + began.elapsed().as_secs_f64(),
            )
        {
            record.current_mut().stopped = Some(why);
            record.save(out)?;
            break;
        }
        let group = plan::together(exp, record, i);
        announce(record, &group, timed);
        let begin = Instant::now();
        let how = StepPlan {
            windows: at.windows,
            longer_warmup: at.replacement,
        };
        let calls: Vec<StepCall> = group
            .iter()
            .map(|&k| {
                let s = &record.steps[k];
                StepCall {
                    variant: s.at.variant,
                    cell: &exp.cells[s.at.variant][s.at.measurement],
                    dir: out.join(&s.dir),
                }
            })
            .collect();
        let outcome = step(&calls, how);
        ran.extend(group.iter().map(|&k| record.steps[k].index));
        record_outcomes(exp, record, &group, outcome, begin.elapsed().as_secs_f64(), timed);
        record.current_mut().elapsed_s = prior_elapsed + began.elapsed().as_secs_f64();
        record.save(out)?;
        if record.current().stopped.is_some() {
            break;
        }
        i += 1;
    }
    Ok(())
}

/// `Step 37: variant 6.0-alpha2, round 1, batch (about 20 min left)`; a duet's two steps as one
/// line.
fn announce(record: &ExperimentRecord, group: &[usize], timed: &[f64]) {
    let at = &record.steps[group[0]];
    let left = record
        .current_steps()
        .filter(|s| s.status != Some(RunStatus::Completed) && s.at.repeat == at.at.repeat)
        .count();
    let (indexes, variants): (Vec<String>, Vec<&str>) = group
        .iter()
        .map(|&k| (record.steps[k].index.to_string(), record.steps[k].variant_name.as_str()))
        .unzip();
    say(&format!(
        "Step {}: variant{} {}, round {}{}, {}{}",
        indexes.join(" and "),
        if group.len() > 1 { "s" } else { "" },
        variants.join(" and "),
        at.at.repeat,
        if group.len() > 1 {
            " (a duet: at once, half the load each)"
        } else if at.replacement {
            " (replacing a window still warming, with a longer warm-up)"
        } else {
            ""
        },
        at.measurement_name,
        plan::eta(timed, left)
    ));
}

/// Records what steps `group` (run together for `elapsed` seconds) left; a completed step adds
/// its share of the time to `timed`, and one still warming gets a replacement queued after it.
fn record_outcomes(
    exp: &Experiment,
    record: &mut ExperimentRecord,
    group: &[usize],
    outcome: Result<Vec<StepOutcome>>,
    elapsed: f64,
    timed: &mut Vec<f64>,
) {
    let share = elapsed / group.len() as f64;
    let outcomes = match outcome {
        Ok(o) => o,
        Err(e) => {
            for &k in group {
                let index = record.steps[k].index;
                say(&format!("  step {index} failed: {e:#}"));
                let s = &mut record.steps[k];
                s.elapsed_s = Some(elapsed);
                s.status = Some(RunStatus::Failed);
                s.error = Some(format!("{e:#}"));
                if e.chain().any(|c| c.is::<Refused>()) {
                    record.current_mut().stopped = Some(format!(
                        "step {index} was refused before any node started, and every step would be: {e:#}"
                    ));
                }
            }
            return;
        }
    };
    let mut replaced = Vec::new();
    for (&k, o) in group.iter().zip(outcomes) {
        let s = &mut record.steps[k];
        s.elapsed_s = Some(elapsed);
        s.status = Some(o.status);
        s.error = None;
        s.steady_class = o.steady.as_ref().and_then(|v| v.class);
        s.steady = o.steady.as_ref().map(|v| v.steady);
        s.settled = o.settled;
        s.values = o.values;
        s.window_values = o.window_values;
        let replace = plan::replace(exp, record, &record.steps[k]);
        let who = if group.len() > 1 {
            format!("{}: ", record.steps[k].variant_name)
        } else {
            String::new()
        };
        say(&format!("  {who}{}{}", o.line, window_note(&record.steps[k], replace)));
        if o.status == RunStatus::Completed {
            timed.push(share);
        }
        if replace {
            replaced.push(k);
        }
    }
    // From the last, so that each insertion leaves the earlier indexes where they were.
    for k in replaced.into_iter().rev() {
        plan::push_replacement(exp, record, k);
    }
}

/// What becomes of a step's window, said after its line: replaced when it was still warming,
/// compared whatever its class otherwise.
fn window_note(s: &record::ExperimentStep, replaced: bool) -> &'static str {
    match (s.settled, s.steady, replaced) {
        (Some(false), _, true) => " (still warming: a replacement with a longer warm-up runs next)",
        (Some(false), _, false) => " (still warming, no replacement left: compared, and named)",
        (_, Some(false), _) => {
            " (compared: a level shift after a settled warm-up is data; the steady-only check leaves it out)"
        }
        _ => "",
    }
}

/// Interrupted when a stop was requested; otherwise failed when a step of the current sitting
/// failed, and completed when none did (planned steps the budget left unrun are not failures).
pub fn final_status(record: &ExperimentRecord, stop: &Stop) -> RunStatus {
    if stop.cause().is_some() {
        RunStatus::Interrupted
    } else if record.current_steps().any(|s| s.status == Some(RunStatus::Failed)) {
        RunStatus::Failed
    } else {
        RunStatus::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::compare::Answer;
    use crate::stats::sequential::Decision;
    use std::cell::RefCell;

    /// Two variants, one run measurement, `repeats` as given: two steps a round, rotated (so
    /// the order is known; `order: random` is tested on its own).
    fn exp_with(repeats: &str) -> Experiment {
        let text = format!(
            "name: t\nrepeats: {repeats}\norder: rotate\nnode: {{version: 5.0.9, java: 17}}\nrun: {{duration: 5s}}\n\
             variants: [{{name: a}}, {{name: b}}]\nmeasure: [{{name: insert, workload: insert}}]\n"
        );
        Experiment::parse(&text, "t.yaml").unwrap()
    }

    fn exp() -> Experiment {
        exp_with("2")
    }

    /// Two variants and two measurements (insert, batch), with `head`'s keys.
    fn two_measurements(head: &str) -> Experiment {
        let text = format!(
            "name: t\n{head}\nnode: {{version: 5.0.9, java: 17}}\nrun: {{duration: 5s}}\n\
             variants: [{{name: a}}, {{name: b}}]\n\
             measure: [{{name: insert, workload: insert}}, {{name: batch, workload: batch}}]\n"
        );
        Experiment::parse(&text, "t.yaml").unwrap()
    }

    fn outcome(status: RunStatus, settled: Option<bool>) -> Result<StepOutcome> {
        Ok(StepOutcome {
            status,
            line: status.name().into(),
            steady: None,
            settled,
            values: Default::default(),
            window_values: Vec::new(),
        })
    }

    fn done(_: &str) -> Result<StepOutcome> {
        outcome(RunStatus::Completed, Some(true))
    }

    fn new(e: &Experiment, out: &Path) -> ExperimentRecord {
        open_record(e, out, Opening::New(Some("s1".into()))).unwrap()
    }

    /// A comparison whose one answer is `decision`.
    fn answered(decision: Decision) -> Vec<Comparison> {
        vec![comparison("insert", decision, 3)]
    }

    /// Measurement `measurement`'s comparison, whose one answer is `decision` from round `round`.
    fn comparison(measurement: &str, decision: Decision, round: usize) -> Comparison {
        let mut a = Answer::open("throughput", "b", 0.05, round);
        a.decision = decision;
        Comparison {
            measurement: measurement.into(),
            baseline: "a".into(),
            answers: vec![a],
            ..Comparison::default()
        }
    }

    /// Runs `e`'s rounds with `fake` steps and `evaluate`, noting the directories run.
    fn rounds_run(
        e: &Experiment,
        record: &mut ExperimentRecord,
        out: &Path,
        stop: &Arc<Stop>,
        mut fake: impl FnMut(usize) -> Result<StepOutcome>,
        mut evaluate: impl FnMut(&ExperimentRecord) -> Vec<Comparison>,
    ) -> Vec<String> {
        let seen = RefCell::new(Vec::new());
        run_rounds(
            e,
            record,
            out,
            stop,
            &mut |calls, _| {
                let mut outcomes = Vec::new();
                for c in calls {
                    seen.borrow_mut()
                        .push(c.dir.strip_prefix(out).unwrap().display().to_string());
                    outcomes.push(fake(seen.borrow().len())?);
                }
                Ok(outcomes)
            },
            &mut evaluate,
        )
        .unwrap();
        seen.into_inner()
    }

    #[test]
    fn every_step_runs_once_in_order_and_the_record_is_saved_after_each() {
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&exp(), out.path());
        let stop = Stop::new();
        let ran = rounds_run(&exp(), &mut record, out.path(), &stop, |_| done("ok"), |_| Vec::new());
        assert_eq!(
            ran,
            [
                "steps/001-a-r1-insert",
                "steps/002-b-r1-insert",
                "steps/003-b-r2-insert",
                "steps/004-a-r2-insert"
            ]
        );
        assert_eq!(final_status(&record, &stop), RunStatus::Completed);
        assert_eq!(record.current().stopped.as_deref(), Some("2 repeats, as the file asks"));
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(
            saved
                .steps
                .iter()
                .all(|s| s.status == Some(RunStatus::Completed) && s.elapsed_s.is_some() && s.sitting == "s1")
        );
        assert!(!saved.current().host.hostname.is_empty(), "the host's facts are kept");
    }

    #[test]
    fn a_random_order_is_drawn_from_the_sittings_seed_and_resumes_the_same() {
        let text = exp().text.replace("order: rotate", "order: random\nseed: 42");
        let e = Experiment::parse(&text, "t.yaml").unwrap();
        let out = tempfile::tempdir().unwrap();
        let record = new(&e, out.path());
        assert_eq!(record.current().seed, 42);
        let planned: Vec<StepAt> = record.steps.iter().map(|s| s.at).collect();
        assert_eq!(planned, plan::order_of(&e, 42, 2));
        // Resumable: the order is the seed's, not the run's.
        assert!(open_record(&e, out.path(), Opening::Resume(record)).is_ok());
    }

    #[test]
    fn a_failed_step_is_recorded_and_the_rest_still_run() {
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&exp(), out.path());
        let stop = Stop::new();
        let ran = rounds_run(
            &exp(),
            &mut record,
            out.path(),
            &stop,
            |n| {
                if n == 2 {
                    Err(anyhow::anyhow!("node1 exited during startup"))
                } else {
                    done("ok")
                }
            },
            |_| Vec::new(),
        );
        assert_eq!(ran.len(), 4);
        let failed = &record.steps[1];
        assert_eq!(
            (failed.status, failed.error.as_deref()),
            (Some(RunStatus::Failed), Some("node1 exited during startup"))
        );
        assert_eq!(final_status(&record, &stop), RunStatus::Failed);
    }

    #[test]
    fn a_step_refused_for_a_reason_every_step_shares_ends_the_experiment() {
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&exp(), out.path());
        let stop = Stop::new();
        let ran = rounds_run(
            &exp(),
            &mut record,
            out.path(),
            &stop,
            |_| {
                Err(anyhow::Error::new(Refused(
                    "node1 cannot start: its CQL port is in use".into(),
                )))
            },
            |_| Vec::new(),
        );
        assert_eq!(ran.len(), 1, "the first refusal ends it: {ran:?}");
        let why = record.current().stopped.clone().unwrap();
        assert!(why.contains("every step would be") && why.contains("in use"), "{why}");
        assert_eq!(final_status(&record, &stop), RunStatus::Failed);
    }

    #[test]
    fn an_interrupted_experiment_resumes_where_it_stopped() {
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&exp(), out.path());
        let stop = Stop::new();
        // Ctrl-C during the second step: it ends (interrupted, as a run does), no third starts.
        let ran = rounds_run(
            &exp(),
            &mut record,
            out.path(),
            &stop,
            |n| {
                if n == 2 {
                    stop.request_because("SIGINT");
                    outcome(RunStatus::Interrupted, Some(true))
                } else {
                    done("ok")
                }
            },
            |_| Vec::new(),
        );
        assert_eq!(ran.len(), 2);
        assert_eq!(final_status(&record, &stop), RunStatus::Interrupted);
        // Resumed from what was saved: the finished step is not run again, the interrupted one is.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        let mut resumed = open_record(&exp(), out.path(), Opening::Resume(saved)).unwrap();
        assert_eq!(resumed.current().status, RunStatus::Running);
        let stop = Stop::new();
        let ran = rounds_run(&exp(), &mut resumed, out.path(), &stop, |_| done("ok"), |_| Vec::new());
        assert_eq!(
            ran,
            [
                "steps/002-b-r1-insert",
                "steps/003-b-r2-insert",
                "steps/004-a-r2-insert"
            ]
        );
        assert_eq!(final_status(&resumed, &stop), RunStatus::Completed);
    }

    #[test]
    fn a_record_of_other_steps_is_not_resumed() {
        let out = tempfile::tempdir().unwrap();
        let mut other = new(&exp(), out.path());
        other.steps.pop();
        let err = open_record(&exp(), out.path(), Opening::Resume(other)).unwrap_err();
        assert!(format!("{err}").contains("cannot be resumed"), "{err}");
    }

    #[test]
    fn a_second_sitting_adds_its_own_rounds_and_needs_the_same_experiment() {
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&exp(), out.path());
        let stop = Stop::new();
        rounds_run(&exp(), &mut record, out.path(), &stop, |_| done("ok"), |_| Vec::new());
        record.current_mut().status = final_status(&record, &stop);
        let mut second = open_record(&exp(), out.path(), Opening::Sitting(record.clone(), None)).unwrap();
        assert_eq!(second.sittings.len(), 2);
        assert_ne!(second.current().name, "s1");
        assert_eq!((second.rounds(), second.current_steps().count()), (2, 4));
        let ran = rounds_run(&exp(), &mut second, out.path(), &stop, |_| done("ok"), |_| Vec::new());
        // Its steps are numbered on from the first sitting's, its rounds from 1.
        assert_eq!(ran[0], "steps/005-a-r1-insert");
        assert_eq!(second.steps.len(), 8);
        // The same name twice, or another experiment, is refused.
        let err = open_record(&exp(), out.path(), Opening::Sitting(second.clone(), Some("s1".into()))).unwrap_err();
        assert!(format!("{err}").contains("already has a sitting named s1"), "{err}");
        let other = Experiment::parse(&exp().text.replace("{name: b}", "{name: c}"), "t.yaml").unwrap();
        let err = open_record(&other, out.path(), Opening::Sitting(second.clone(), None)).unwrap_err();
        assert!(format!("{err}").contains("(variants differ from t.yaml)"), "{err}");
        // A sitting cut short is continued with --resume, unless a new one is named.
        second.current_mut().status = RunStatus::Interrupted;
        let err = open_record(&exp(), out.path(), Opening::Sitting(second.clone(), None)).unwrap_err();
        assert!(
            format!("{err}").contains("did not finish: continue it with --resume"),
            "{err}"
        );
        assert!(open_record(&exp(), out.path(), Opening::Sitting(second, Some("again".into()))).is_ok());
    }

    #[test]
    fn auto_repeats_run_rounds_until_every_question_is_decided() {
        let e = exp_with("auto");
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&e, out.path());
        assert_eq!(record.steps.len(), 6, "the first three rounds, planned");
        let stop = Stop::new();
        let ran = rounds_run(
            &e,
            &mut record,
            out.path(),
            &stop,
            |_| done("ok"),
            |r| {
                answered(if r.rounds() >= 5 {
                    Decision::Better
                } else {
                    Decision::Open
                })
            },
        );
        assert_eq!(ran.len(), 10, "five rounds of two steps: {ran:?}");
        assert_eq!(ran[8..], ["steps/009-a-r5-insert", "steps/010-b-r5-insert"]);
        assert_eq!(
            record.current().stopped.as_deref(),
            Some("every primary question decided after 5 rounds")
        );
        // Never decided: the most rounds.
        let out = tempfile::tempdir().unwrap();
        let e = exp_with("{min: 3, max: 4}");
        let mut record = new(&e, out.path());
        let ran = rounds_run(
            &e,
            &mut record,
            out.path(),
            &stop,
            |_| done("ok"),
            |_| answered(Decision::Open),
        );
        assert_eq!(ran.len(), 8);
        assert!(
            record
                .current()
                .stopped
                .as_deref()
                .unwrap()
                .starts_with("4 rounds, the most"),
            "{:?}",
            record.current().stopped
        );
        // A budget a round would overrun stops it, the first rounds too: here after round 1,
        // before the first look (3 repeats).
        let out = tempfile::tempdir().unwrap();
        let text = e.text.replace("repeats: {min: 3, max: 4}", "repeats: auto\nbudget: 0s");
        let e = Experiment::parse(&text, "t.yaml").unwrap();
        let mut record = new(&e, out.path());
        let ran = rounds_run(
            &e,
            &mut record,
            out.path(),
            &stop,
            |_| done("ok"),
            |_| answered(Decision::Open),
        );
        assert_eq!(ran.len(), 2);
        let why = record.current().stopped.clone().unwrap();
        assert!(
            why.contains("budget of 0s, before the first look at 3 repeats: no question was looked at"),
            "{why}"
        );
        // The record of an auto experiment resumes with its rounds.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Opening::Resume(saved)).is_ok());
    }

    #[test]
    fn a_round_starts_only_if_it_ends_within_the_budget() {
        // Two variants: two steps a round; steps of 20 minutes, a budget of an hour.
        let e = Experiment::parse(
            &exp_with("auto")
                .text
                .replace("repeats: auto", "repeats: auto\nbudget: 1h"),
            "t.yaml",
        )
        .unwrap();
        let out = tempfile::tempdir().unwrap();
        let record = new(&e, out.path());
        let step = [1200.0];
        // After round 1 (40 min): round 2 would end at 80 min.
        let why = plan::round_over_budget(&e, &record, 2, &step, 2400.0).unwrap();
        assert!(
            why.starts_with("round 2 (about 40m) would end after the budget of 1h, before the first look"),
            "{why}"
        );
        assert!(why.contains("a budget of at least 2h"), "{why}");
        // With 10-minute steps it fits; nothing timed yet: no estimate, no stop.
        assert_eq!(plan::round_over_budget(&e, &record, 2, &[600.0], 1200.0), None);
        assert_eq!(plan::round_over_budget(&e, &record, 2, &[], 3500.0), None);
        // After the first look, later rounds say the questions are open.
        let why = plan::round_over_budget(&e, &record, 4, &step, 2400.0);
        assert_eq!(why, None, "round 4 has no planned steps yet: an empty round fits");
    }

    #[test]
    fn a_measurement_whose_questions_are_decided_is_not_run_in_later_rounds() {
        let e = two_measurements("repeats: auto\norder: rotate");
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&e, out.path());
        let stop = Stop::new();
        // insert is decided at round 3 (and carried so, as answers are); batch at round 5.
        let evaluate = |r: &ExperimentRecord| {
            let n = r.rounds() as usize;
            let batch = if n >= 5 { Decision::Worse } else { Decision::Open };
            vec![
                comparison("insert", Decision::Better, 3),
                comparison("batch", batch, n.min(5)),
            ]
        };
        let ran = rounds_run(&e, &mut record, out.path(), &stop, |_| done("ok"), evaluate);
        assert_eq!(ran.len(), 3 * 4 + 2 * 2, "three full rounds, then batch alone: {ran:?}");
        assert!(ran[12..].iter().all(|d| d.ends_with("-batch")), "{ran:?}");
        assert_eq!(
            record.current().stopped.as_deref(),
            Some("every primary question decided after 5 rounds")
        );
        // The record resumes: its rounds without insert are what the file and the answers ask.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Opening::Resume(saved)).is_ok());
        // A record whose later rounds ran insert though it was decided is not this experiment's.
        let mut other = ExperimentRecord::load(out.path()).unwrap();
        other.current_mut().comparison[0].answers[0].round = 5;
        assert!(open_record(&e, out.path(), Opening::Resume(other)).is_err());
    }

    #[test]
    fn a_duet_runs_each_measurements_two_variants_at_once_and_a_failure_fails_both() {
        let e = two_measurements("repeats: 2\ndesign: duet");
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&e, out.path());
        let stop = Stop::new();
        let calls = RefCell::new(Vec::new());
        run_rounds(
            &e,
            &mut record,
            out.path(),
            &stop,
            &mut |steps, _| {
                let n = {
                    let mut c = calls.borrow_mut();
                    c.push(
                        steps
                            .iter()
                            .map(|s| (s.variant, s.cell as *const Cell))
                            .collect::<Vec<_>>(),
                    );
                    c.len()
                };
                if n == 2 {
                    bail!("node1 did not start");
                }
                steps.iter().map(|_| outcome(RunStatus::Completed, None)).collect()
            },
            &mut |_| Vec::new(),
        )
        .unwrap();
        // Two rounds of two measurements: four calls, each both variants of one measurement.
        let calls = calls.into_inner();
        assert_eq!(calls.len(), 4, "{calls:?}");
        for c in &calls {
            // Which side goes first is drawn per pair (`plan::round_steps`).
            let mut v: Vec<usize> = c.iter().map(|(v, _)| *v).collect();
            v.sort();
            assert_eq!(v, [0, 1], "{calls:?}");
        }
        let status: Vec<(String, Option<RunStatus>)> = record
            .steps
            .iter()
            .map(|s| {
                (
                    format!("r{} {} {}", s.at.repeat, s.measurement_name, s.variant_name),
                    s.status,
                )
            })
            .collect();
        let failed: Vec<&String> = status
            .iter()
            .filter(|(_, s)| *s == Some(RunStatus::Failed))
            .map(|(n, _)| n)
            .collect();
        assert_eq!(failed.len(), 2, "{status:?}");
        let mut sides: Vec<String> = failed.iter().map(|n| n.replace(" a", " b")).collect();
        sides.dedup();
        assert_eq!(sides.len(), 1, "both sides of one pair: {status:?}");
        assert!(record.steps.iter().all(|s| s.elapsed_s.is_some()));
        for s in record.steps.iter().filter(|s| s.status == Some(RunStatus::Failed)) {
            assert!(
                s.error.as_deref().unwrap_or("").contains("node1 did not start"),
                "{s:?}"
            );
        }
        // Resumable: the plan's order is the duet's.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Opening::Resume(saved)).is_ok());
    }

    #[test]
    fn a_window_still_warming_is_run_again_with_a_longer_warm_up_and_level_shifts_are_kept() {
        let e = exp_with("2");
        let out = tempfile::tempdir().unwrap();
        let mut record = new(&e, out.path());
        let stop = Stop::new();
        let plans = RefCell::new(Vec::new());
        // Variant a's warm-up never settles: one replacement (half of 2 repeats) per cell, then
        // compared as it is. Step 3 settled but its window shifted level: kept, not replaced.
        let ran = RefCell::new(0);
        run_rounds(
            &e,
            &mut record,
            out.path(),
            &stop,
            &mut |_, how| {
                plans.borrow_mut().push(how);
                *ran.borrow_mut() += 1;
                let n = *ran.borrow();
                if [1, 2].contains(&n) {
                    Ok(vec![outcome(RunStatus::Completed, Some(false))?])
                } else {
                    let mut verdict = crate::steady::judge(&[], crate::steady::Load::FlatOut);
                    verdict.steady = n != 3;
                    Ok(vec![StepOutcome {
                        steady: Some(verdict),
                        ..outcome(RunStatus::Completed, Some(true))?
                    }])
                }
            },
            &mut |_| Vec::new(),
        )
        .unwrap();
        let dirs: Vec<&str> = record.steps.iter().map(|s| s.dir.as_str()).collect();
        assert_eq!(
            dirs,
            [
                "steps/001-a-r1-insert",
                "steps/005-a-r1b-insert",
                "steps/002-b-r1-insert",
                "steps/003-b-r2-insert",
                "steps/004-a-r2-insert"
            ]
        );
        let longer: Vec<bool> = plans.borrow().iter().map(|p| p.longer_warmup).collect();
        assert_eq!(longer, [false, true, false, false, false]);
        assert_eq!(record.replacements_of(record.steps[0].at), 1);
        assert!(record.steps[1].replacement);
        assert_eq!(
            record.steps[2].steady,
            Some(false),
            "a level shift stays in, unreplaced"
        );
        // Resumable: replacements are not part of the order checked.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Opening::Resume(saved)).is_ok());
    }
}
