//! Experiments: configurations compared side by side, on fresh nodes, with honest statistics.
//! An experiment file (`spec`) names variants and measurements; the steps run in an order
//! that favours no variant (`order`), each on the variant's own freshly started nodes and with
//! the same code as `caplab run` / `capacity`; experiment.json (`record`) is rewritten after
//! every step so an interrupted experiment keeps what it did and resumes where it stopped; and
//! each measurement's variants are compared metric by metric (`compare`), and their server
//! profiles frame by frame (`profile_diff`). `check` prints the steps of a file without running them.

pub mod check;
pub mod compare;
pub mod order;
pub mod profile_diff;
pub mod record;
pub mod spec;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::Liveness;
use crate::console::say;
use crate::engine::Stop;
use crate::measure::{RunStatus, commands};
use compare::{Ask, Comparison, Excluded, Observation, compare};
use record::{ExperimentRecord, ExperimentStep};
use spec::{Experiment, What};

/// Runs (or, given the record of an interrupted run, resumes) `exp` into `out`. Nodes live
/// under `out/home` (jars come from `cache`), apart from any the user runs.
pub fn run(
    exp: &Experiment,
    out: &Path,
    cache: &Path,
    resume: Option<ExperimentRecord>,
    stop: &Arc<Stop>,
) -> Result<ExperimentRecord> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let home = Home {
        data: out.join("home"),
        cache: cache.to_path_buf(),
    };
    let began = Instant::now();
    let mut record = open_record(exp, out, resume)?;
    let prior_elapsed = record.elapsed_s;
    let fresh = exp.file.fresh;
    run_steps(exp, &mut record, out, stop, &mut |cell, dir| {
        run_step(&home, fresh, cell, dir, stop)
    })?;
    stop_nodes(&home);
    record.status = final_status(&record, stop);
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

/// The record to run: the interrupted one given (which must have `exp`'s steps, in order), or a new
/// one with every step of the order, none run.
fn open_record(exp: &Experiment, out: &Path, resume: Option<ExperimentRecord>) -> Result<ExperimentRecord> {
    let steps = order::steps(
        exp.cells.len(),
        exp.file.measure.len(),
        exp.file.repeats,
        exp.file.order,
    );
    let record = match resume {
        Some(mut r) => {
            r.status = RunStatus::Running;
            r.interrupted_by = None;
            r
        }
        None => ExperimentRecord {
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
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, at)| {
                    let variant = exp.file.variants[at.variant].name.clone();
                    let measurement = exp.file.measure[at.measurement].name.clone();
                    ExperimentStep {
                        index: i + 1,
                        at: *at,
                        dir: format!("steps/{:03}-{variant}-r{}-{measurement}", i + 1, at.repeat),
                        variant_name: variant,
                        measurement_name: measurement,
                        status: None,
                        elapsed_s: None,
                        error: None,
                        steady_class: None,
                        steady: None,
                    }
                })
                .collect(),
            comparison: Vec::new(),
            profile_diffs: Vec::new(),
        },
    };
    if record.steps.len() != steps.len() || record.steps.iter().zip(&steps).any(|(s, at)| s.at != *at) {
        bail!(
            "{} does not match its experiment file's steps: it cannot be resumed",
            out.display()
        );
    }
    Ok(record)
}

/// What one step left: its status, a line saying what it measured, and (a run's) steady-state
/// verdict.
pub struct StepOutcome {
    pub status: RunStatus,
    pub line: String,
    pub steady: Option<crate::steady::SteadyState>,
}

/// Runs the steps of `record` not completed yet, in order, with `step` (a cell into its
/// directory), until they are done or `stop` is requested; says each one's progress with an
/// estimate of the time left, and rewrites experiment.json after each.
fn run_steps(
    exp: &Experiment,
    record: &mut ExperimentRecord,
    out: &Path,
    stop: &Arc<Stop>,
    step: &mut dyn FnMut(&spec::Cell, &Path) -> Result<StepOutcome>,
) -> Result<()> {
    let total = record.steps.len();
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
            format!(", {already} done before")
        } else {
            String::new()
        },
        out.display()
    ));
    let (began, prior_elapsed) = (Instant::now(), record.elapsed_s);
    let mut timed: Vec<f64> = Vec::new();
    for i in 0..total {
        if record.steps[i].status == Some(RunStatus::Completed) {
            continue;
        }
        if stop.is_requested() {
            break;
        }
        let at = record.steps[i].clone();
        let left = record.steps[i..]
            .iter()
            .filter(|s| s.status != Some(RunStatus::Completed))
            .count();
        say(&format!(
            "Step {} of {total}: variant {}, repeat {}/{}, {}{}",
            at.index,
            at.variant_name,
            at.at.repeat,
            exp.file.repeats,
            at.measurement_name,
            eta(&timed, left)
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
                say(&format!(
                    "  {}{}",
                    o.line,
                    unsteady_note(s.steady, exp.file.include_unsteady)
                ));
                if o.status == RunStatus::Completed {
                    timed.push(elapsed);
                }
            }
            Err(e) => {
                say(&format!("  step {} failed: {e:#}", at.index));
                s.status = Some(RunStatus::Failed);
                s.error = Some(format!("{e:#}"));
            }
        }
        record.elapsed_s = prior_elapsed + began.elapsed().as_secs_f64();
        record.save(out)?;
    }
    Ok(())
}

/// What becomes of a step whose window was not steady, said after its line.
fn unsteady_note(steady: Option<bool>, include_unsteady: bool) -> &'static str {
    match (steady, include_unsteady) {
        (Some(false), false) => " (left out of comparisons)",
        (Some(false), true) => " (compared anyway: include_unsteady)",
        _ => "",
    }
}

/// `, about 12m left` from the completed steps' times (nothing before one has completed).
fn eta(timed: &[f64], left: usize) -> String {
    if timed.is_empty() {
        return String::new();
    }
    let per = timed.iter().sum::<f64>() / timed.len() as f64;
    format!(
        ", about {} left",
        humantime::format_duration(Duration::from_secs((per * left as f64) as u64))
    )
}

/// Interrupted when a stop was requested; otherwise completed when every step completed, and
/// failed when any did not.
fn final_status(record: &ExperimentRecord, stop: &Stop) -> RunStatus {
    if stop.cause().is_some() {
        RunStatus::Interrupted
    } else if record.steps.iter().all(|s| s.status == Some(RunStatus::Completed)) {
        RunStatus::Completed
    } else {
        RunStatus::Failed
    }
}

/// Starts the variant's nodes (fresh: wiped first), runs the measurement into `dir`; returns
/// its status, a line saying what it measured, and (a run's) steady-state verdict.
fn run_step(home: &Home, fresh: bool, cell: &spec::Cell, dir: &Path, stop: &Arc<Stop>) -> Result<StepOutcome> {
    let spec = cell.node.spec()?;
    let mut tell = |m: &str| say(&format!("  {m}"));
    if fresh {
        let nodes = local::nodes(home)?;
        local::wipe(&nodes, true, &mut tell)?;
    }
    local::start(
        home,
        &spec,
        StartOptions {
            restart: true,
            timeout: None,
        },
        &mut tell,
    )?;
    match &cell.what {
        What::Run(o) => {
            let mut o = (**o).clone();
            o.common.out = Some(dir.to_path_buf());
            o.common.force = true;
            o.common.quiet = true;
            let (r, _) = commands::run(home, &o, stop)?;
            let t = r.summary.as_ref().map(|s| s.total.clone());
            let window = match (&r.warmup, &r.steady_state) {
                (Some(w), Some(v)) => format!(
                    "; warm-up {}{}; window {}{}",
                    w.length_s.map_or("-".into(), |s| format!("{s:.0} s")),
                    if w.settled == Some(false) { " (NOT settled)" } else { "" },
                    v.class.map_or("not judged", |c| c.name()),
                    if v.steady { "" } else { ", NOT STEADY" }
                ),
                _ => String::new(),
            };
            Ok(StepOutcome {
                status: r.status,
                line: match t {
                    Some(t) => format!(
                        "{}: {} op/s, p99 {:.2} ms, p99.9 {:.2} ms, {} errors{window}",
                        r.status.name(),
                        crate::console::group(t.op_rate),
                        t.response.p99_ms,
                        t.response.p999_ms,
                        t.error_total
                    ),
                    None => r.status.name().to_string(),
                },
                steady: r.steady_state,
            })
        }
        What::Capacity(o) => {
            let mut o = (**o).clone();
            o.common.out = Some(dir.to_path_buf());
            o.common.force = true;
            o.common.quiet = true;
            let (r, _, _) = commands::capacity(home, &o, stop)?;
            let unsteady = r.steps.iter().filter(|s| s.steady == Some(false)).count();
            Ok(StepOutcome {
                status: r.status,
                line: format!(
                    "{}: capacity {}{}",
                    r.status.name(),
                    r.capacity
                        .map_or("none".into(), |c| format!("{} op/s", crate::console::group(c))),
                    if unsteady > 0 {
                        format!(" ({unsteady} of {} steps not steady)", r.steps.len())
                    } else {
                        String::new()
                    }
                ),
                steady: None,
            })
        }
    }
}

fn stop_nodes(home: &Home) {
    if let Ok(nodes) = local::nodes(home) {
        let running: Vec<_> = nodes
            .into_iter()
            .filter(|n| n.liveness() == Liveness::Running)
            .collect();
        let _ = local::stop(
            &running,
            StopOptions {
                drain: false,
                timeout: Duration::from_secs(30),
            },
            &mut |m| say(&format!("  {m}")),
        );
    }
}

/// Each measurement's comparison, from the completed steps' results on disk.
pub fn comparisons(exp: &Experiment, record: &ExperimentRecord, out: &Path) -> Vec<Comparison> {
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
            let ask = Ask {
                baseline: exp.baseline,
                floor: exp.file.floor,
                tested: exp.file.metrics.as_deref(),
                steady_only: !exp.file.include_unsteady,
            };
            let mut cmp = compare(&exp.file.measure[m].name, &variants, ask);
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
    let ask = Ask {
        baseline: 0,
        floor,
        tested: None,
        steady_only: !include_unsteady,
    };
    Ok(vec![compare("compare", &variants, ask)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Two variants, two repeats, one run measurement: four steps, rotated.
    fn exp() -> Experiment {
        let text = "name: t\nrepeats: 2\nnode: {version: 5.0.9, java: 17}\nrun: {duration: 5s}\n\
                    variants: [{name: a}, {name: b}]\nmeasure: [{name: insert, workload: insert}]\n";
        Experiment::parse(text, "t.yaml").unwrap()
    }

    fn done(line: &str) -> Result<StepOutcome> {
        Ok(StepOutcome {
            status: RunStatus::Completed,
            line: line.into(),
            steady: None,
        })
    }

    /// Runs the record's remaining steps with `fake`, noting the directories it was given.
    fn steps_run(
        record: &mut ExperimentRecord,
        out: &Path,
        stop: &Arc<Stop>,
        mut fake: impl FnMut(usize) -> Result<StepOutcome>,
    ) -> Vec<String> {
        let e = exp();
        let seen = RefCell::new(Vec::new());
        run_steps(&e, record, out, stop, &mut |_, dir| {
            seen.borrow_mut()
                .push(dir.strip_prefix(out).unwrap().display().to_string());
            fake(seen.borrow().len())
        })
        .unwrap();
        seen.into_inner()
    }

    #[test]
    fn every_step_runs_once_in_order_and_the_record_is_saved_after_each() {
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
        let stop = Stop::new();
        let ran = steps_run(&mut record, out.path(), &stop, |_| done("ok"));
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
        let saved = ExperimentRecord::load(out.path()).unwrap();
        assert!(
            saved
                .steps
                .iter()
                .all(|s| s.status == Some(RunStatus::Completed) && s.elapsed_s.is_some())
        );
    }

    #[test]
    fn a_completed_step_whose_results_cannot_be_read_is_named_not_dropped() {
        // The fake steps write nothing: every completed step's directory lacks result.json.
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
        let stop = Stop::new();
        steps_run(&mut record, out.path(), &stop, |_| done("ok"));
        let cmp = &comparisons(&exp(), &record, out.path())[0];
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

    #[test]
    fn a_failed_step_is_recorded_and_the_rest_still_run() {
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
        let stop = Stop::new();
        let ran = steps_run(&mut record, out.path(), &stop, |n| {
            if n == 2 {
                Err(anyhow::anyhow!("node1 exited during startup"))
            } else {
                done("ok")
            }
        });
        assert_eq!(ran.len(), 4);
        let failed = &record.steps[1];
        assert_eq!(
            (failed.status, failed.error.as_deref()),
            (Some(RunStatus::Failed), Some("node1 exited during startup"))
        );
        assert_eq!(final_status(&record, &stop), RunStatus::Failed);
    }

    #[test]
    fn an_interrupted_experiment_resumes_where_it_stopped() {
        let out = tempfile::tempdir().unwrap();
        let mut record = open_record(&exp(), out.path(), None).unwrap();
        let stop = Stop::new();
        // Ctrl-C during the second step: it ends (interrupted, as a run does), no third starts.
        let ran = steps_run(&mut record, out.path(), &stop, |n| {
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
        });
        assert_eq!(ran.len(), 2);
        assert_eq!(final_status(&record, &stop), RunStatus::Interrupted);
        // Resumed from what was saved: the finished step is not run again, the interrupted one is.
        let saved = ExperimentRecord::load(out.path()).unwrap();
        let mut resumed = open_record(&exp(), out.path(), Some(saved)).unwrap();
        assert_eq!(resumed.status, RunStatus::Running);
        let stop = Stop::new();
        let ran = steps_run(&mut resumed, out.path(), &stop, |_| done("ok"));
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
    fn the_time_left_is_the_mean_step_times_the_steps_left() {
        assert_eq!(eta(&[], 3), "");
        assert_eq!(eta(&[60.0, 120.0], 4), ", about 6m left");
    }

    #[test]
    fn an_unsteady_step_says_whether_it_is_compared() {
        assert_eq!(unsteady_note(Some(false), false), " (left out of comparisons)");
        assert_eq!(unsteady_note(Some(false), true), " (compared anyway: include_unsteady)");
        assert_eq!(unsteady_note(Some(true), false), "");
        assert_eq!(unsteady_note(None, false), "", "capacity steps have no window verdict");
    }
}
