//! The analysis of an experiment, from its record alone: each measurement's steps made into
//! units (per sitting, round and variant, the last completed step: a replacement stands for the
//! step it replaced) and compared, for the sitting running (its own answers, looked at after
//! every round) or across every sitting (answers pooled). The steps' files, when they are at
//! hand, only add what the record does not keep: per-second series and merged histograms.

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::compare::{Answer, Ask, Comparison, Excluded, Observation, Question, SittingId, Unit, compare};
use super::record::{ExperimentRecord, ExperimentStep, Sitting};
use super::spec::Experiment;
use crate::measure::RunStatus;
use crate::stats::machines::TauPrior;
use crate::stats::ratio::Prior;
use crate::stats::sequential::Design;

/// The chance of any wrong decision over every primary question and look of an experiment.
pub const ALPHA: f64 = 0.05;

/// The design every primary question of `exp` shares: the error split over them, looked at
/// from the least to the most rounds.
pub fn design(exp: &Experiment) -> Design {
    let others = exp.cells.len().saturating_sub(1);
    let questions: usize = (0..exp.file.measure.len()).map(|m| exp.primary(m).len() * others).sum();
    let r = exp.file.repeats;
    Design::new(ALPHA, questions, r.min() as usize, r.max() as usize)
}

/// Where the steps' directories are: the record's own directory, or (records pooled by
/// `caplab compare`) each step's directory as recorded, made absolute.
pub fn step_dir(out: &Path, s: &ExperimentStep) -> PathBuf {
    out.join(&s.dir)
}

/// The units of measurement `m`, per variant, of the sittings `which` (their indices become
/// 0, 1, … in that order); completed steps without values are named in `unreadable`.
fn units(
    exp: &Experiment,
    record: &ExperimentRecord,
    out: &Path,
    m: usize,
    which: &[usize],
    unreadable: &mut Vec<Excluded>,
) -> Vec<(String, Vec<Unit>)> {
    // The last completed step of each (sitting, round, variant): a replacement comes after the
    // step it replaces.
    let mut last: BTreeMap<(usize, u32, usize), &ExperimentStep> = BTreeMap::new();
    for s in record.steps.iter().filter(|s| s.at.measurement == m) {
        let Some(sitting) = record
            .sitting_index(&s.sitting)
            .and_then(|i| which.iter().position(|w| *w == i))
        else {
            continue;
        };
        if s.status == Some(RunStatus::Completed) {
            last.insert((sitting, s.at.repeat, s.at.variant), s);
        }
    }
    let mut variants: Vec<(String, Vec<Unit>)> =
        exp.file.variants.iter().map(|v| (v.name.clone(), Vec::new())).collect();
    for ((sitting, round, variant), s) in last {
        let dir = step_dir(out, s);
        // The files add series and histograms; a step of several windows is its node mean.
        let read = (s.windows <= 1).then(|| Observation::load(&dir)).transpose();
        let unit = match read {
            Ok(Some(o)) => {
                let mut u = Unit::from_observation(&o, sitting, Some(round));
                if !s.values.is_empty() {
                    u.values = s.values.clone();
                }
                u
            }
            _ if !s.values.is_empty() => Unit {
                sitting,
                round: Some(round),
                dir: s.dir.clone(),
                values: s.values.clone(),
                steady: s.steady,
                why: s.steady_class.map(|c| c.name().to_string()).unwrap_or_default(),
                detail: None,
            },
            other => {
                unreadable.push(Excluded {
                    variant: s.variant_name.clone(),
                    dir: s.dir.clone(),
                    why: match other {
                        Err(e) => format!("{e:#}"),
                        _ => "its record holds no values".into(),
                    },
                    unreadable: true,
                });
                continue;
            }
        };
        variants[variant].1.push(Unit {
            dir: s.dir.clone(),
            ..unit
        });
    }
    variants
}

/// Each primary metric of measurement `m` with its effect.
fn primary(exp: &Experiment, m: usize) -> Vec<(String, f64)> {
    exp.primary(m)
        .into_iter()
        .map(|k| {
            let e = exp.effect(&k);
            (k, e)
        })
        .collect()
}

/// A sitting as pooling sees it: its name and machine, the boot it ran on (its host name where
/// an older record has no boot id).
pub fn sitting_id(s: &Sitting) -> SittingId {
    SittingId {
        name: s.name.clone(),
        machine: if s.host.boot_id.is_empty() {
            s.host.hostname.clone()
        } else {
            s.host.boot_id.clone()
        },
    }
}

/// A sitting's own answers to measurement `measurement`'s questions (its last look).
fn answers_of(sitting: &Sitting, measurement: &str) -> Vec<Answer> {
    sitting
        .comparison
        .iter()
        .find(|c| c.measurement == measurement)
        .map(|c| c.answers.clone())
        .unwrap_or_default()
}

/// What the file asks of a comparison, with `question` and the answers it goes on from.
fn ask<'a>(
    exp: &'a Experiment,
    question: Question<'a>,
    earlier: &'a [Answer],
    sittings: &'a [SittingId],
    own: &'a [Vec<Answer>],
) -> Ask<'a> {
    Ask {
        baseline: exp.baseline,
        floor: exp.file.floor,
        tested: exp.file.metrics.as_deref(),
        steady_only: exp.file.steady_only,
        question: Some(question),
        earlier,
        sittings,
        own,
    }
}

/// The current sitting's comparison of each measurement, with its answers at the sitting's
/// round (those decided earlier carried over), borrowing `priors` where given.
pub fn sitting_comparisons(
    exp: &Experiment,
    record: &ExperimentRecord,
    out: &Path,
    priors: &[Lent],
) -> Vec<Comparison> {
    let current = record.sittings.len() - 1;
    let name = [sitting_id(record.current())];
    (0..exp.file.measure.len())
        .map(|m| {
            let mut unreadable = Vec::new();
            let variants = units(exp, record, out, m, &[current], &mut unreadable);
            let primary = primary(exp, m);
            let measurement = &exp.file.measure[m].name;
            let lent: Vec<(String, Prior)> = priors
                .iter()
                .filter(|p| &p.0 == measurement)
                .map(|p| (p.1.clone(), p.2.clone()))
                .collect();
            let earlier = answers_of(record.current(), measurement);
            let question = Question {
                primary: &primary,
                design: design(exp),
                round: record.rounds() as usize,
                complete: record.round_complete(),
                priors: &lent,
                tau_priors: &[],
            };
            let ask = ask(exp, question, &earlier, &name, &[]);
            let mut cmp = compare(measurement, &variants, ask);
            cmp.excluded.extend(unreadable);
            cmp
        })
        .collect()
}

/// Each measurement's comparison across every sitting of the record: with one sitting, its own;
/// with several, the answers pooled across them by machine, with `tau`'s priors on the spread
/// between machines (each sitting's own shown beside).
pub fn comparisons(
    exp: &Experiment,
    record: &ExperimentRecord,
    out: &Path,
    priors: &[Lent],
    tau: &[(String, TauPrior)],
) -> Vec<Comparison> {
    let completed = |i: usize| {
        let name = &record.sittings[i].name;
        record
            .steps
            .iter()
            .any(|s| &s.sitting == name && s.status == Some(RunStatus::Completed))
    };
    let which: Vec<usize> = (0..record.sittings.len()).filter(|&i| completed(i)).collect();
    if which.len() <= 1 {
        return sitting_comparisons(exp, record, out, priors);
    }
    let names: Vec<SittingId> = which.iter().map(|&i| sitting_id(&record.sittings[i])).collect();
    (0..exp.file.measure.len())
        .map(|m| {
            let mut unreadable = Vec::new();
            let variants = units(exp, record, out, m, &which, &mut unreadable);
            let primary = primary(exp, m);
            let measurement = &exp.file.measure[m].name;
            let own: Vec<Vec<Answer>> = which
                .iter()
                .map(|&i| answers_of(&record.sittings[i], measurement))
                .collect();
            let question = Question {
                primary: &primary,
                design: design(exp),
                round: which.len(),
                complete: true,
                priors: &[],
                tau_priors: tau,
            };
            let ask = ask(exp, question, &[], &names, &own);
            let mut cmp = compare(measurement, &variants, ask);
            cmp.excluded.extend(unreadable);
            cmp
        })
        .collect()
}

/// A variance lent by a calibration: the measurement and metric it is for.
pub type Lent = (String, String, Prior);

/// The variances the file's calibration lends (none without one).
pub fn priors(exp: &Experiment) -> Result<Vec<Lent>> {
    match &exp.file.calibration {
        Some(dir) => super::calibrate::priors(Path::new(dir), exp),
        None => Ok(Vec::new()),
    }
}
