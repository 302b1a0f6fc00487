//! `caplab bisect`: where along an ordered list of values (Cassandra versions, values of one
//! setting or run option) a figure changes. The values fill the `{}` of a `caplab run`
//! command. The rule (search.rs): the ends are compared first, round by round (each run a
//! `caplab run` of its own, on fresh nodes when the command provisions them); only once they
//! differ by more than the effect does a probe run, each round the probe's value and both ends
//! of the range still in doubt in a random order, until the probe is shown like one end and
//! unlike the other (it joins that side), unlike both (a gradual change or more than one: the
//! search stops and says so with both ratios), or the last round leaves it open.
//!
//! Resuming: every run writes into its own directory under the bisection's; a run whose
//! result.json is complete is read, not run again, so the same command after Ctrl-C goes on
//! where it stopped. bisect.json holds the settings (checked on resume), the seed, the ends'
//! comparison and every probe with its values and decisions.

mod search;

use anyhow::{Context, Result, bail};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::history::detect::{higher_is_better, value};
use crate::history::record::{FIGURES, of_dir};
pub use search::{Conclusion, Ends, EndsVerdict, Outcome, Probe, Run, Settings, Side, side_name, verdict_name};

/// The file a bisection keeps in its directory.
pub const BISECT_FILE: &str = "bisect.json";

/// A bisection on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bisection {
    pub settings: Settings,
    pub seed: u64,
    /// The ends compared first (absent from a bisection written before they were).
    #[serde(default)]
    pub ends: Ends,
    pub probes: Vec<Probe>,
    pub answer: Option<Conclusion>,
    pub started_at: String,
    pub elapsed_s: f64,
}

impl Bisection {
    /// The runs made: two a round of the ends, three a round of each probe.
    pub fn runs(&self) -> usize {
        2 * self.ends.rounds.len() + self.probes.iter().map(|p| 3 * p.rounds.len()).sum::<usize>()
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
                ends: Ends::default(),
                probes: Vec::new(),
                answer: None,
                ..b
            }
        }
        Err(_) => Bisection {
            settings,
            seed: rand::rng().random(),
            ends: Ends::default(),
            probes: Vec::new(),
            answer: None,
            started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            elapsed_s: 0.0,
        },
    };
    let began = std::time::Instant::now();
    let before = b.elapsed_s;
    let (s, seed) = (b.settings.clone(), b.seed);
    let col = FIGURES.iter().position(|f| *f == s.figure).expect("checked");
    let mut measure = |r: Run| -> Result<f64> {
        let step = match r.probe {
            0 => "ends".to_string(),
            n => format!("probe-{n}"),
        };
        let run_dir = dir
            .join(step)
            .join(format!("round-{}", r.round))
            .join(format!("value-{}", r.which + 1));
        let label = format!("bisect={}", s.values[r.which]);
        run_once(&caplab, &s.args(r.which), &run_dir, &label, col)
    };
    let mut saved = |ends: &Ends, probes: &[Probe]| -> Result<()> {
        b.ends = ends.clone();
        b.probes = probes.to_vec();
        b.elapsed_s = before + began.elapsed().as_secs_f64();
        crate::files::write_json(&file, &b)
    };
    let io = search::Io {
        measure: &mut measure,
        saved: &mut saved,
        say: &mut say,
    };
    let (ends, probes, answer) = search::search(&s, seed, higher_is_better(&s.figure), io)?;
    b.ends = ends;
    b.probes = probes;
    b.answer = Some(answer);
    b.elapsed_s = before + began.elapsed().as_secs_f64();
    crate::files::write_json(&file, &b)?;
    Ok(b)
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

/// The directory a bisection goes to by default: `bisect-FIGURE-TIME` in caplab's data.
pub fn default_dir(data: &Path, figure: &str) -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    data.join("bisect").join(format!("{figure}-{}", now.replace(':', "")))
}
