//! `caplab bisect`: where along an ordered list of values (Cassandra versions, values of one
//! setting or run option) a figure changes. The values fill the `{}` of a `caplab run`
//! command. Each probe runs the probe's value and both ends of the range still in doubt, one
//! round at a time (a block: the three in a random order, each run a `caplab run` of its own,
//! on fresh nodes when the command provisions them), and compares the probe with each end,
//! paired by round, with `stats::sequential`'s decisions (Pocock's level over the looks, the
//! error shared by every comparison the search can make). A probe that differs from the
//! first end and not from the last is at the new level (the change is at or before it); one
//! that differs from the last and not the first is at the old level; one that differs from
//! both is a level of its own (more than one change, or a gradual one: the search stops and
//! says so); one that differs from neither by the last round leaves the search open, unless it
//! is surely equivalent to both ends (no change between them: an answer too).
//!
//! Resuming: every run writes into its own directory under the bisection's; a run whose
//! result.json is complete is read, not run again, so the same command after Ctrl-C goes on
//! where it stopped. bisect.json holds the settings (checked on resume), the seed and every
//! probe with its values and decisions.

use anyhow::{Context, Result, bail};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::history::detect::{higher_is_better, value};
use crate::history::record::{FIGURES, of_dir};
use crate::stats::ratio::paired;
use crate::stats::sequential::{Decision, Design, Look, look};

/// The file a bisection keeps in its directory.
pub const BISECT_FILE: &str = "bisect.json";

/// What a bisection asks (the same on resume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub values: Vec<String>,
    /// `caplab run`'s arguments (without the program), `{}` where the value goes.
    pub command: Vec<String>,
    pub figure: String,
    /// The smallest change that matters (0.05: 5 %).
    pub effect: f64,
    /// The chance of any wrong call over the whole search.
    pub alpha: f64,
    /// Rounds per probe: the first look, the last.
    pub min_rounds: usize,
    pub max_rounds: usize,
}

/// Where a probe's value sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// At the first end's level: the change is after it.
    Old,
    /// At the last end's level: the change is at it or before.
    New,
    /// Unlike both ends.
    Between,
    /// Like both ends (surely within the effect of each): no change between them.
    Same,
    /// Not decided by the last round.
    Open,
}

/// One probe: the value at `mid` against the ends `lo` and `hi` (indices into the values).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    pub lo: usize,
    pub mid: usize,
    pub hi: usize,
    /// Per round, the figure of the first end, the probe and the last end.
    pub rounds: Vec<[f64; 3]>,
    /// The probe against the first end and the last, at the last look.
    pub to_lo: Option<Look>,
    pub to_hi: Option<Look>,
    pub side: Side,
}

/// The answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// Where the search ended: `found` (the first value at the new level), `no change`,
    /// `between` (a probe unlike both ends), `open`.
    pub outcome: String,
    /// The first value at the new level, and the last at the old one (found).
    pub first_new: Option<usize>,
    pub last_old: Option<usize>,
    /// The new level against the old (last end / first end, paired by round, the probes that
    /// ran both), with its interval at the search's level.
    pub ratio: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub text: String,
}

/// A bisection on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bisection {
    pub settings: Settings,
    pub seed: u64,
    pub probes: Vec<Probe>,
    pub answer: Option<Answer>,
    pub started_at: String,
    pub elapsed_s: f64,
}

impl Settings {
    pub fn check(&self) -> Result<()> {
        if self.values.len() < 3 {
            bail!("bisect needs at least 3 values (two are one comparison: `caplab experiment` with them as variants)");
        }
        if !self.command.iter().any(|a| a.contains("{}")) {
            bail!(
                "the command has no {{}} for the value: e.g. `caplab bisect --values 5.0.0,5.0.4,5.0.9 -- run --version {{}} --wipe`"
            );
        }
        if self.command.first().map(String::as_str) != Some("run") {
            bail!("bisect runs `caplab run` commands: give one after `--`, starting with `run`");
        }
        if !FIGURES.contains(&self.figure.as_str()) {
            bail!("no figure '{}': one of {}", self.figure, FIGURES.join(", "));
        }
        Ok(())
    }

    /// The most probes a search makes (each halves the range in doubt).
    pub fn max_probes(&self) -> usize {
        let gaps = self.values.len() - 1;
        (usize::BITS - (gaps - 1).leading_zeros()).max(1) as usize
    }

    fn design(&self) -> Design {
        Design::new(self.alpha, 2 * self.max_probes(), self.min_rounds, self.max_rounds)
    }

    /// `caplab run`'s arguments for value `i`.
    fn args(&self, i: usize) -> Vec<String> {
        self.command.iter().map(|a| a.replace("{}", &self.values[i])).collect()
    }
}

/// Caplab's program and its home, for the runs.
struct Caplab<'a> {
    exe: &'a Path,
    home: &'a Path,
}

/// Runs (or resumes) the bisection in `dir` with caplab's program `exe` and home `home`; `say`
/// is told what happens.
pub fn bisect(settings: Settings, dir: &Path, exe: &Path, home: &Path, mut say: impl FnMut(&str)) -> Result<Bisection> {
    let caplab = Caplab { exe, home };
    settings.check()?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file = dir.join(BISECT_FILE);
    let mut b = match std::fs::read(&file) {
        Ok(bytes) => {
            let b: Bisection =
                serde_json::from_slice(&bytes).with_context(|| format!("{} is not caplab's", file.display()))?;
            if b.settings != settings {
                bail!(
                    "{} holds another bisection (other values, command or figure): give another --out, or the same arguments to resume it",
                    dir.display()
                );
            }
            say(&format!("Resuming the bisection in {}", dir.display()));
            Bisection {
                probes: Vec::new(),
                answer: None,
                ..b
            }
        }
        Err(_) => Bisection {
            settings,
            seed: rand::rng().random(),
            probes: Vec::new(),
            answer: None,
            started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            elapsed_s: 0.0,
        },
    };
    let began = std::time::Instant::now();
    let before = b.elapsed_s;
    let s = b.settings.clone();
    let (mut lo, mut hi) = (0, s.values.len() - 1);
    while hi - lo >= 2 {
        let mid = (lo + hi) / 2;
        let n = b.probes.len() + 1;
        say(&format!(
            "Probe {n}: {} against {} and {}",
            s.values[mid], s.values[lo], s.values[hi]
        ));
        let probe = probe(&s, dir, &caplab, b.seed, n, [lo, mid, hi], &mut say)?;
        let side = probe.side;
        b.probes.push(probe);
        b.elapsed_s = before + began.elapsed().as_secs_f64();
        crate::files::write_json(&file, &b)?;
        match side {
            Side::Old => lo = mid,
            Side::New => hi = mid,
            Side::Between | Side::Same | Side::Open => break,
        }
    }
    b.answer = Some(answer(&s, &b.probes, lo, hi));
    b.elapsed_s = before + began.elapsed().as_secs_f64();
    crate::files::write_json(&file, &b)?;
    Ok(b)
}

/// Runs probe `n` of the value at `mid` against `lo` and `hi` until it decides or the last round.
fn probe(
    s: &Settings,
    dir: &Path,
    caplab: &Caplab,
    seed: u64,
    n: usize,
    [lo, mid, hi]: [usize; 3],
    say: &mut impl FnMut(&str),
) -> Result<Probe> {
    let design = s.design();
    let better = higher_is_better(&s.figure);
    let col = FIGURES.iter().position(|f| *f == s.figure).expect("checked");
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut p = Probe {
        lo,
        mid,
        hi,
        rounds: Vec::new(),
        to_lo: None,
        to_hi: None,
        side: Side::Open,
    };
    for round in 1..=s.max_rounds {
        let mut order = [0usize, 1, 2];
        order.shuffle(&mut rng);
        let mut got = [0.0; 3];
        for k in order {
            let which = [lo, mid, hi][k];
            let run_dir = dir
                .join(format!("probe-{n}"))
                .join(format!("round-{round}"))
                .join(format!("value-{}", which + 1));
            let label = format!("bisect={}", s.values[which]);
            got[k] = run_once(caplab, &s.args(which), &run_dir, &label, col)?;
        }
        p.rounds.push(got);
        let pairs = |k: usize| -> Vec<(f64, f64)> { p.rounds.iter().map(|r| (r[k], r[1])).collect() };
        let est = |k: usize| paired(&pairs(k), None);
        p.to_lo = est(0).map(|e| look(&design, round, &e, s.effect, better));
        p.to_hi = est(2).map(|e| look(&design, round, &e, s.effect, better));
        let differs = |l: &Option<Look>| l.is_some_and(|l| matches!(l.decision, Decision::Better | Decision::Worse));
        let same = |l: &Option<Look>| l.is_some_and(|l| l.decision == Decision::Equivalent);
        p.side = match (differs(&p.to_lo), differs(&p.to_hi)) {
            (true, false) => Side::New,
            (false, true) => Side::Old,
            (true, true) => Side::Between,
            (false, false) if same(&p.to_lo) && same(&p.to_hi) => Side::Same,
            _ => Side::Open,
        };
        let ratio = |l: &Option<Look>| l.map_or("—".to_string(), |l| format!("×{:.3}", l.ratio));
        say(&format!(
            "  round {round}: {} the first end, {} the last: {}",
            ratio(&p.to_lo),
            ratio(&p.to_hi),
            side_name(p.side)
        ));
        if p.side != Side::Open {
            break;
        }
    }
    Ok(p)
}

pub fn side_name(s: Side) -> &'static str {
    match s {
        Side::Old => "at the first end's level",
        Side::New => "at the last end's level",
        Side::Between => "unlike both ends",
        Side::Same => "like both ends",
        Side::Open => "open",
    }
}

/// One `caplab run` into `dir` (or the result already there): its figure in column `col`.
fn run_once(caplab: &Caplab, args: &[String], dir: &Path, label: &str, col: usize) -> Result<f64> {
    let done = |dir: &Path| {
        of_dir(dir, &BTreeMap::new())
            .ok()
            .filter(|r| r.status == "completed")
            .and_then(|r| value(&r, col))
    };
    if let Some(v) = done(dir) {
        return Ok(v);
    }
    if dir.exists() {
        // An interrupted run: measured again whole.
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let status = Command::new(caplab.exe)
        .args(args)
        .args(["-q", "--label", label, "--home"])
        .arg(caplab.home)
        .arg("--out")
        .arg(dir)
        .status()
        .with_context(|| format!("cannot start {}", caplab.exe.display()))?;
    done(dir).with_context(|| {
        format!(
            "the run into {} did not complete ({status}) or has no {}: its output says why; the same command resumes the bisection",
            dir.display(),
            FIGURES[col]
        )
    })
}

/// The search's answer from its probes, the range in doubt ending at `lo`..`hi`.
fn answer(s: &Settings, probes: &[Probe], lo: usize, hi: usize) -> Answer {
    let last = probes.last();
    let v = |i: usize| s.values[i].as_str();
    // The ends' own pairs, from every probe that ran them: the new level against the old.
    let pairs: Vec<(f64, f64)> = probes
        .iter()
        .filter(|p| p.lo == 0 && p.hi == s.values.len() - 1)
        .flat_map(|p| p.rounds.iter().map(|r| (r[0], r[2])))
        .collect();
    let level = paired(&pairs, None).map(|e| (e.ratio(), e.interval(1.0 - s.design().level)));
    let (outcome, first_new, last_old, text) = match last.map(|p| p.side) {
        Some(Side::Between) => {
            let p = last.expect("a probe");
            (
                "between",
                None,
                None,
                format!(
                    "{} is unlike both {} and {}: more than one change between them, or a gradual one (bisect each side apart)",
                    v(p.mid),
                    v(p.lo),
                    v(p.hi)
                ),
            )
        }
        Some(Side::Same) => (
            "no change",
            None,
            None,
            format!(
                "no change of {} % or more between {} and {}",
                s.effect * 100.0,
                v(0),
                v(s.values.len() - 1)
            ),
        ),
        Some(Side::Open) => {
            let p = last.expect("a probe");
            (
                "open",
                None,
                None,
                format!(
                    "open: {} could not be told from {} or {} in {} rounds (more --max-rounds, or a larger --effect)",
                    v(p.mid),
                    v(p.lo),
                    v(p.hi),
                    p.rounds.len()
                ),
            )
        }
        _ => (
            "found",
            Some(hi),
            Some(lo),
            format!(
                "the first value at the new level is {} (the last at the old: {})",
                v(hi),
                v(lo)
            ),
        ),
    };
    Answer {
        outcome: outcome.into(),
        first_new,
        last_old,
        ratio: level.map(|l| l.0),
        interval: level.map(|l| l.1),
        text,
    }
}

/// The directory a bisection goes to by default: `bisect-FIGURE-TIME` in caplab's data.
pub fn default_dir(data: &Path, figure: &str) -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    data.join("bisect").join(format!("{figure}-{}", now.replace(':', "")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(n: usize) -> Settings {
        Settings {
            values: (0..n).map(|i| format!("v{i}")).collect(),
            command: vec!["run".into(), "--version".into(), "{}".into()],
            figure: "throughput".into(),
            effect: 0.05,
            alpha: 0.05,
            min_rounds: 3,
            max_rounds: 6,
        }
    }

    #[test]
    fn a_search_makes_at_most_log2_probes_and_fills_the_value_in() {
        assert_eq!(settings(3).max_probes(), 1);
        assert_eq!(settings(5).max_probes(), 2);
        assert_eq!(settings(6).max_probes(), 3);
        assert_eq!(settings(10).max_probes(), 4);
        assert_eq!(settings(10).args(4), vec!["run", "--version", "v4"]);
        assert!(
            settings(2)
                .check()
                .unwrap_err()
                .to_string()
                .contains("at least 3 values")
        );
        let mut no_slot = settings(4);
        no_slot.command = vec!["run".into()];
        assert!(no_slot.check().unwrap_err().to_string().contains("no {}"));
    }
}
