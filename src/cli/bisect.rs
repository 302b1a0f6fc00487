//! `caplab bisect --values A,B,… -- run … {} …`: where along the values a figure changes
//! (history::bisect), its page (report::bisect).

use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

use crate::cluster::Home;
use crate::history::Store;
use crate::history::bisect::{Bisection, Conclusion, Outcome, Settings, bisect, default_dir, side_name, verdict_name};
use crate::history::events::{self, Event, EventKind};

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The values in order, comma-separated: Cassandra versions, values of one setting or of
    /// any run option (what `{}` in the command becomes).
    #[arg(long, value_delimiter = ',', required_unless_present = "values_file", num_args = 1..)]
    pub values: Vec<String>,
    /// The values, one per line, instead of --values.
    #[arg(long, value_name = "FILE", conflicts_with = "values")]
    pub values_file: Option<PathBuf>,
    /// The figure that changes (as the history names it).
    #[arg(long, default_value = "throughput", value_parser = clap::builder::PossibleValuesParser::new(crate::history::record::FIGURES))]
    pub figure: String,
    /// The smallest change that matters: the ends must differ by more, and a probe joins a side
    /// only once shown within it of that end (and unlike the other). Showing that takes rounds:
    /// at a 3 % spread between runs, a 10 % effect places a ×1.2 step's probes in about 10
    /// rounds (simulated: found where it is in 85 % of searches over 10 values;
    /// bench/results/change-points.md, "Bisection").
    #[arg(long, value_parser = crate::sla::parse_share, default_value = "10%")]
    pub effect: f64,
    /// The chance of any wrong call over the whole search.
    #[arg(long, value_parser = crate::sla::parse_share, default_value = "5%")]
    pub alpha: f64,
    /// Rounds per probe before its first look (at least 3).
    #[arg(long, default_value_t = 3)]
    pub min_rounds: usize,
    /// The most rounds per comparison (the ends', and each probe's); a comparison stops at its
    /// first decision.
    #[arg(long, default_value_t = 10)]
    pub max_rounds: usize,
    /// Where the bisection goes (default: bisect/FIGURE-TIME in caplab's home); the same
    /// directory and arguments resume it.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub history: crate::history::HistoryArgs,
    /// `caplab run`'s arguments, `{}` where the value goes, e.g. `-- run --version {} --duration 60s`.
    #[arg(last = true, required = true, value_name = "RUN ARGS")]
    pub command: Vec<String>,
}

/// Keeps the bisection among the history's events (a warning when it cannot).
fn record(args: &BisectArgs, home: &Home, b: &Bisection, answer: &Conclusion, dir: &Path) {
    let Some(at) = args.history.location(&home.data) else {
        return;
    };
    let s = &b.settings;
    let event = Event {
        kind: EventKind::Bisection,
        series: None,
        figure: s.figure.clone(),
        change_at: None,
        outcome: answer.outcome.name().to_string(),
        summary: format!(
            "bisection of {} over {} values ({} … {}): {}",
            s.figure,
            s.values.len(),
            s.values[0],
            s.values[s.values.len() - 1],
            answer.text
        ),
        dir: std::path::absolute(dir)
            .unwrap_or(dir.to_path_buf())
            .display()
            .to_string(),
        recorded_at: Event::now(),
    };
    if let Err(e) = Store::open(&at).and_then(|mut st| events::insert(&mut st, &event)) {
        eprintln!(
            "warning: the bisection is not in the history ({e:#}); it is in {}",
            dir.display()
        );
    }
}

/// Exit codes: 0 the change found (or none between the ends), 3 open or more than one change.
pub fn run(home: &Home, args: BisectArgs) -> Result<u8> {
    let values = match &args.values_file {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("cannot read --values-file {}", f.display()))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .collect(),
        None => args.values.clone(),
    };
    let settings = Settings {
        values,
        command: args.command.clone(),
        figure: args.figure.clone(),
        effect: args.effect,
        alpha: args.alpha,
        min_rounds: args.min_rounds.max(3),
        max_rounds: args.max_rounds.max(args.min_rounds.max(3)),
    };
    settings.check()?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| default_dir(&home.data, &args.figure));
    crate::console::say(&format!(
        "Bisecting {} over {} values ({} … {}), at most {} probes of {}–{} rounds: {}",
        settings.figure,
        settings.values.len(),
        settings.values[0],
        settings.values[settings.values.len() - 1],
        settings.max_probes(),
        settings.min_rounds,
        settings.max_rounds,
        dir.display()
    ));
    let exe = std::env::current_exe().context("cannot find caplab's own program")?;
    let b = bisect(settings, &dir, &exe, &home.data, crate::console::say)?;
    let page = crate::report::bisect::write(&dir, &b)?;
    let answer = b.answer.as_ref().expect("a finished bisection has its answer");
    record(&args, home, &b, answer, &dir);
    let last = b.settings.values.len() - 1;
    println!(
        "the ends: {} against {}: {} after {} round{}{}",
        b.settings.values[last],
        b.settings.values[0],
        verdict_name(b.ends.verdict),
        b.ends.rounds.len(),
        if b.ends.rounds.len() == 1 { "" } else { "s" },
        b.ends.look.map_or(String::new(), |l| format!(" (×{:.3})", l.ratio))
    );
    for (i, p) in b.probes.iter().enumerate() {
        println!(
            "probe {}: {} against {} and {}: {} after {} round{}",
            i + 1,
            b.settings.values[p.mid],
            b.settings.values[p.lo],
            b.settings.values[p.hi],
            side_name(p.side),
            p.rounds.len(),
            if p.rounds.len() == 1 { "" } else { "s" }
        );
    }
    println!("{}", answer.text);
    if let (Some(r), Some((lo, hi))) = (answer.ratio, answer.interval) {
        println!(
            "  {}: the last value ×{r:.3} [{lo:.3}–{hi:.3}] the first (the ends' comparison, paired by round)",
            b.settings.figure
        );
    }
    println!(
        "  {} runs in {}; page: {}",
        b.runs(),
        humantime::format_duration(std::time::Duration::from_secs(b.elapsed_s.round() as u64)),
        page.display()
    );
    Ok(match answer.outcome {
        Outcome::Found | Outcome::NoChange => 0,
        Outcome::Between | Outcome::Open => 3,
    })
}
