//! Confirmation by rerunning: a change found in a series is either still there when its
//! configuration runs again now, or it was a noisy night. The runs after the change are rerun
//! from their own result.json (`command`, with caplab's output, quietness, history and labels
//! replaced), one at a time, each recorded in the history with the label `confirm`, until
//! `stats::confirm`'s rule decides: confirmed (worse than the level before), not confirmed
//! (better than the level after: back where it was) or, after the last run allowed, open.
//! With a canary, each round reruns the canary's last command too and compares the ratios.
//! Where the runs after the change ran with other arguments than those before it (a fault, a
//! setting the job changed), the confirmation says so: the change may be theirs.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::detect::{Found, Points, RERUN_LABEL, higher_is_better, series_changes};
use super::record::{FIGURES, of_dir, sitting_of};
use super::store::Stored;
use crate::measure::RunResult;
use crate::stats::changes::Settings;
use crate::stats::confirm::{Levels, Look, Spread, Verdict, look};

/// What a confirmation asks.
pub struct Request<'a> {
    pub series: &'a [&'a Stored],
    pub change: &'a Found,
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

/// What a confirmation found.
#[derive(Debug, Clone, Serialize)]
pub struct Confirmation {
    pub series: String,
    pub figure: String,
    /// The change confirmed: its kind, ratio and first run.
    pub change: Found,
    pub verdict: Verdict,
    /// The arguments rerun (caplab's own output, history and labels left out).
    pub command: Vec<String>,
    /// Arguments the runs after the change had and those before did not, or the reverse.
    pub differs: Vec<String>,
    pub spread: Spread,
    /// The runs the spread was read from.
    pub base_runs: usize,
    pub levels: Levels,
    /// Every look, one per fresh run (or round).
    pub looks: Vec<Look>,
    /// The fresh runs' directories.
    pub runs: Vec<PathBuf>,
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
        if let Some(l) = last {
            text += &format!(
                "\n  the fresh runs' level is ×{:.3} the level before the change, ×{:.3} the level after it \
                 (t {:.2} and {:.2} against a bound of {:.2}; spread between sittings {:.1} % ({}), between runs {:.1} %, \
                 from the {} runs before the change since the one before it)",
                l.to_before,
                l.to_after,
                l.t_before,
                l.t_after,
                l.bound,
                100.0 * self.spread.between,
                self.spread.how,
                100.0 * self.spread.within,
                self.base_runs
            );
        }
        if !self.differs.is_empty() {
            text += &format!(
                "\n  note: the runs after the change ran with other arguments than those before it ({}): the change may be theirs",
                self.differs.join(" ")
            );
        }
        text
    }
}

/// Reruns and decides; `say` is told each look as it comes.
pub fn confirm(req: &Request, exe: &Path, mut say: impl FnMut(&Look)) -> Result<Confirmation> {
    let col = FIGURES
        .iter()
        .position(|f| *f == req.change.figure)
        .context("an unknown figure")?;
    let pts = req.points.of(req.series, col);
    let at = pts
        .iter()
        .position(|(r, _)| r.id == req.change.run_id)
        .context("the change's first run is no longer a point of its series")?;
    let before = &pts[at.saturating_sub(req.change.before_runs)..at];
    // The spread is read from every run since the sure change before this one (or the first
    // run): more sittings and runs than the change's own side may hold.
    let earlier = series_changes(req.series, &[req.change.figure.as_str()], req.points, &req.settings);
    let since = earlier
        .iter()
        .filter(|c| !c.weak)
        .filter_map(|c| pts.iter().position(|(r, _)| r.id == c.run_id))
        .filter(|&i| i < at)
        .max()
        .unwrap_or(0);
    let base = &pts[since..at];
    let after = &pts[at..(at + req.change.after_runs).min(pts.len())];
    let (Some((last_before, _)), Some((last_after, _))) = (before.last(), after.last()) else {
        bail!("the change has no runs on one side: nothing to confirm");
    };
    let command = rerun_args(&command_of(&last_after.record.dir)?)?;
    let differs = differs(&rerun_args(&command_of(&last_before.record.dir)?)?, &command);
    let canary_command = match req.points.canary.and_then(|c| c.last()) {
        Some(c) => Some(rerun_args(&command_of(&c.record.dir)?)?),
        None => None,
    };

    let here = sitting_of(
        &BTreeMap::new(),
        &crate::procfs::hostname(),
        &crate::procfs::boot_id(),
        &humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    );
    let names: Vec<&str> = base.iter().map(|(r, _)| r.record.sitting.as_str()).collect();
    let id = |s: &str| names.iter().position(|n| *n == s).unwrap_or(usize::MAX);
    let sitting: Vec<usize> = names.iter().map(|s| id(s)).collect();
    let logs: Vec<f64> = base.iter().map(|(_, v)| v.ln()).collect();
    let spread =
        Spread::of(&logs, &sitting, Some(id(&here))).context("too few runs before the change to tell their spread")?;
    let sittings = |side: &[(&Stored, f64)]| {
        let mut s: Vec<&str> = side.iter().map(|(r, _)| r.record.sitting.as_str()).collect();
        s.dedup();
        s.len()
    };
    let levels = Levels {
        before: req.change.before.ln(),
        before_se: spread.level_se(before.len(), sittings(before)),
        after: req.change.after.ln(),
        after_se: spread.level_se(after.len(), sittings(after)),
        higher_is_worse: !higher_is_better(&req.change.figure),
    };

    std::fs::create_dir_all(&req.out).with_context(|| format!("cannot create {}", req.out.display()))?;
    let began = std::time::Instant::now();
    let label = format!("{RERUN_LABEL}={}-{}", &req.change.series[..8], req.change.figure);
    let (mut logs, mut canary_logs, mut looks, mut runs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for k in 1..=req.runs.max(1) {
        let dir = req.out.join(format!("run-{k}"));
        logs.push(rerun(exe, &command, &dir, req, &label, col)?.ln());
        runs.push(dir);
        // With a canary, every fresh run relative to the canary's level in this sitting: the
        // mean of its fresh runs so far.
        let fresh: Vec<f64> = match &canary_command {
            Some(c) => {
                let dir = req.out.join(format!("canary-{k}"));
                canary_logs.push(rerun(exe, c, &dir, req, &label, col)?.ln());
                let level = crate::stats::mean(&canary_logs);
                logs.iter().map(|l| l - level).collect()
            }
            None => logs.clone(),
        };
        let l = look(&levels, &spread, &fresh, req.runs.max(1), req.alpha);
        say(&l);
        looks.push(l);
        if l.verdict != Verdict::Open {
            break;
        }
    }
    let verdict = looks.last().map_or(Verdict::Open, |l| l.verdict);
    Ok(Confirmation {
        series: req.change.series.clone(),
        figure: req.change.figure.clone(),
        change: req.change.clone(),
        verdict,
        command,
        differs,
        spread,
        base_runs: base.len(),
        levels,
        looks,
        runs,
        elapsed_s: began.elapsed().as_secs_f64(),
    })
}

/// One rerun into `dir`: the figure in column `col` of its record.
fn rerun(exe: &Path, args: &[String], dir: &Path, req: &Request, label: &str, col: usize) -> Result<f64> {
    let status = Command::new(exe)
        .args(args)
        .args(["-q", "--history", &req.history, "--label", label, "--home"])
        .arg(&req.home)
        .arg("--out")
        .arg(dir)
        .status()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    // A run that missed its service level exits 1 with its results whole: those count.
    let rec = match of_dir(dir, &BTreeMap::new()) {
        Ok(rec) if rec.status == "completed" => rec,
        _ => bail!(
            "the rerun into {} did not complete ({status}): its output says why; the reruns before it are in the history",
            dir.display()
        ),
    };
    super::detect::value(&rec, col).with_context(|| {
        format!(
            "the rerun in {} has no {} (or not a positive one)",
            dir.display(),
            FIGURES[col]
        )
    })
}

/// The command a result was made by, from its result.json.
fn command_of(dir: &Path) -> Result<Vec<String>> {
    let r = RunResult::load(dir).with_context(|| {
        format!(
            "{}: a confirmation reruns a run's own command from its result.json, which is gone",
            dir.display()
        )
    })?;
    Ok(r.command)
}

/// The arguments to rerun `command` with: the program, its output directory, quietness,
/// history and labels left out (the rerun gets its own).
pub fn rerun_args(command: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut it = command.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" | "-o" | "--history" | "--label" | "--home" => {
                it.next();
            }
            "-q" | "--quiet" | "--no-history" => {}
            _ if ["--out=", "--history=", "--label=", "--home="]
                .iter()
                .any(|p| a.starts_with(p)) => {}
            _ => out.push(a.clone()),
        }
    }
    match out.first().map(String::as_str) {
        Some("run") => Ok(out),
        Some(other) => bail!(
            "a confirmation reruns `caplab run`s; this series was made by `caplab {other}` (rerun it by hand, or confirm a run series)"
        ),
        None => bail!("the run's result.json records no command to rerun"),
    }
}

/// Arguments in one list and not the other (each marked `+` after, `-` before).
fn differs(before: &[String], after: &[String]) -> Vec<String> {
    let added = after.iter().filter(|a| !before.contains(a)).map(|a| format!("+{a}"));
    let gone = before.iter().filter(|a| !after.contains(a)).map(|a| format!("-{a}"));
    added.chain(gone).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn a_rerun_keeps_the_configuration_and_drops_what_was_this_runs_own() {
        let cmd = args(
            "/x/caplab run --hosts 127.0.0.1:9042 -q --out /r/a --rate 1000 --history h.db --label commit=abc --label=x=y --duration 2s",
        );
        assert_eq!(
            rerun_args(&cmd).unwrap(),
            args("run --hosts 127.0.0.1:9042 --rate 1000 --duration 2s")
        );
        let err = rerun_args(&args("/x/caplab capacity --sla p99<10ms")).unwrap_err();
        assert!(err.to_string().contains("made by `caplab capacity`"), "{err}");
        let before = args("run --rate 1000");
        let after = args("run --rate 1000 --fault delay");
        assert_eq!(differs(&before, &after), vec!["+--fault", "+delay"]);
    }
}
