//! Confirmation by rerunning: a change found in a series is either still there when its
//! configuration runs again now, or it was a noisy night. Two designs:
//! - **alone**: the runs before and after the change ran the same command (the machine or the
//!   night changed, not the configuration). The last run after the change is rerun from its own
//!   result.json (`command`, with caplab's output, quietness, history and labels replaced), one
//!   at a time, until `stats::confirm`'s rule decides: confirmed (worse than the level before),
//!   not confirmed (better than the level after: back where it was) or, after the last run
//!   allowed, open. With a canary, each round reruns the canary's last command too and compares
//!   the ratios.
//! - **paired**: the runs after the change ran another command than those before (a version,
//!   a setting or a fault the job changed). Each round then runs the command before and the
//!   command after, in a random order, and the rule is applied to the rounds' log ratios: the
//!   configuration after is worse than the one before now (confirmed: the change is the
//!   configuration's), or surely less worse than the change found (not confirmed).
//!
//! Every rerun is recorded in the history with the label `confirm`, and is not a point of its
//! series.

use anyhow::{Context, Result, bail};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::detect::{Found, Points, RERUN_LABEL, gc_reaches, higher_is_better, is_zero, series_changes};
use super::record::{FIGURES, Record, sitting_of};
use super::rerun::{Rerunner, command_of, differs, log_of, rerun_args};
use super::store::Stored;
use crate::stats::changes::Settings;
use crate::stats::confirm::{Finding, Levels, Look, Spread, look};
use crate::stats::robust::set_aside;

/// What a confirmation asks: changes of one series (those that rerun the same commands share
/// their runs, every figure read from each).
pub struct Request<'a> {
    pub series: &'a [&'a Stored],
    pub changes: &'a [&'a Found],
    pub points: Points<'a>,
    /// The most fresh runs (rounds, with a canary).
    pub runs: usize,
    /// The chance of each wrong verdict (confirming noise; clearing a real change).
    pub alpha: f64,
    /// Where the reruns go (one directory each).
    pub out: PathBuf,
    /// The history they are recorded in, as `--history` takes it.
    pub history: String,
    /// Caplab's home (`--home`) the reruns use.
    pub home: PathBuf,
    /// The thresholds the change was found at (the spread is read back to the change before it).
    pub settings: Settings,
}

/// How the fresh runs are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// The configuration after the change, alone, against the levels the history holds.
    Alone,
    /// The configurations before and after the change, both in every round, in random order.
    Paired,
}

/// What a confirmation found.
#[derive(Debug, Clone, Serialize)]
pub struct Confirmation {
    pub series: String,
    pub figure: String,
    /// The change confirmed: its kind, ratio and first run.
    pub change: Found,
    pub verdict: Finding,
    pub design: Design,
    /// The arguments rerun (caplab's own output, history and labels left out): the
    /// configuration after the change.
    pub command: Vec<String>,
    /// The configuration before the change, rerun beside it in the paired design.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_before: Option<Vec<String>>,
    /// Arguments the runs after the change had and those before did not, or the reverse.
    pub differs: Vec<String>,
    pub spread: Spread,
    /// The runs the spread was read from.
    pub base_runs: usize,
    /// Of those, left out as GC-paused (a tail figure's).
    #[serde(skip_serializing_if = "is_zero")]
    pub paused_aside: usize,
    pub levels: Levels,
    /// Every look, one per fresh run (or round), until this change's verdict.
    pub looks: Vec<Look>,
    /// The fresh runs' directories (shared with the other changes confirmed with it).
    pub runs: Vec<PathBuf>,
    /// The other figures read from the same runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    pub elapsed_s: f64,
}

impl Confirmation {
    pub fn render(&self) -> String {
        let last = self.looks.last();
        let mut text = format!(
            "{} {} of {}: {} after {} fresh run{} ({})",
            self.change.kind,
            self.figure,
            &self.series[..8],
            self.verdict.name().to_uppercase(),
            self.runs.len(),
            if self.runs.len() == 1 { "" } else { "s" },
            humantime::format_duration(std::time::Duration::from_secs(self.elapsed_s.round() as u64)),
        );
        match (last, self.design) {
            (Some(l), Design::Alone) => {
                text += &format!(
                    "\n  the fresh runs' level is ×{:.3} the level before the change, ×{:.3} the level after it \
                     (t {:.2} and {:.2} against a bound of {:.2}; spread between sittings {:.1} % ({}), between runs {:.1} %, \
                     from the {} runs before the change since the one before it{})",
                    l.to_before,
                    l.to_after,
                    l.t_before,
                    l.t_after,
                    l.bound,
                    100.0 * self.spread.between,
                    self.spread.how.name(),
                    100.0 * self.spread.within,
                    self.base_runs,
                    if self.levels.paused_runs {
                        format!(
                            ", {} GC-paused left out; a tail figure: the fresh runs' median is judged, and confirms from \
                             the third",
                            self.paused_aside
                        )
                    } else {
                        String::new()
                    }
                );
            }
            (Some(l), Design::Paired) => {
                text += &format!(
                    "\n  rerun beside the configuration before it, paired by round in random order: the configuration \
                     after runs ×{:.3} the one before (the change found: ×{:.3}; t {:.2} and {:.2} against a bound of \
                     {:.2}; the rounds' ratios spread {:.1} %)",
                    l.to_before,
                    l.to_before / l.to_after,
                    l.t_before,
                    l.t_after,
                    l.bound,
                    100.0 * self.spread.within
                );
            }
            (None, _) => {}
        }
        if !self.with.is_empty() {
            text += &format!("\n  the same reruns gave {}", self.with.join(", "));
        }
        if !self.differs.is_empty() {
            text += &format!(
                "\n  the runs after the change ran with other arguments than those before it ({}){}",
                self.differs.join(" "),
                match self.design {
                    Design::Paired => ": both were rerun, so a confirmed change is theirs",
                    Design::Alone => ": the change may be theirs",
                }
            );
        }
        text
    }
}

/// One change's plan: what its fresh runs are compared with, and the commands to rerun.
struct Plan<'a> {
    change: &'a Found,
    col: usize,
    levels: Levels,
    spread: Spread,
    base_runs: usize,
    paused_aside: usize,
    command: Vec<String>,
    before_command: Vec<String>,
    differs: Vec<String>,
}

impl Plan<'_> {
    fn design(&self) -> Design {
        if self.differs.is_empty() {
            Design::Alone
        } else {
            Design::Paired
        }
    }

    /// Whether `other` reruns what this one does (so they share runs).
    fn shares(&self, other: &Plan) -> bool {
        self.command == other.command
            && self.design() == other.design()
            && (self.design() == Design::Alone || self.before_command == other.before_command)
    }
}

/// The levels, spread and commands of `change` as the history holds them.
fn plan<'a>(req: &Request, change: &'a Found) -> Result<Plan<'a>> {
    let col = FIGURES
        .iter()
        .position(|f| *f == change.figure)
        .context("an unknown figure")?;
    let pts = req.points.of(req.series, col);
    let at = pts
        .iter()
        .position(|(r, _)| r.id == change.run_id)
        .context("the change's first run is no longer a point of its series")?;
    let before = &pts[at.saturating_sub(change.before_runs)..at];
    // The spread is read from every run since the sure change before this one (or the first
    // run): more sittings and runs than the change's own side may hold.
    let earlier = series_changes(req.series, &[change.figure.as_str()], req.points, &req.settings);
    let since = earlier
        .iter()
        .filter(|c| !c.weak)
        .filter_map(|c| pts.iter().position(|(r, _)| r.id == c.run_id))
        .filter(|&i| i < at)
        .max()
        .unwrap_or(0);
    let base = &pts[since..at];
    let after = &pts[at..(at + change.after_runs).min(pts.len())];
    let (Some((last_before, _)), Some((last_after, _))) = (before.last(), after.last()) else {
        bail!("the change has no runs on one side: nothing to confirm");
    };
    let command = rerun_args(&command_of(&last_after.record.dir)?)?;
    let before_command = rerun_args(&command_of(&last_before.record.dir)?)?;
    let here = sitting_of(
        &BTreeMap::new(),
        &crate::procfs::hostname(),
        &crate::procfs::boot_id(),
        &humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    );
    // A tail figure's spread is read without the runs a GC pause reached, as its levels were.
    let paused_runs = gc_reaches(&change.figure);
    let logs: Vec<f64> = base.iter().map(|(_, v)| v.ln()).collect();
    let aside = if paused_runs {
        set_aside(&logs)
    } else {
        vec![false; logs.len()]
    };
    let kept = |i: &usize| !aside[*i];
    let names: Vec<&str> = (0..base.len())
        .filter(kept)
        .map(|i| base[i].0.record.sitting.as_str())
        .collect();
    let id = |s: &str| names.iter().position(|n| *n == s).unwrap_or(usize::MAX);
    let sitting: Vec<usize> = names.iter().map(|s| id(s)).collect();
    let logs: Vec<f64> = (0..logs.len()).filter(kept).map(|i| logs[i]).collect();
    let spread =
        Spread::of(&logs, &sitting, Some(id(&here))).context("too few runs before the change to tell their spread")?;
    let sittings = |side: &[(&Stored, f64)]| {
        let mut s: Vec<&str> = side.iter().map(|(r, _)| r.record.sitting.as_str()).collect();
        s.dedup();
        s.len()
    };
    let levels = Levels {
        before: change.before.ln(),
        before_se: spread.level_se(before.len(), sittings(before)),
        after: change.after.ln(),
        after_se: spread.level_se(after.len(), sittings(after)),
        higher_is_worse: !higher_is_better(&change.figure),
        paused_runs,
    };
    Ok(Plan {
        change,
        col,
        levels,
        spread,
        base_runs: base.len(),
        paused_aside: aside.iter().filter(|a| **a).count(),
        differs: differs(&before_command, &command),
        command,
        before_command,
    })
}

/// Where one change stands while the rounds go on.
#[derive(Default)]
struct Track {
    fresh: Vec<f64>,
    looks: Vec<Look>,
    spread: Option<Spread>,
    /// Rounds and seconds when decided.
    rounds: usize,
    elapsed_s: f64,
}

impl Track {
    fn decided(&self) -> bool {
        self.looks.last().is_some_and(|l| l.verdict != Finding::Open)
    }
}

/// Reruns and decides every change asked; `say` is told each look as it comes.
pub fn confirm(req: &Request, exe: &Path, mut say: impl FnMut(&str)) -> Result<Vec<Confirmation>> {
    let plans = req.changes.iter().map(|c| plan(req, c)).collect::<Result<Vec<_>>>()?;
    let canary = match req.points.canary.and_then(|c| c.last()) {
        Some(c) => Some(rerun_args(&command_of(&c.record.dir)?)?),
        None => None,
    };
    // Changes that rerun the same commands share their runs.
    let mut groups: Vec<Vec<Plan>> = Vec::new();
    for p in plans {
        match groups.iter_mut().find(|g| g[0].shares(&p)) {
            Some(g) => g.push(p),
            None => groups.push(vec![p]),
        }
    }
    std::fs::create_dir_all(&req.out).with_context(|| format!("cannot create {}", req.out.display()))?;
    let mut done = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        let out = match groups.len() {
            1 => req.out.clone(),
            _ => req.out.join(format!("rerun-{}", i + 1)),
        };
        done.extend(confirm_group(req, exe, group, canary.as_deref(), &out, &mut say)?);
    }
    Ok(done)
}

/// The rounds of one group of changes, until each is decided or the last round.
fn confirm_group(
    req: &Request,
    exe: &Path,
    group: &[Plan],
    canary: Option<&[String]>,
    out: &Path,
    say: &mut impl FnMut(&str),
) -> Result<Vec<Confirmation>> {
    let figures: Vec<&str> = group.iter().map(|p| p.change.figure.as_str()).collect();
    let label = format!("{RERUN_LABEL}={}-{}", &group[0].change.series[..8], figures.join("+"));
    let runner = Rerunner {
        exe,
        history: &req.history,
        home: &req.home,
        label: &label,
    };
    let design = group[0].design();
    let rounds = req.runs.max(if design == Design::Paired { 2 } else { 1 });
    let began = Instant::now();
    let mut rng = Pcg64Mcg::seed_from_u64(rand::rng().random());
    let mut tracks: Vec<Track> = group.iter().map(|_| Track::default()).collect();
    let (mut dirs, mut canary_runs) = (Vec::new(), Vec::new());
    for k in 1..=rounds {
        let mut round_dirs = Vec::new();
        let mut run = |args: &[String], name: String| -> Result<(Record, PathBuf)> {
            let dir = out.join(name);
            let rec = runner.run(args, &dir)?;
            round_dirs.push(dir.clone());
            Ok((rec, dir))
        };
        let values = match design {
            Design::Alone => alone_round(group, k, canary, &mut canary_runs, &mut run)?,
            Design::Paired => paired_round(group, k, &mut rng, &mut run)?,
        };
        dirs.push(round_dirs);
        for ((p, t), v) in group.iter().zip(&mut tracks).zip(values) {
            if t.decided() {
                continue;
            }
            t.fresh.push(v);
            t.rounds = k;
            t.elapsed_s = began.elapsed().as_secs_f64();
            let (levels, spread) = match design {
                Design::Alone => (p.levels, Some(p.spread)),
                Design::Paired => (p.levels.difference(), Spread::paired(&t.fresh)),
            };
            let Some(spread) = spread else {
                say(&format!(
                    "  {} round {k}: the configuration after runs ×{:.3} the one before (a first look needs 2 rounds)",
                    p.change.figure,
                    v.exp()
                ));
                continue;
            };
            let l = look(&levels, &spread, &t.fresh, rounds, req.alpha);
            say(&match design {
                Design::Alone => format!(
                    "  {} run {k}: ×{:.3} the level before, ×{:.3} the level after: {}",
                    p.change.figure,
                    l.to_before,
                    l.to_after,
                    l.verdict.name()
                ),
                Design::Paired => format!(
                    "  {} round {k}: the configuration after runs ×{:.3} the one before (the change found: ×{:.3}): {}",
                    p.change.figure,
                    l.to_before,
                    levels.after.exp(),
                    l.verdict.name()
                ),
            });
            t.looks.push(l);
            t.spread = Some(spread);
        }
        if tracks.iter().all(Track::decided) {
            break;
        }
    }
    Ok(group
        .iter()
        .zip(tracks)
        .map(|(p, t)| Confirmation {
            series: p.change.series.clone(),
            figure: p.change.figure.clone(),
            change: p.change.clone(),
            verdict: t.looks.last().map_or(Finding::Open, |l| l.verdict),
            design,
            command: p.command.clone(),
            command_before: (design == Design::Paired).then(|| p.before_command.clone()),
            differs: p.differs.clone(),
            spread: t.spread.unwrap_or(p.spread),
            base_runs: p.base_runs,
            paused_aside: p.paused_aside,
            levels: p.levels,
            looks: t.looks,
            runs: dirs[..t.rounds].concat(),
            with: figures
                .iter()
                .filter(|f| **f != p.change.figure)
                .map(|f| f.to_string())
                .collect(),
            elapsed_s: t.elapsed_s,
        })
        .collect())
}

/// One round of the configuration after the change alone (and the canary's, if any): each
/// change's log, relative to the canary's level in this sitting so far.
fn alone_round(
    group: &[Plan],
    k: usize,
    canary: Option<&[String]>,
    canary_runs: &mut Vec<(Record, PathBuf)>,
    run: &mut impl FnMut(&[String], String) -> Result<(Record, PathBuf)>,
) -> Result<Vec<f64>> {
    let (rec, dir) = run(&group[0].command, format!("run-{k}"))?;
    if let Some(c) = canary {
        canary_runs.push(run(c, format!("canary-{k}"))?);
    }
    let canary_level = |col: usize| -> Result<f64> {
        let logs = canary_runs
            .iter()
            .map(|(r, d)| log_of(r, col, d))
            .collect::<Result<Vec<_>>>()?;
        Ok(if logs.is_empty() {
            0.0
        } else {
            crate::stats::mean(&logs)
        })
    };
    group
        .iter()
        .map(|p| Ok(log_of(&rec, p.col, &dir)? - canary_level(p.col)?))
        .collect()
}

/// One round of both configurations in a random order: each change's log ratio after / before.
fn paired_round(
    group: &[Plan],
    k: usize,
    rng: &mut Pcg64Mcg,
    run: &mut impl FnMut(&[String], String) -> Result<(Record, PathBuf)>,
) -> Result<Vec<f64>> {
    let mut order = [0usize, 1];
    order.shuffle(rng);
    let mut got: [Option<(Record, PathBuf)>; 2] = [None, None];
    for i in order {
        let (name, args) = [("before", &group[0].before_command), ("after", &group[0].command)][i];
        got[i] = Some(run(args, format!("round-{k}-{name}"))?);
    }
    let [Some((b, bd)), Some((a, ad))] = got else {
        unreachable!("both ran")
    };
    group
        .iter()
        .map(|p| Ok(log_of(&a, p.col, &ad)? - log_of(&b, p.col, &bd)?))
        .collect()
}
