//! The bisection's rule, apart from running anything: which values a round runs, what the runs
//! so far decide, and the answer. The ends are compared first: a search only starts once the
//! last value is shown to differ from the first by more than the effect (or it says there is no
//! change to find, or that the ends could not be told apart). A probe then joins a side only
//! when shown *like* that side's end (equivalent within the effect, or a real difference surely
//! inside it) and not like the other; a probe decidedly unlike both ends is a level of its own
//! (a gradual change, or more than one) and the search stops there with both ratios. Every
//! comparison is paired by round and looked at with `stats::sequential` (Pocock's level over the
//! rounds, the error shared by the ends' comparison and every probe's two).

use anyhow::{Result, bail};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use crate::history::record::FIGURES;
use crate::stats::ratio::paired;
use crate::stats::sequential::{Decision, Design, Look, look};

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
    /// Rounds per comparison: the first look, the last.
    pub min_rounds: usize,
    pub max_rounds: usize,
}

impl Settings {
    /// What `caplab bisect` refuses before running anything.
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

    /// `caplab run`'s arguments for value `i`.
    pub fn args(&self, i: usize) -> Vec<String> {
        self.command.iter().map(|a| a.replace("{}", &self.values[i])).collect()
    }

    /// The most probes a search makes (each halves the range in doubt).
    pub fn max_probes(&self) -> usize {
        let gaps = self.values.len() - 1;
        (usize::BITS - (gaps - 1).leading_zeros()).max(1) as usize
    }

    /// The looks: the ends' comparison and each probe's two share the error.
    pub fn design(&self) -> Design {
        Design::new(self.alpha, 1 + 2 * self.max_probes(), self.min_rounds, self.max_rounds)
    }
}

/// Where a probe's value sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Like the first end and not the last: the change is after it.
    Old,
    /// Like the last end and not the first: the change is at it or before.
    New,
    /// Unlike both ends: a gradual change, or more than one.
    Between,
    /// Like both ends: the change between them is within the effect here (spread thin).
    Same,
    /// Not decided by the last round.
    Open,
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

/// What comparing the ends came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EndsVerdict {
    /// They differ by more than the effect: a search follows.
    Differ,
    /// No change of the effect or more between them.
    Same,
    /// Not told apart (yet, or by the last round).
    #[default]
    Open,
}

/// The ends compared, before any probe.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ends {
    /// Per round, the figure of the first value and the last.
    pub rounds: Vec<[f64; 2]>,
    /// The last against the first, at the last look.
    pub look: Option<Look>,
    pub verdict: EndsVerdict,
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

/// Where a bisection ended (a tag in bisect.json; earlier files wrote `no change` with a space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The first value at the new level.
    Found,
    /// The ends are alike.
    #[serde(alias = "no change")]
    NoChange,
    /// A probe at neither end's level: a gradual change, or more than one.
    Between,
    /// Not decided in the rounds allowed.
    Open,
}

impl Outcome {
    /// Its words (the history's events keep them).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Found => "found",
            Outcome::NoChange => "no change",
            Outcome::Between => "between",
            Outcome::Open => "open",
        }
    }
}

/// What a bisection concluded: where it ended, the first value at the new level if found, the
/// ends' ratio, and the words the terminal prints (bisect.json keeps it as `answer`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conclusion {
    /// Where the search ended.
    pub outcome: Outcome,
    /// The first value at the new level, and the last at the old one (found).
    pub first_new: Option<usize>,
    pub last_old: Option<usize>,
    /// The last value against the first (the ends' comparison, paired by round), with its
    /// interval at the search's level.
    pub ratio: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub text: String,
}

/// Surely within the effect of the other: equivalent, or a real difference inside the band.
fn like(l: &Option<Look>) -> bool {
    l.is_some_and(|l| l.decision == Decision::Equivalent || l.within_band)
}

/// Surely different by more than nothing, and not surely within the effect.
fn unlike(l: &Option<Look>) -> bool {
    l.is_some_and(|l| matches!(l.decision, Decision::Better | Decision::Worse) && !l.within_band)
}

/// The look at `rounds` pairs (a, b): b against a.
fn compare(design: &Design, s: &Settings, pairs: &[(f64, f64)], better: bool) -> Option<Look> {
    paired(pairs, None).map(|e| look(design, pairs.len(), &e, s.effect, better))
}

/// The ends' verdict after their rounds so far.
pub fn judge_ends(design: &Design, s: &Settings, e: &mut Ends, better: bool) {
    let pairs: Vec<(f64, f64)> = e.rounds.iter().map(|r| (r[0], r[1])).collect();
    e.look = compare(design, s, &pairs, better);
    e.verdict = if unlike(&e.look) {
        EndsVerdict::Differ
    } else if like(&e.look) {
        EndsVerdict::Same
    } else {
        EndsVerdict::Open
    };
}

/// How a probe joins a side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Shown like one end and unlike the other (what `caplab bisect` does).
    Shown,
    /// Unlike one end and not shown unlike the other: absence of evidence taken for evidence,
    /// as the search did once (the simulations' wrong setting).
    #[cfg(test)]
    NotUnlike,
}

/// A probe's side after its rounds so far.
pub fn judge_probe(design: &Design, s: &Settings, p: &mut Probe, better: bool, rule: Rule) {
    let pairs = |k: usize| -> Vec<(f64, f64)> { p.rounds.iter().map(|r| (r[k], r[1])).collect() };
    p.to_lo = compare(design, s, &pairs(0), better);
    p.to_hi = compare(design, s, &pairs(2), better);
    let (lo, hi) = (&p.to_lo, &p.to_hi);
    p.side = match rule {
        Rule::Shown => match (like(lo), like(hi)) {
            (true, true) => Side::Same,
            (true, false) if unlike(hi) => Side::Old,
            (false, true) if unlike(lo) => Side::New,
            _ if unlike(lo) && unlike(hi) => Side::Between,
            _ => Side::Open,
        },
        #[cfg(test)]
        Rule::NotUnlike => match (unlike(lo), unlike(hi)) {
            (true, false) => Side::New,
            (false, true) => Side::Old,
            (true, true) => Side::Between,
            _ if like(lo) && like(hi) => Side::Same,
            _ => Side::Open,
        },
    };
}

/// A look's ratio for people (— before there is one).
fn ratio(l: &Option<Look>) -> String {
    l.map_or("—".to_string(), |l| format!("×{:.3}", l.ratio))
}

/// The search's answer from the ends and its probes, the range in doubt ending at `lo`..`hi`.
pub fn answer(s: &Settings, ends: &Ends, probes: &[Probe], lo: usize, hi: usize) -> Conclusion {
    let v = |i: usize| s.values[i].as_str();
    let last_value = s.values.len() - 1;
    let pairs: Vec<(f64, f64)> = ends.rounds.iter().map(|r| (r[0], r[1])).collect();
    let level = paired(&pairs, None).map(|e| (e.ratio(), e.interval(1.0 - s.design().level)));
    let (outcome, found, text) = match (ends.verdict, probes.last()) {
        (EndsVerdict::Same, _) => (
            Outcome::NoChange,
            None,
            format!(
                "no change of {} % or more between {} and {} (compared first: {})",
                s.effect * 100.0,
                v(0),
                v(last_value),
                ratio(&ends.look)
            ),
        ),
        (EndsVerdict::Open, _) => (
            Outcome::Open,
            None,
            format!(
                "open: {} could not be told from {} in {} rounds, so there was nothing to bisect yet (more --max-rounds, \
                 or a larger --effect)",
                v(last_value),
                v(0),
                ends.rounds.len()
            ),
        ),
        (_, Some(p)) if p.side == Side::Between || p.side == Side::Same => (
            Outcome::Between,
            None,
            format!(
                "{} is {} {} and {} {}: not at either end's level, so a gradual change or more than one between them \
                 (bisect each side apart)",
                v(p.mid),
                ratio(&p.to_lo),
                v(p.lo),
                ratio(&p.to_hi),
                v(p.hi)
            ),
        ),
        (_, Some(p)) if p.side == Side::Open => (
            Outcome::Open,
            None,
            format!(
                "open: {} could not be placed beside {} ({}) or {} ({}) in {} rounds (more --max-rounds, or a larger --effect)",
                v(p.mid),
                v(p.lo),
                ratio(&p.to_lo),
                v(p.hi),
                ratio(&p.to_hi),
                p.rounds.len()
            ),
        ),
        _ => (
            Outcome::Found,
            Some((lo, hi)),
            format!(
                "the first value at the new level is {} (the last at the old: {})",
                v(hi),
                v(lo)
            ),
        ),
    };
    Conclusion {
        outcome,
        first_new: found.map(|f| f.1),
        last_old: found.map(|f| f.0),
        ratio: level.map(|l| l.0),
        interval: level.map(|l| l.1),
        text,
    }
}

/// One run the search asks for: value `which` in round `round` of the ends' comparison
/// (`probe` 0) or of probe `probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub probe: usize,
    pub round: usize,
    pub which: usize,
}

/// What a search runs and tells, from its caller: `measure` a run's figure; `saved` is told the
/// ends and probes after every comparison is decided or ends, `say` what happens.
pub struct Io<'a> {
    pub measure: &'a mut dyn FnMut(Run) -> Result<f64>,
    pub saved: &'a mut dyn FnMut(&Ends, &[Probe]) -> Result<()>,
    pub say: &'a mut dyn FnMut(&str),
}

/// The search (`better`: more of the figure is better). Each round runs its values in an order
/// drawn from `seed` and the comparison's number.
pub fn search(s: &Settings, seed: u64, better: bool, io: Io) -> Result<(Ends, Vec<Probe>, Conclusion)> {
    search_by(Rule::Shown, true, s, seed, better, io)
}

/// `search` by `rule`, the ends compared first or (`ends_first` false, the simulations' wrong
/// setting) not: then the search goes on as if they differed.
fn search_by(
    rule: Rule,
    ends_first: bool,
    s: &Settings,
    seed: u64,
    better: bool,
    io: Io,
) -> Result<(Ends, Vec<Probe>, Conclusion)> {
    let Io { measure, saved, say } = io;
    let design = s.design();
    let order = |n: usize| Pcg64Mcg::seed_from_u64(seed ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let (first, last) = (0, s.values.len() - 1);
    let mut ends = Ends::default();
    say(&format!(
        "The ends first: {} against {}",
        s.values[last], s.values[first]
    ));
    let mut rng = order(0);
    for round in (1..=s.max_rounds).filter(|_| ends_first) {
        let mut which = [first, last];
        which.shuffle(&mut rng);
        let mut got = [0.0; 2];
        for w in which {
            got[usize::from(w == last)] = measure(Run {
                probe: 0,
                round,
                which: w,
            })?;
        }
        ends.rounds.push(got);
        judge_ends(&design, s, &mut ends, better);
        let ratio = ratio(&ends.look);
        say(&format!(
            "  round {round}: the last value {ratio} the first: {}",
            verdict_name(ends.verdict)
        ));
        if ends.verdict != EndsVerdict::Open {
            break;
        }
    }
    if !ends_first {
        ends.verdict = EndsVerdict::Differ;
    }
    saved(&ends, &[])?;
    let mut probes: Vec<Probe> = Vec::new();
    let (mut lo, mut hi) = (first, last);
    while ends.verdict == EndsVerdict::Differ && hi - lo >= 2 {
        let mid = (lo + hi) / 2;
        let n = probes.len() + 1;
        say(&format!(
            "Probe {n}: {} against {} and {}",
            s.values[mid], s.values[lo], s.values[hi]
        ));
        let mut p = Probe {
            lo,
            mid,
            hi,
            rounds: Vec::new(),
            to_lo: None,
            to_hi: None,
            side: Side::Open,
        };
        let mut rng = order(n);
        for round in 1..=s.max_rounds {
            let mut k = [0usize, 1, 2];
            k.shuffle(&mut rng);
            let mut got = [0.0; 3];
            for k in k {
                got[k] = measure(Run {
                    probe: n,
                    round,
                    which: [lo, mid, hi][k],
                })?;
            }
            p.rounds.push(got);
            judge_probe(&design, s, &mut p, better, rule);
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
        let side = p.side;
        probes.push(p);
        saved(&ends, &probes)?;
        match side {
            Side::Old => lo = mid,
            Side::New => hi = mid,
            Side::Between | Side::Same | Side::Open => break,
        }
    }
    let a = answer(s, &ends, &probes, lo, hi);
    Ok((ends, probes, a))
}

pub fn verdict_name(v: EndsVerdict) -> &'static str {
    match v {
        EndsVerdict::Differ => "they differ",
        EndsVerdict::Same => "alike",
        EndsVerdict::Open => "open",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{bound, normal};

    fn settings(n: usize) -> Settings {
        Settings {
            values: (0..n).map(|i| format!("v{i}")).collect(),
            command: vec!["run".into(), "--version".into(), "{}".into()],
            figure: "throughput".into(),
            effect: 0.10,
            alpha: 0.05,
            min_rounds: 3,
            max_rounds: 10,
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

    /// A search over values whose log levels are `levels`, each round's level moving by 5 %
    /// (alike for its values: the machine that round) and each run by `run_sd`.
    fn simulate(rng: &mut Pcg64Mcg, levels: &[f64], run_sd: f64, rule: Rule, ends_first: bool) -> Conclusion {
        let s = settings(levels.len());
        let seed = rand::Rng::random(rng);
        let mut round = (usize::MAX, 0usize, 0.0);
        let mut measure = |r: Run| -> Result<f64> {
            if (round.0, round.1) != (r.probe, r.round) {
                round = (r.probe, r.round, 0.05 * normal(rng));
            }
            Ok(1000.0 * (levels[r.which] + round.2 + run_sd * normal(rng)).exp())
        };
        let io = Io {
            measure: &mut measure,
            saved: &mut |_, _| Ok(()),
            say: &mut |_| {},
        };
        let found = search_by(rule, ends_first, &s, seed, true, io);
        found.expect("a simulated search runs").2
    }

    /// Ten values' log levels: `steps` (gap, log change) added from the value after each gap.
    fn levels(steps: &[(usize, f64)]) -> Vec<f64> {
        (0..10)
            .map(|i| steps.iter().filter(|(g, _)| i > *g).map(|(_, d)| d).sum())
            .collect()
    }

    /// Shares over `cases` searches of the kind `make` draws: (misplaced, found where the one
    /// step is). Misplaced: one place named where there is none (no change, a gradual one, two
    /// steps) or the wrong one (one step).
    fn shares(
        seed: u64,
        cases: usize,
        rule: Rule,
        ends_first: bool,
        make: impl Fn(&mut Pcg64Mcg) -> (Vec<f64>, Option<usize>),
    ) -> (f64, f64, String) {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let (mut misplaced, mut right) = (0usize, 0usize);
        let mut outcomes = std::collections::BTreeMap::new();
        for _ in 0..cases {
            let (levels, step) = make(&mut rng);
            let a = simulate(&mut rng, &levels, 0.03, rule, ends_first);
            *outcomes.entry(a.outcome.name()).or_insert(0usize) += 1;
            match (a.first_new, step) {
                (Some(f), Some(g)) if f == g + 1 => right += 1,
                (Some(_), _) => misplaced += 1,
                (None, _) => {}
            }
        }
        let outcomes: Vec<String> = outcomes
            .iter()
            .map(|(o, n)| format!("{o} {:.1} %", 100.0 * *n as f64 / cases as f64))
            .collect();
        (
            misplaced as f64 / cases as f64,
            right as f64 / cases as f64,
            outcomes.join(", "),
        )
    }

    /// Draws a kind of search: the values' log levels, and the gap of its one step if it has one.
    type Make = fn(&mut Pcg64Mcg) -> (Vec<f64>, Option<usize>);

    fn one_step(rng: &mut Pcg64Mcg) -> (Vec<f64>, Option<usize>) {
        let g = rand::Rng::random_range(rng, 0..9);
        (levels(&[(g, 1.2f64.ln())]), Some(g))
    }

    /// ×1.5 over 5 gaps, somewhere among the 9.
    fn gradual(rng: &mut Pcg64Mcg) -> (Vec<f64>, Option<usize>) {
        let from = rand::Rng::random_range(rng, 0..5);
        let steps: Vec<(usize, f64)> = (from..from + 5).map(|g| (g, 1.5f64.ln() / 5.0)).collect();
        (levels(&steps), None)
    }

    fn two_steps(rng: &mut Pcg64Mcg) -> (Vec<f64>, Option<usize>) {
        let a = rand::Rng::random_range(rng, 0..9);
        let b = (a + rand::Rng::random_range(rng, 1..9)) % 9;
        (levels(&[(a, 1.15f64.ln()), (b, 1.15f64.ln())]), None)
    }

    fn no_change(_: &mut Pcg64Mcg) -> (Vec<f64>, Option<usize>) {
        (levels(&[]), None)
    }

    /// Issue 72's item 3: ten values, rounds 5 % apart and runs 3 % (`--effect 10%`, 3 to 10
    /// rounds, the defaults, chosen on seeds 7231–7235), 1,000 searches each on seeds 7241–7244:
    /// one place is named wrongly
    /// (a single ×1.2 step at another value; a gradual ×1.5 over 5 gaps, two ×1.15 steps or no
    /// change named as one step) in at most 5 % (estimate + 3 SE; measured 0 in each). The wrong
    /// setting, a probe joining the side whose end it was not shown unlike and the ends never
    /// compared (the search as it was), must fail it on two steps (seed 7245; measured 76.8 %).
    /// Printed: how often the one step is named where it is (the power: 85.1 %) and the outcomes.
    #[test]
    fn a_bisection_names_one_place_only_where_there_is_one() {
        let cases = 1_000;
        let kinds: [(&str, Make); 4] = [
            ("one x1.2 step", one_step),
            ("gradual x1.5 over 5 gaps", gradual),
            ("two x1.15 steps", two_steps),
            ("no change", no_change),
        ];
        for (i, (name, make)) in kinds.into_iter().enumerate() {
            let (misplaced, right, outcomes) = shares(7241 + i as u64, cases, Rule::Shown, true, make);
            println!(
                "{name}: misplaced {:.1} %, named where it is {:.1} % ({outcomes})",
                100.0 * misplaced,
                100.0 * right
            );
            assert!(bound(misplaced, cases) <= 0.05, "{name}: misplaced {misplaced}");
        }
        let (wrong, _, _) = shares(7245, cases, Rule::NotUnlike, false, two_steps);
        println!(
            "two x1.15 steps, the search as it was: misplaced {:.1} %",
            100.0 * wrong
        );
        assert!(
            crate::stats::sim::lower(wrong, cases) > 0.05,
            "the search as it was: {wrong}"
        );
    }

    #[test]
    fn an_outcome_is_a_tag_and_earlier_words_still_read() {
        assert_eq!(serde_json::to_string(&Outcome::NoChange).unwrap(), "\"no_change\"");
        assert_eq!(
            serde_json::from_str::<Outcome>("\"no change\"").unwrap(),
            Outcome::NoChange
        );
        assert_eq!(serde_json::from_str::<Outcome>("\"found\"").unwrap(), Outcome::Found);
    }
}
