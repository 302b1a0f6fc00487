//! The rounds of an experiment. Each round runs every (variant, measurement) once, in an order
//! that favours no variant (`order`), leaving out the measurements whose primary questions were
//! all decided in an earlier round (decisions are final, so their steps would change nothing and
//! the open questions get the time); a step whose window was not steady is run again right
//! after it, as a replacement (at most `replacements()` per cell); the record is saved after
//! every step. After every round the comparisons are made from disk and the primary questions
//! looked at: with auto repeats, rounds go on until every one is decided, the most repeats have
//! run, or another round would overrun the budget. A step whose nodes are refused for a reason
//! every step would share (a port another process holds) ends the experiment at once.

use anyhow::{Result, bail};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::compare::Comparison;
use super::order::{self, StepAt};
use super::record::{self, ExperimentRecord, ExperimentStep};
use super::spec::{Cell, Experiment};
use super::step::StepOutcome;
use crate::cluster::local::Refused;
use crate::console::say;
use crate::engine::Stop;
use crate::measure::RunStatus;

/// Runs one step: a cell into its directory.
pub type RunOne<'a> = dyn FnMut(&Cell, &Path) -> Result<StepOutcome> + 'a;
/// The comparisons of what the record's completed steps left on disk.
pub type Evaluate<'a> = dyn FnMut(&ExperimentRecord) -> Vec<Comparison> + 'a;

/// Replacements per (variant, measurement): half the most repeats, at least one.
pub fn replacements(exp: &Experiment) -> usize {
    (exp.file.repeats.max() as usize / 2).max(1)
}

/// The record to run: the interrupted one given (which must hold `exp`'s rounds in order), or a
/// new one with the first rounds' steps (every step of a fixed number of repeats), none run.
pub fn open_record(exp: &Experiment, out: &Path, resume: Option<ExperimentRecord>) -> Result<ExperimentRecord> {
    let record = match resume {
        Some(mut r) => {
            r.status = RunStatus::Running;
            r.interrupted_by = None;
            r.stopped = None;
            r
        }
        None => {
            let mut r = ExperimentRecord {
                format: record::FORMAT,
                caplab_version: env!("CARGO_PKG_VERSION").into(),
                name: exp.name(),
                origin: exp.origin.clone(),
                text: exp.text.clone(),
                status: RunStatus::Running,
                interrupted_by: None,
                command: crate::measure::out::command_line(),
                started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                elapsed_s: 0.0,
                steps: Vec::new(),
                comparison: Vec::new(),
                profile_diffs: Vec::new(),
                stopped: None,
            };
            for round in 1..=exp.file.repeats.min() {
                push_round(exp, &mut r, round);
            }
            r
        }
    };
    let rounds = record.rounds();
    let planned: Vec<StepAt> = record.steps.iter().filter(|s| !s.replacement).map(|s| s.at).collect();
    let expected: Vec<StepAt> = order_of(exp, rounds)
        .into_iter()
        .filter(|at| !decided_before(exp, &record, at.measurement, at.repeat))
        .collect();
    if rounds > exp.file.repeats.max() || planned != expected {
        bail!(
            "{} does not match its experiment file's steps: it cannot be resumed",
            out.display()
        );
    }
    Ok(record)
}

/// Every step of the first `rounds` rounds, in order.
fn order_of(exp: &Experiment, rounds: u32) -> Vec<StepAt> {
    order::steps(exp.cells.len(), exp.file.measure.len(), rounds, exp.file.order)
}

/// Whether every primary question of measurement `m` was decided before round `round` (the
/// record's comparisons keep the round each answer was decided at). A measurement without
/// answers (none looked at yet, or none it can give) is never decided.
pub fn decided_before(exp: &Experiment, record: &ExperimentRecord, m: usize, round: u32) -> bool {
    let name = &exp.file.measure[m].name;
    record
        .comparison
        .iter()
        .find(|c| &c.measurement == name)
        .is_some_and(|c| {
            !c.answers.is_empty()
                && c.answers
                    .iter()
                    .all(|a| a.decision.decided() && (a.round as u32) < round)
        })
}

/// Per measurement, whether round `round` runs it: a question of it is still open.
fn open_in(exp: &Experiment, record: &ExperimentRecord, round: u32) -> Vec<bool> {
    (0..exp.file.measure.len())
        .map(|m| !decided_before(exp, record, m, round))
        .collect()
}

/// Appends round `round`'s steps: those of the measurements with a question still open.
fn push_round(exp: &Experiment, record: &mut ExperimentRecord, round: u32) {
    let open = open_in(exp, record, round);
    for at in order_of(exp, round)
        .into_iter()
        .filter(|at| at.repeat == round && open[at.measurement])
    {
        let index = record.steps.len() + 1;
        let step = new_step(exp, index, at, false);
        record.steps.push(step);
    }
}

fn new_step(exp: &Experiment, index: usize, at: StepAt, replacement: bool) -> ExperimentStep {
    let variant = exp.file.variants[at.variant].name.clone();
    let measurement = exp.file.measure[at.measurement].name.clone();
    ExperimentStep {
        index,
        at,
        dir: format!(
            "steps/{index:03}-{variant}-r{}{}-{measurement}",
            at.repeat,
            if replacement { "b" } else { "" }
        ),
        variant_name: variant,
        measurement_name: measurement,
        status: None,
        elapsed_s: None,
        error: None,
        steady_class: None,
        steady: None,
        replacement,
    }
}

/// Inserts, after step `i`, a replacement for it: the same cell and round, run next.
fn push_replacement(exp: &Experiment, record: &mut ExperimentRecord, i: usize) {
    let at = record.steps[i].at;
    // Indexes name directories: a replacement takes the next free one, at the end of the list
    // of names, though it runs next.
    let index = record.steps.iter().map(|s| s.index).max().unwrap_or(0) + 1;
    record.steps.insert(i + 1, new_step(exp, index, at, true));
}

/// Runs the record's steps not completed yet and, with auto repeats, further rounds until the
/// question is answered; `step` runs one step, `evaluate` makes the comparisons after a round.
pub fn run_rounds(
    exp: &Experiment,
    record: &mut ExperimentRecord,
    out: &Path,
    stop: &Arc<Stop>,
    step: &mut RunOne,
    evaluate: &mut Evaluate,
) -> Result<()> {
    let already = record
        .steps
        .iter()
        .filter(|s| s.status == Some(RunStatus::Completed))
        .count();
    say(&format!(
        "Experiment {}: {}{}; results in {}",
        record.name,
        exp.shape(),
        if already > 0 {
            format!(", {already} steps done before")
        } else {
            String::new()
        },
        out.display()
    ));
    let (began, prior_elapsed) = (Instant::now(), record.elapsed_s);
    // Steps completed before a resume time the rounds still to come, as much as new ones.
    let mut timed: Vec<f64> = record
        .steps
        .iter()
        .filter(|s| s.status == Some(RunStatus::Completed))
        .filter_map(|s| s.elapsed_s)
        .collect();
    loop {
        run_pending(exp, record, out, stop, step, &mut timed, (began, prior_elapsed))?;
        if stop.is_requested() || record.stopped.is_some() {
            break;
        }
        let rounds = record.rounds();
        record.comparison = evaluate(record);
        for c in &record.comparison {
            for a in &c.answers {
                say(&format!("  after round {rounds}, {}: {}", c.measurement, a.line()));
            }
        }
        record.stopped = next_round(exp, record, &timed, prior_elapsed + began.elapsed().as_secs_f64());
        record.save(out)?;
        if record.stopped.is_some() {
            break;
        }
        let before = record.steps.len();
        push_round(exp, record, rounds + 1);
        let decided: Vec<&str> = open_in(exp, record, rounds + 1)
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
    if let Some(why) = &record.stopped {
        say(&format!("Experiment ends: {why}"));
    }
    Ok(())
}

/// None to run another round; otherwise why not.
fn next_round(exp: &Experiment, record: &ExperimentRecord, timed: &[f64], elapsed_s: f64) -> Option<String> {
    let repeats = exp.file.repeats;
    let rounds = record.rounds();
    let answers: Vec<_> = record.comparison.iter().flat_map(|c| &c.answers).collect();
    if !repeats.is_auto() {
        return Some(format!("{rounds} repeats, as the file asks"));
    }
    if answers.iter().all(|a| a.decision.decided()) {
        return Some(if answers.is_empty() {
            format!("{rounds} rounds: no primary question could be looked at")
        } else {
            format!("every primary question decided after {rounds} rounds")
        });
    }
    if rounds >= repeats.max() {
        return Some(format!(
            "{rounds} rounds, the most the file allows; some questions are open"
        ));
    }
    if let Some(budget) = exp.file.budget {
        let per_step = mean_step(timed).unwrap_or(0.0);
        let open = open_in(exp, record, rounds + 1).iter().filter(|&&o| o).count();
        let round_s = per_step * (exp.cells.len() * open) as f64;
        if elapsed_s + round_s > budget.as_secs_f64() {
            return Some(format!(
                "another round (about {}) would end after the budget of {}; some questions are open",
                humantime::format_duration(Duration::from_secs(round_s as u64)),
                humantime::format_duration(budget)
            ));
        }
    }
    None
}

/// Runs the steps not completed yet, in order, saving the record after each; a replacement is
/// queued after a step whose window was not steady, while the cell has replacements left.
fn run_pending(
    exp: &Experiment,
    record: &mut ExperimentRecord,
    out: &Path,
    stop: &Arc<Stop>,
    step: &mut RunOne,
    timed: &mut Vec<f64>,
    (began, prior_elapsed): (Instant, f64),
) -> Result<()> {
    let mut i = 0;
    while i < record.steps.len() {
        if record.steps[i].status == Some(RunStatus::Completed) {
            i += 1;
            continue;
        }
        if stop.is_requested() {
            break;
        }
        let at = record.steps[i].clone();
        // The first rounds (up to the first look) are planned together: each still starts
        // only if it can end within the budget.
        let first_of_round = i > 0 && record.steps[i - 1].at.repeat < at.at.repeat;
        if first_of_round
            && let Some(why) = round_over_budget(
                exp,
                record,
                at.at.repeat,
                timed,
                prior_elapsed + began.elapsed().as_secs_f64(),
            )
        {
            record.stopped = Some(why);
            record.save(out)?;
            break;
        }
        let left = record.steps[i..]
            .iter()
            .filter(|s| s.status != Some(RunStatus::Completed) && s.at.repeat == at.at.repeat)
            .count();
        say(&format!(
            "Step {}: variant {}, round {}{}, {}{}",
            at.index,
            at.variant_name,
            at.at.repeat,
            if at.replacement {
                " (replacing an unsteady window)"
            } else {
                ""
            },
            at.measurement_name,
            eta(timed, left)
        ));
        let begin = Instant::now();
        let outcome = step(&exp.cells[at.at.variant][at.at.measurement], &out.join(&at.dir));
        let elapsed = begin.elapsed().as_secs_f64();
        let s = &mut record.steps[i];
        s.elapsed_s = Some(elapsed);
        match outcome {
            Ok(o) => {
                s.status = Some(o.status);
                s.error = None;
                s.steady_class = o.steady.as_ref().and_then(|v| v.class);
                s.steady = o.steady.as_ref().map(|v| v.steady);
                let replace = s.steady == Some(false)
                    && !exp.file.include_unsteady
                    && o.status == RunStatus::Completed
                    && record.replacements_of(at.at) < replacements(exp);
                say(&format!(
                    "  {}{}",
                    o.line,
                    unsteady_note(record.steps[i].steady, exp.file.include_unsteady, replace)
                ));
                if o.status == RunStatus::Completed {
                    timed.push(elapsed);
                }
                if replace {
                    push_replacement(exp, record, i);
                }
            }
            Err(e) => {
                say(&format!("  step {} failed: {e:#}", at.index));
                s.status = Some(RunStatus::Failed);
                s.error = Some(format!("{e:#}"));
                if e.chain().any(|c| c.is::<Refused>()) {
                    record.stopped = Some(format!(
                        "step {} was refused before any node started, and every step would be: {e:#}",
                        at.index
                    ));
                }
            }
        }
        record.elapsed_s = prior_elapsed + began.elapsed().as_secs_f64();
        record.save(out)?;
        if record.stopped.is_some() {
            break;
        }
        i += 1;
    }
    Ok(())
}

/// Why round `round` (planned, not started) may not start: it would end after the budget, at
/// the mean time of the steps completed so far. None: it may (or nothing is timed yet).
fn round_over_budget(
    exp: &Experiment,
    record: &ExperimentRecord,
    round: u32,
    timed: &[f64],
    elapsed_s: f64,
) -> Option<String> {
    let budget = exp.file.budget?;
    let per_step = mean_step(timed)?;
    let steps = record
        .steps
        .iter()
        .filter(|s| s.at.repeat == round && s.status != Some(RunStatus::Completed))
        .count();
    let round_s = per_step * steps as f64;
    let first_look = exp.file.repeats.min();
    (elapsed_s + round_s > budget.as_secs_f64()).then(|| {
        let took = |s: f64| humantime::format_duration(Duration::from_secs(s as u64));
        let round_text = format!("round {round} (about {})", took(round_s));
        if round <= first_look {
            let all = per_step * (exp.cells.len() * exp.file.measure.len()) as f64 * f64::from(first_look);
            format!(
                "{round_text} would end after the budget of {}, before the first look at {first_look} repeats: no \
                 question was looked at; give a budget of at least {} (the first look's rounds at this pace) or fewer variants",
                took(budget.as_secs_f64()),
                took(all)
            )
        } else {
            format!("{round_text} would end after the budget of {}; some questions are open", took(budget.as_secs_f64()))
        }
    })
}

/// What becomes of a step whose window was not steady, said after its line.
fn unsteady_note(steady: Option<bool>, include_unsteady: bool, replaced: bool) -> &'static str {
    match (steady, include_unsteady, replaced) {
        (Some(false), false, true) => " (left out of comparisons; a replacement runs next)",
        (Some(false), false, false) => " (left out of comparisons)",
        (Some(false), true, _) => " (compared anyway: include_unsteady)",
        _ => "",
    }
}

/// `, about 12m left` from the completed steps' times (nothing before one has completed).
fn eta(timed: &[f64], left: usize) -> String {
    let Some(per) = mean_step(timed) else {
        return String::new();
    };
    format!(
        ", about {} left in this round",
        humantime::format_duration(Duration::from_secs((per * left as f64) as u64))
    )
}

/// The mean time of the steps completed so far (None before the first), which every estimate of
/// time to come uses.
fn mean_step(timed: &[f64]) -> Option<f64> {
    (!timed.is_empty()).then(|| timed.iter().sum::<f64>() / timed.len() as f64)
}

/// Interrupted when a stop was requested; otherwise failed when a step failed, and completed
/// when none did (an unsteady step replaced still counts as completed; planned steps the budget
/// left unrun are not failures).
pub fn final_status(record: &ExperimentRecord, stop: &Stop) -> RunStatus {
    if stop.cause().is_some() {
        RunStatus::Interrupted
    } else if record.steps.iter().any(|s| s.status == Some(RunStatus::Failed)) {
        RunStatus::Failed
    } else {
        // Steps never run (the budget ended the rounds first) are not failures.
        RunStatus::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::compare::Answer;
    use crate::stats::sequential::Decision;
    use std::cell::RefCell;

    /// Two variants, one run measurement, `repeats` as given: two steps a round, rotated.
    fn exp_with(repeats: &str) -> Experiment {
        let text = format!(
            "name: t\nrepeats: {repeats}\nnode: {{version: 5.0.9, java: 17}}\nrun: {{duration: 5s}}\n\
             variants: [{{name: a}}, {{name: b}}]\nmeasure: [{{name: insert, workload: insert}}]\n"
        );
        Experiment::parse(&text, "t.yaml").unwrap()
    }

    fn exp() -> Experiment {
        exp_with("2")
    }

    fn done(line: &str) -> Result<StepOutcome> {
        Ok(StepOutcome {
            status: RunStatus::Completed,
            line: line.into(),
            steady: None,
        })
    }

    fn unsteady() -> Result<StepOutcome> {
        let mut verdict = crate::steady::judge(&[]);
        verdict.steady = false;
        Ok(StepOutcome {
            status: RunStatus::Completed,
            line: "completed".into(),
            steady: Some(verdict),
        })
    }

    /// A comparison whose one answer is `decision`.
    fn answered(decision: Decision) -> Vec<Comparison> {
        vec![comparison("insert", decision, 3)]
    }

    /// Measurement `measurement`'s comparison, whose one answer is `decision` from round `round`.
    fn comparison(measurement: &str, decision: Decision, round: usize) -> Comparison {
        let a = Answer {
            metric: "throughput".into(),
            variant: "b".into(),
            decision,
            ratio: Some(1.0),
            ci: None,
            effect: 0.05,
            repeats: (3, 3),
            round,
            more: None,
            history: Vec::new(),
            note: None,
        };
        Comparison {
            measurement: measurement.into(),
            baseline: "a".into(),
            floor: 0.02,
            evidence: String::new(),
            repeats: vec![3, 3],
            steady_only: true,
            excluded: Vec::new(),
            rows: Vec::new(),
            answers: vec![a],
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
            &mut |_, dir| {
                seen.borrow_mut()
                    .push(dir.strip_prefix(out).unwrap().display().to_string());
                fake(seen.borrow().len())
            },
            &mut evaluate,
        )
        .unwrap();
        seen.into_inner()
    }

    #[test]
    fn every_step_runs_once_in_order_and_the_record_is_saved_after_each() {
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
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
        assert_eq!(record.stopped.as_deref(), Some("2 repeats, as the file asks"));
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(
            saved
                .steps
                .iter()
                .all(|s| s.status == Some(RunStatus::Completed) && s.elapsed_s.is_some())
        );
    }

    #[test]
    fn a_failed_step_is_recorded_and_the_rest_still_run() {
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
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
        let mut record = open_record(&exp(), out.path(), None).unwrap();
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
        let why = record.stopped.clone().unwrap();
        assert!(why.contains("every step would be") && why.contains("in use"), "{why}");
        assert_eq!(final_status(&record, &stop), RunStatus::Failed);
    }

    #[test]
    fn an_interrupted_experiment_resumes_where_it_stopped() {
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
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
                    Ok(StepOutcome {
                        status: RunStatus::Interrupted,
                        line: "interrupted".into(),
                        steady: None,
                    })
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
        let mut resumed = open_record(&exp(), out.path(), Some(saved)).unwrap();
        assert_eq!(resumed.status, RunStatus::Running);
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
        let mut other = open_record(&exp(), out.path(), None).unwrap();
        other.steps.pop();
        let err = open_record(&exp(), out.path(), Some(other)).unwrap_err();
        assert!(format!("{err}").contains("cannot be resumed"), "{err}");
    }

    #[test]
    fn auto_repeats_run_rounds_until_every_question_is_decided() {
        let e = exp_with("auto");
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&e, out.path(), None).unwrap();
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
            record.stopped.as_deref(),
            Some("every primary question decided after 5 rounds")
        );
        // Never decided: the most rounds.
        let out = tempfile::tempdir().unwrap();
        let e = exp_with("{min: 3, max: 4}");
        let mut record = open_record(&e, out.path(), None).unwrap();
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
            record.stopped.as_deref().unwrap().starts_with("4 rounds, the most"),
            "{:?}",
            record.stopped
        );
        // A budget a round would overrun stops it, the first rounds too: here after round 1,
        // before the first look (3 repeats).
        let out = tempfile::tempdir().unwrap();
        let text = e.text.replace("repeats: {min: 3, max: 4}", "repeats: auto\nbudget: 0s");
        let e = Experiment::parse(&text, "t.yaml").unwrap();
        let mut record = open_record(&e, out.path(), None).unwrap();
        let ran = rounds_run(
            &e,
            &mut record,
            out.path(),
            &stop,
            |_| done("ok"),
            |_| answered(Decision::Open),
        );
        assert_eq!(ran.len(), 2);
        let why = record.stopped.clone().unwrap();
        assert!(
            why.contains("budget of 0s, before the first look at 3 repeats: no question was looked at"),
            "{why}"
        );
        // The record of an auto experiment resumes with its rounds.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Some(saved)).is_ok());
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
        let record = open_record(&e, out.path(), None).unwrap();
        let step = [1200.0];
        // After round 1 (40 min): round 2 would end at 80 min.
        let why = round_over_budget(&e, &record, 2, &step, 2400.0).unwrap();
        assert!(
            why.starts_with("round 2 (about 40m) would end after the budget of 1h, before the first look"),
            "{why}"
        );
        assert!(why.contains("a budget of at least 2h"), "{why}");
        // With 10-minute steps it fits; nothing timed yet: no estimate, no stop.
        assert_eq!(round_over_budget(&e, &record, 2, &[600.0], 1200.0), None);
        assert_eq!(round_over_budget(&e, &record, 2, &[], 3500.0), None);
        // After the first look, later rounds say the questions are open.
        let why = round_over_budget(&e, &record, 4, &step, 2400.0);
        assert_eq!(why, None, "round 4 has no planned steps yet: an empty round fits");
    }

    #[test]
    fn a_measurement_whose_questions_are_decided_is_not_run_in_later_rounds() {
        let text = "name: t\nrepeats: auto\nnode: {version: 5.0.9, java: 17}\nrun: {duration: 5s}\n\
                    variants: [{name: a}, {name: b}]\n\
                    measure: [{name: insert, workload: insert}, {name: batch, workload: batch}]\n";
        let e = Experiment::parse(text, "t.yaml").unwrap();
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&e, out.path(), None).unwrap();
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
            record.stopped.as_deref(),
            Some("every primary question decided after 5 rounds")
        );
        // The record resumes: its rounds without insert are what the file and the answers ask.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Some(saved)).is_ok());
        // A record whose later rounds ran insert though it was decided is not this experiment's.
        let mut other = ExperimentRecord::load(out.path()).unwrap();
        other.comparison[0].answers[0].round = 5;
        assert!(open_record(&e, out.path(), Some(other)).is_err());
    }

    #[test]
    fn an_unsteady_window_is_run_again_a_bounded_number_of_times() {
        let e = exp_with("2");
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&e, out.path(), None).unwrap();
        let stop = Stop::new();
        // Variant a is never steady: one replacement (half of 2 repeats) per cell, then left.
        let ran = rounds_run(
            &e,
            &mut record,
            out.path(),
            &stop,
            |n| if [1, 2].contains(&n) { unsteady() } else { done("ok") },
            |_| Vec::new(),
        );
        assert_eq!(
            ran,
            [
                "steps/001-a-r1-insert",
                "steps/005-a-r1b-insert",
                "steps/002-b-r1-insert",
                "steps/003-b-r2-insert",
                "steps/004-a-r2-insert"
            ]
        );
        assert_eq!(record.replacements_of(record.steps[0].at), 1);
        assert!(record.steps[1].replacement);
        // Resumable: replacements are not part of the order checked.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(open_record(&e, out.path(), Some(saved)).is_ok());
    }

    #[test]
    fn the_time_left_is_the_mean_step_times_the_steps_left() {
        assert_eq!(eta(&[], 3), "");
        assert_eq!(eta(&[60.0, 120.0], 4), ", about 6m left in this round");
    }

    #[test]
    fn an_unsteady_step_says_whether_it_is_compared_or_replaced() {
        assert_eq!(
            unsteady_note(Some(false), false, true),
            " (left out of comparisons; a replacement runs next)"
        );
        assert_eq!(unsteady_note(Some(false), false, false), " (left out of comparisons)");
        assert_eq!(
            unsteady_note(Some(false), true, false),
            " (compared anyway: include_unsteady)"
        );
        assert_eq!(unsteady_note(Some(true), false, false), "");
        assert_eq!(
            unsteady_note(None, false, false),
            "",
            "capacity steps have no window verdict"
        );
    }
}
