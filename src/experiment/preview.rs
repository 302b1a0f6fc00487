//! `caplab experiment --check FILE`: an experiment read and checked (as `spec` does, plus this
//! machine's JDKs), and its plan printed without running it: every step of the first rounds in
//! the order it will run, what each measures, and how long the whole is likely to take; with a
//! calibration, the windows per node and rounds that answer each question at the least wall time.

use std::time::Duration;

use super::plan;
use super::spec::{Experiment, Order, RoundDesign, What};
use crate::engine::Warmup;
use crate::measure::commands::DEFAULT_DURATION;

/// Starting a fresh node, creating the schema and populating, per step (20-40 s on two cores).
const START: Duration = Duration::from_secs(30);
/// The least an automatic warm-up lasts: one window of the settle rule.
const AUTO_LEAST: Duration = Duration::from_secs(crate::steady::settle::WINDOW as u64);

/// The steps of `exp` for people: a header, one line per step, and the estimate.
pub fn steps_text(exp: &Experiment) -> String {
    let seed = exp.file.seed.unwrap_or(0);
    let steps = plan::order_of(exp, seed, exp.file.repeats.min());
    let mut out = format!(
        "{}: valid. {}, {}{}{}:\n",
        exp.origin,
        exp.shape(),
        if exp.file.fresh {
            "each on freshly started nodes"
        } else {
            "on nodes kept between steps"
        },
        if exp.file.windows > 1 {
            format!(", {} measured windows per node", exp.file.windows)
        } else {
            String::new()
        },
        match (exp.file.order, exp.file.seed) {
            (Order::Random, Some(s)) => format!("; every round in a random order (seed {s})"),
            (Order::Random, None) => {
                "; every round in a random order (an example below: each sitting draws its own seed)".into()
            }
            (Order::Rotate, _) => {
                "; each round starting one variant later (only `order: random` keeps the answers valid when rounds \
                 are correlated)"
                    .into()
            }
            (Order::AsWritten, _) => {
                "; every round as written (only `order: random` keeps the answers valid when rounds are correlated)"
                    .into()
            }
        }
    );
    let duet = exp.file.design == RoundDesign::Duet;
    if duet {
        out.push_str(
            "  a duet: each measurement's two variants run at once, on nodes of their own, with half the rate and \
             operations in flight each, their windows started in the same second\n",
        );
    }
    let (mut least, mut most, mut searches) = (Duration::ZERO, Duration::ZERO, 0);
    for (i, at) in steps.iter().enumerate() {
        let cell = &exp.cells[at.variant][at.measurement];
        let (what, span) = describe(&cell.what);
        match span {
            // A duet's second step runs in its first one's time.
            Some(_) if duet && i % 2 == 1 => {}
            Some((lo, hi)) => {
                least += lo;
                most += hi;
            }
            None => searches += 1,
        }
        out.push_str(&format!(
            "  {:03}{} {} r{} {}: {what}\n",
            i + 1,
            if duet && at.variant == 1 {
                " (with the step above)"
            } else {
                ""
            },
            exp.file.variants[at.variant].name,
            at.repeat,
            exp.file.measure[at.measurement].name
        ));
    }
    let r = exp.file.repeats;
    if r.is_auto() {
        // The first rounds are listed; later ones repeat them, as many as the question needs.
        most = most * r.max() / r.min();
        if let Some(budget) = exp.file.budget {
            // No round starts that would end after the budget.
            most = most.min(budget.max(least));
        }
        out.push_str(&format!(
            "  then rounds {} to {} like these, until every primary question is decided ({}){}{}\n",
            r.min() + 1,
            r.max(),
            (0..exp.file.measure.len())
                .map(|m| {
                    exp.primary(m)
                        .iter()
                        .map(|k| format!("{k} ±{:.0} %", exp.effect(k) * 100.0))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .collect::<Vec<_>>()
                .join("; "),
            exp.file
                .budget
                .map(|b| format!(" or the budget of {} is spent", humantime::format_duration(b)))
                .unwrap_or_default(),
            if exp.file.measure.len() > 1 {
                "; a measurement whose questions are decided is not run again"
            } else {
                ""
            }
        ));
    }
    let fmt = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs() / 60 * 60)).to_string();
    let estimate = if fmt(least) == fmt(most) {
        fmt(least)
    } else {
        format!("{} to {}", fmt(least), fmt(most))
    };
    out.push_str(&match (steps.len() - searches, searches) {
        (_, 0) if least == most => format!(
            "Estimated time: {estimate} (about {} s per step to start and populate a node).",
            START.as_secs()
        ),
        (_, 0) => format!(
            "Estimated time: {estimate} (about {} s per step to start and populate a node, and each \
             automatic warm-up between {} s and its maximum).",
            START.as_secs(),
            AUTO_LEAST.as_secs()
        ),
        (0, n) => {
            format!("Estimated time: not estimated ({n} capacity search(es): their steps depend on what they find).")
        }
        (_, n) => format!(
            "Estimated time: {estimate} for the runs, plus {n} capacity search(es), not estimated (their steps \
             depend on what they find)."
        ),
    });
    out.push('\n');
    out
}

/// The repeats and time `exp`'s question needs, at the spreads an earlier run of it measured
/// (its experiment directory `dir`): for every primary question, the round it was decided at
/// there, or about how many repeats per variant would decide it; then the most of those, and
/// the time at that run's mean step time.
pub fn estimate_from(exp: &Experiment, dir: &std::path::Path) -> anyhow::Result<String> {
    let record = super::record::ExperimentRecord::load(dir)?;
    let earlier = Experiment::parse_kept(&record.text, &record.origin)?;
    if earlier
        .file
        .variants
        .iter()
        .map(|v| &v.name)
        .ne(exp.file.variants.iter().map(|v| &v.name))
        || earlier
            .file
            .measure
            .iter()
            .map(|m| &m.name)
            .ne(exp.file.measure.iter().map(|m| &m.name))
    {
        anyhow::bail!(
            "{} ran other variants or measurements than {}: estimate from a run of the same file",
            dir.display(),
            exp.origin
        );
    }
    let comparisons =
        super::analyse::comparisons(exp, &record, dir, &super::analyse::priors(exp).unwrap_or_default(), &[]);
    let mut lines = vec![format!(
        "From {} ({} rounds run there):",
        dir.display(),
        record.rounds()
    )];
    let mut needed = exp.file.repeats.min() as usize;
    let mut unknown = false;
    for c in &comparisons {
        for a in &c.answers {
            let n = if a.decision.decided() { Some(a.round) } else { a.more };
            match n {
                Some(n) => needed = needed.max(n),
                None => unknown = true,
            }
            // An open answer's line already says how many repeats would likely decide it.
            let decided = if a.decision.decided() {
                format!(": decided at round {}", a.round)
            } else {
                String::new()
            };
            lines.push(format!("  {} {}{decided}", c.measurement, a.line()));
        }
    }
    let timed: Vec<f64> = record.steps.iter().filter_map(|s| s.elapsed_s).collect();
    let per_round =
        timed.iter().sum::<f64>() / timed.len().max(1) as f64 * (exp.cells.len() * exp.file.measure.len()) as f64;
    let time = humantime::format_duration(Duration::from_secs((per_round * needed as f64) as u64 / 60 * 60));
    lines.push(if unknown {
        format!(
            "To decide every primary question: more than 100 repeats for some; the others need about {needed} \
             repeats per variant ({time} at {:.0} s a round)",
            per_round
        )
    } else {
        format!(
            "To decide every primary question: about {needed} repeats per variant, {time} (at {:.0} s a round, as there)",
            per_round
        )
    });
    Ok(lines.join("\n"))
}

/// The windows per node and rounds each primary question needs at the least wall time, from a
/// calibration of this machine (`--calibrate`'s directory `dir`), against one window per node.
pub fn allocation(exp: &Experiment, dir: &std::path::Path) -> anyhow::Result<String> {
    let cal = super::calibrate::Calibration::load(dir)?;
    let design = super::analyse::design(exp);
    let alpha = design.alpha / design.comparisons as f64;
    let took = |s: f64| humantime::format_duration(Duration::from_secs(s as u64 / 60 * 60)).to_string();
    // A file of one variant (a calibration's own) is planned as the A/A of two.
    let variants = exp.cells.len().max(2);
    let mut lines = vec![
        cal.render(),
        format!(
            "Plan from it, for the sequential answers (looks at rounds {}–{}, α {alpha:.4}: 5 % over {} question(s)), \
             sized by simulating them to decide a difference of exactly the effect by the planned round in 80 % of \
             experiments, {variants} variants a round{}:",
            design.min,
            design.max,
            design.comparisons,
            if exp.cells.len() < 2 {
                " (the file has one: planned as an A/A)"
            } else {
                ""
            }
        ),
    ];
    for (m, measurement) in exp.file.measure.iter().enumerate() {
        for metric in exp.primary(m) {
            let Some(c) = cal
                .components
                .iter()
                .find(|c| c.measurement == measurement.name && c.metric == metric)
            else {
                lines.push(format!("  {} {metric}: not in the calibration", measurement.name));
                continue;
            };
            let a = cal.allocate(c, exp.effect(&metric), &design, variants);
            let beyond = if a.within {
                String::new()
            } else {
                format!(
                    "; more than the file's most repeats ({}): raise repeats' max",
                    design.max
                )
            };
            lines.push(format!(
                "  {} {metric} ±{:.0} %: {} window(s) per node, {} rounds (decided by then in {:.0} % of simulated \
                 experiments), about {} (one window per node: {} rounds, {:.0} %, {}){beyond}",
                measurement.name,
                exp.effect(&metric) * 100.0,
                a.windows,
                a.rounds,
                a.chance * 100.0,
                took(a.seconds),
                a.one_window_rounds,
                a.one_window_chance * 100.0,
                took(a.one_window_seconds)
            ));
        }
    }
    lines.push(format!(
        "This sitting only: another day adds the spread between sittings (pool sittings for an answer that holds on \
         another day). The file asks {} window(s) per node.",
        exp.file.windows
    ));
    Ok(lines.join("\n"))
}

/// What a step measures, and the least and most time it takes (None: a capacity search).
fn describe(what: &What) -> (String, Option<(Duration, Duration)>) {
    match what {
        What::Capacity(c) => {
            let how = match &c.rates {
                Some(rates) => format!("sweep of {rates}"),
                None => format!("search to {:.0} %", c.precision * 100.0),
            };
            (
                format!(
                    "capacity {how}, {} per step after its warm-up ({})",
                    humantime::format_duration(c.measure),
                    warmup_text(c.warmup, c.warmup_max)
                ),
                None,
            )
        }
        What::Run(r) => {
            let rate = if let Some(shape) = &r.rate.shape {
                format!("along {}", shape.text)
            } else if r.rate.per_s > 0.0 {
                format!("{} op/s", crate::console::group(r.rate.per_s))
            } else {
                "flat out".into()
            };
            let (length, measured) = match (r.duration, r.ops) {
                (_, Some(n)) => (
                    format!("{} operations", crate::console::group(n as f64)),
                    Duration::ZERO,
                ),
                (Some(d), None) => (humantime::format_duration(d).to_string(), d),
                (None, None) => (
                    humantime::format_duration(DEFAULT_DURATION).to_string(),
                    DEFAULT_DURATION,
                ),
            };
            let (lo, hi) = match resolved(r.warmup, r.warmup_max) {
                Warmup::Auto { max } => (AUTO_LEAST, max),
                Warmup::Time(d) => (d, d),
                Warmup::Ops(_) | Warmup::None => (Duration::ZERO, Duration::ZERO),
            };
            (
                format!(
                    "{} {rate}, {length} measured after a warm-up ({})",
                    workload_name(&r.common.workload),
                    warmup_text(r.warmup, r.warmup_max)
                ),
                Some((START + lo + measured, START + hi + measured)),
            )
        }
    }
}

/// The profile file's name, or the built-in's.
fn workload_name(w: &crate::measure::WorkloadOptions) -> String {
    match &w.profile {
        Some(p) => p.display().to_string(),
        None => w.workload.clone(),
    }
}

/// The warm-up as it will run (the file was checked, so it resolves).
fn resolved(w: Warmup, max: Option<Duration>) -> Warmup {
    crate::measure::options::resolve_warmup(w, max).unwrap_or(w)
}

fn warmup_text(w: Warmup, max: Option<Duration>) -> String {
    resolved(w, max).describe()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_lists_every_step_in_order_and_bounds_its_time() {
        let text = "name: p\nrepeats: 2\norder: rotate\nnode: {version: 5.0.9, java: 17}\n\
                    run: {warmup_max: 2m, duration: 30s}\n\
                    variants: [{name: a}, {name: b}]\nmeasure: [{name: insert, workload: insert}]\n";
        let exp = Experiment::parse(text, "p.yaml").unwrap();
        let text = steps_text(&exp);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("p.yaml: valid. 2 variant(s) x 1 measurement(s) x 2 repeat(s) = 4 steps"),
            "{text}"
        );
        assert!(
            lines[0].contains("only `order: random` keeps the answers valid when rounds are correlated"),
            "a rotated plan says what it gives up: {}",
            lines[0]
        );
        // Rotated: repeat 2 starts with b.
        let order: Vec<&str> = lines[1..5]
            .iter()
            .map(|l| l.split(':').next().unwrap().trim())
            .collect();
        assert_eq!(
            order,
            [
                "001 a r1 insert",
                "002 b r1 insert",
                "003 b r2 insert",
                "004 a r2 insert"
            ]
        );
        assert!(
            lines[1].contains("insert flat out, 30s measured after a warm-up (auto (max 2m))"),
            "{text}"
        );
        // Each step: 30 s to start, 30 s to 2 min of warm-up, 30 s measured: 4 x (1.5 to 3 min).
        assert!(lines[5].starts_with("Estimated time: 6m to 12m"), "{text}");
    }

    #[test]
    fn capacity_searches_are_listed_but_not_estimated() {
        let text = "name: c\nnode: {version: 5.0.9, java: 17}\nrun: {sla: 'p99<10ms/5s'}\n\
                    variants: [{name: a}]\nmeasure: [{name: cap, capacity: true, rates: '1k,2k', measure: 20s}]\n";
        let text = steps_text(&Experiment::parse(text, "c.yaml").unwrap());
        assert!(
            text.contains("001 a r1 cap: capacity sweep of 1k,2k, 20s per step"),
            "{text}"
        );
        assert!(text.contains("not estimated (3 capacity search(es)"), "{text}");
    }
}
