//! The figures and verdicts of a comparison: which units are compared (all, or steady ones
//! when asked), each metric's estimate per variant (over its units, or a single run's
//! per-second series), the ratio to the baseline with its interval and test (paired over rounds
//! when the variants ran in blocks, Welch's on the logs otherwise, pooled across sittings by
//! machine when there are several), Benjamini–Hochberg's correction over the
//! measurement, and the verdict in words.

use super::answer::{Answer, Question, pooled_answers, sitting_answers, tau_prior};
use super::metrics::{Metric, metrics};
use super::pool::{SittingId, by_machine, per_sitting};
use super::units::{Unit, blocked};
use super::{Comparison, Excluded, Figure, Row, Verdict};
use crate::metrics::recorder::new_histogram;
use crate::stats::{self, Estimate};

const LEVEL: f64 = 0.95;
const ALPHA: f64 = 0.05;

/// What a comparison is asked.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The index of the variant the others are compared with.
    pub baseline: usize,
    /// Differences smaller than this share (0.02: 2 %) are negligible however sure.
    pub floor: f64,
    /// Only these metrics get a test (and share the correction); the others keep their means
    /// and intervals, marked untested. None: every metric.
    pub tested: Option<&'a [String]>,
    /// Leave out units whose window was not steady (by default every window is data).
    pub steady_only: bool,
    /// The question, when the comparison should answer it (primary metrics, effects, design).
    pub question: Option<Question<'a>>,
    /// Answers decided at earlier rounds of this sitting, carried over as they were.
    pub earlier: &'a [Answer],
    /// The sittings the units come from, with their machines: one, a sitting's own
    /// comparison; several, a comparison across them (answers pooled by machine).
    pub sittings: &'a [SittingId],
    /// Each sitting's own answers, shown beside pooled ones.
    pub own: &'a [Vec<Answer>],
}

/// The variants' units that are compared, the units left out, and per variant why it cannot be
/// tested (too few steady repeats), if so.
struct Kept {
    variants: Vec<(String, Vec<Unit>)>,
    excluded: Vec<Excluded>,
    short: Vec<Option<String>>,
}

/// Compares the variants of one measurement, metric by metric.
pub fn compare(measurement: &str, variants: &[(String, Vec<Unit>)], ask: Ask) -> Comparison {
    let Kept {
        variants,
        excluded,
        short,
    } = keep(variants, ask.steady_only);
    let repeats: Vec<usize> = variants.iter().map(|(_, o)| o.len()).collect();
    let by_repeats = repeats.iter().all(|&n| n >= 2);
    let sittings = ask.sittings.len().max(1);
    let mut rows: Vec<Row> = metrics()
        .iter()
        .filter_map(|metric| row(metric, &variants, &short, by_repeats, ask))
        .collect();
    adjust(&mut rows);
    for row in &mut rows {
        let better_up = row.higher_is_better;
        let base_mean = row.cells[ask.baseline].mean;
        for cell in row.cells.iter_mut().filter(|c| c.verdict == Verdict::Pending) {
            cell.verdict = verdict(cell, base_mean, ask.floor, better_up);
        }
    }
    let answers = match ask.question {
        Some(q) if sittings > 1 => pooled_answers(&variants, ask.baseline, &q, ask.sittings, ask.own),
        Some(q) => sitting_answers(&variants, ask.baseline, &q, ask.earlier),
        None => Vec::new(),
    };
    for a in &answers {
        let cells = rows
            .iter_mut()
            .filter(|r| r.metric == a.metric)
            .flat_map(|r| &mut r.cells);
        for cell in cells.filter(|c| c.variant == a.variant) {
            cell.answer = Some(a.decision);
        }
    }
    let paired = variants.iter().all(|(_, u)| blocked(u));
    Comparison {
        measurement: measurement.to_string(),
        baseline: variants[ask.baseline].0.clone(),
        floor: ask.floor,
        evidence: if short.iter().any(Option::is_some) {
            "too few steady repeats to test every variant".into()
        } else if !by_repeats {
            "per-second series of single runs (weaker evidence: one JVM each)".into()
        } else if sittings > 1 {
            format!("repeats paired by round, pooled across {sittings} sittings")
        } else if paired {
            "repeats paired by round".into()
        } else {
            "repeats".into()
        },
        repeats,
        steady_only: ask.steady_only,
        excluded,
        rows,
        answers,
        sittings: ask.sittings.iter().map(|s| s.name.clone()).collect(),
    }
}

/// The units compared: with `steady_only`, those whose window was not steady are left out and
/// named, and a variant left with fewer than two is marked too short to test.
fn keep(variants: &[(String, Vec<Unit>)], steady_only: bool) -> Kept {
    let mut kept = Kept {
        variants: Vec::new(),
        excluded: Vec::new(),
        short: Vec::new(),
    };
    for (name, units) in variants {
        let (keep, out): (Vec<Unit>, Vec<Unit>) = units.iter().cloned().partition(|u| !steady_only || !u.unsteady());
        for u in &out {
            kept.excluded.push(Excluded {
                variant: name.clone(),
                dir: u.dir.clone(),
                why: u.why.clone(),
                unreadable: false,
            });
        }
        kept.short.push(
            (!out.is_empty() && keep.len() < 2)
                .then(|| format!("too few steady repeats ({} of {} steady)", keep.len(), units.len())),
        );
        kept.variants.push((name.clone(), keep));
    }
    kept
}

/// Each variant's estimate of `metric`: over its units, or, when some variant has a single
/// unit, over that run's per-second series with an effective sample size.
fn estimates(
    metric: &Metric,
    variants: &[(String, Vec<Unit>)],
    values: &[Vec<f64>],
    by_repeats: bool,
) -> Vec<Option<Estimate>> {
    variants
        .iter()
        .zip(values)
        .map(|((_, units), v)| {
            let series = match (by_repeats, metric.series, units.as_slice()) {
                (false, Some(series), [u]) => u.detail.as_ref().map(|d| series(&d.series).clone()),
                _ => None,
            };
            match series {
                Some(x) if x.len() >= 4 => Some(Estimate::from_moments(
                    stats::mean(&x),
                    stats::variance(&x),
                    stats::effective_n(&x),
                    LEVEL,
                )),
                _ if v.is_empty() => None,
                _ => Some(Estimate::of(v, LEVEL)),
            }
        })
        .collect()
}

/// The ratio of `other` to `base` on `key` with its 95 % interval and p-value, on the log
/// scale: per sitting paired over its rounds (Welch's on the logs when not in blocks), pooled by
/// machine when there are several sittings (`pool::by_machine`, its interval at 95 % and its
/// p-value). None when a value is not positive.
fn log_ratio(base: &[Unit], other: &[Unit], key: &str, ask: &Ask) -> Option<(f64, (f64, f64), f64)> {
    let per = per_sitting(base, other, key, ask.sittings.len().max(1), false);
    match per.as_slice() {
        [] => None,
        [(_, one)] => Some((one.ratio(), one.interval(LEVEL), one.p())),
        _ => {
            let prior = tau_prior(ask.question.map_or(&[], |q| q.tau_priors), key);
            let p = by_machine(&per, ask.sittings, &prior, LEVEL)?;
            Some((p.d.exp(), (p.ci.0.exp(), p.ci.1.exp()), p.p))
        }
    }
}

/// One metric's row: a cell per variant with its estimate, and against the baseline its ratio,
/// interval and test (verdicts come after the correction). None when no variant measured it.
fn row(
    metric: &Metric,
    variants: &[(String, Vec<Unit>)],
    short: &[Option<String>],
    by_repeats: bool,
    ask: Ask,
) -> Option<Row> {
    let values: Vec<Vec<f64>> = variants
        .iter()
        .map(|(_, units)| units.iter().filter_map(|u| u.value(metric.key)).collect())
        .collect();
    if values.iter().all(|v| v.is_empty()) {
        return None;
    }
    let estimates = estimates(metric, variants, &values, by_repeats);
    let baseline = ask.baseline;
    let base = &estimates[baseline];
    let mut cells = Vec::new();
    for (i, ((name, units), est)) in variants.iter().zip(&estimates).enumerate() {
        let mut cell = Figure {
            variant: name.clone(),
            n: est.map_or(0.0, |e| e.n),
            mean: est.map(|e| e.mean),
            ci: est
                .filter(|e| e.half_width.is_finite())
                .map(|e| positive_interval(e.mean, e.half_width)),
            pooled: metric
                .quantile
                .and_then(|q| pooled(q, units))
                .filter(|_| units.len() > 1),
            ratio: None,
            ratio_ci: None,
            p: None,
            p_adjusted: None,
            verdict: Verdict::Pending,
            answer: None,
            ratio_note: None,
        };
        if i == baseline {
            cell.verdict = Verdict::Baseline { why: short[i].clone() };
        } else if let Some(why) = short[i].as_ref().or(short[baseline].as_ref()) {
            // Not tested: what would be compared is not steady enough.
            cell.ratio = match (base, est) {
                (Some(b), Some(e)) if b.mean != 0.0 => Some(e.mean / b.mean),
                _ => None,
            };
            cell.verdict = if short[i].is_some() {
                Verdict::Short { why: why.clone() }
            } else {
                Verdict::BaselineShort { why: why.clone() }
            };
        } else if let (Some(b), Some(e)) = (base, est) {
            cell.ratio = (b.mean != 0.0).then(|| e.mean / b.mean);
            let testable = b.n >= 2.0 && e.n >= 2.0;
            // Both sides the same constant (no errors, no stalls on either): nothing to
            // test, and no test to spend the correction on.
            let same_constant = b.variance == 0.0 && e.variance == 0.0 && b.mean == e.mean;
            if same_constant {
                cell.verdict = Verdict::NoDifference;
            } else if ask.tested.is_some_and(|t| !t.iter().any(|k| k == metric.key)) {
                cell.verdict = Verdict::NotTested;
            } else if testable {
                let logs = by_repeats
                    .then(|| log_ratio(&variants[baseline].1, units, metric.key, &ask))
                    .flatten();
                match logs {
                    Some((r, ci, p)) => {
                        cell.ratio = Some(r);
                        cell.ratio_ci = Some(ci);
                        cell.p = Some(p);
                    }
                    None => {
                        // Values of 0 (no GC pause in a repeat), or a single run's seconds.
                        cell.p = Some(stats::welch_moments((b.mean, b.variance, b.n), (e.mean, e.variance, e.n)).p);
                        cell.ratio_ci = stats::delta_ratio(b, e, LEVEL);
                        if cell.ratio_ci.is_none() {
                            cell.ratio_note = Some(no_interval(&values[baseline], &values[i]));
                        }
                    }
                }
            }
        }
        cells.push(cell);
    }
    Some(Row {
        metric: metric.key.into(),
        label: metric.label.into(),
        unit: metric.unit.into(),
        higher_is_better: metric.higher_is_better,
        cells,
    })
}

/// Why a ratio has no interval: a side with fewer than two values above zero (a count metric
/// such as GC pauses or stalls, zero in most windows).
fn no_interval(base: &[f64], other: &[f64]) -> String {
    let above = |v: &[f64]| v.iter().filter(|v| **v > 0.0).count();
    format!(
        "no interval: too few non-zero values ({} of {} and {} of {})",
        above(base),
        base.len(),
        above(other),
        other.len()
    )
}

/// Benjamini–Hochberg over every test of the measurement: each tested cell's adjusted p.
fn adjust(rows: &mut [Row]) {
    let tested: Vec<(usize, usize, f64)> = rows
        .iter()
        .enumerate()
        .flat_map(|(r, row)| {
            row.cells
                .iter()
                .enumerate()
                .filter_map(move |(c, cell)| cell.p.map(|p| (r, c, p)))
        })
        .collect();
    let adjusted = stats::benjamini_hochberg(&tested.iter().map(|t| t.2).collect::<Vec<_>>());
    for ((r, c, _), p) in tested.iter().zip(adjusted) {
        rows[*r].cells[*c].p_adjusted = Some(p);
    }
}

/// The 95 % interval of a mean whose (t-based) half-width is `half`, on the log scale: every
/// metric compared is a count, rate, time or share, none negative, and latencies are skewed, so
/// the interval is ln(mean) ± half/mean (the delta method) taken back, `[mean/f, mean·f]` with
/// f = e^(half/mean). It never goes below zero, and it is the linear interval when that is
/// narrow. A mean of zero keeps `[0, half]`.
fn positive_interval(mean: f64, half: f64) -> (f64, f64) {
    if mean > 0.0 {
        let f = (half / mean).exp();
        (mean / f, mean * f)
    } else {
        (0.0, mean.max(0.0) + half)
    }
}

/// The quantile `q` of every unit's response histograms merged (None unless every unit's
/// files were read).
fn pooled(q: f64, units: &[Unit]) -> Option<f64> {
    let mut all = new_histogram();
    for u in units {
        all.add(&u.detail.as_ref()?.response).ok()?;
    }
    (!all.is_empty()).then(|| all.value_at_quantile(q) as f64 / 1e6)
}

/// `base_mean` gives the direction when there is no ratio (a baseline of 0: no GC pause in any
/// repeat, say).
fn verdict(cell: &Figure, base_mean: Option<f64>, floor: f64, higher_is_better: bool) -> Verdict {
    let Some(p) = cell.p_adjusted else {
        return Verdict::TooFew;
    };
    let within_floor = |r: f64| (r - 1.0).abs() < floor;
    if let Some((lo, hi)) = cell.ratio_ci
        && within_floor(lo)
        && within_floor(hi)
    {
        return Verdict::Negligible { floor, bounded: true };
    }
    if p >= ALPHA {
        return Verdict::NotSignificant;
    }
    match cell.ratio {
        Some(r) if within_floor(r) => Verdict::Negligible { floor, bounded: false },
        Some(r) => direction((r > 1.0) == higher_is_better),
        None => match (cell.mean, base_mean) {
            (Some(m), Some(b)) if m != b => direction((m > b) == higher_is_better),
            _ => Verdict::Significant,
        },
    }
}

fn direction(better: bool) -> Verdict {
    if better { Verdict::Better } else { Verdict::Worse }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::CapacityResult;
    use crate::experiment::compare::{Observation, Question, Series};
    use crate::metrics::recorder::new_histogram;

    const ONE: [SittingId; 0] = [];

    fn capacity(cap: f64) -> Unit {
        let json = serde_json::json!({
            "caplab_version": "x", "command": [], "status": "completed", "workload": "w",
            "sla": {"objectives": [], "min_rate_share": 0.97, "error_budget": 0.001},
            "mode": "sweep", "precision": null, "warmup_s": 1.0, "measure_s": 1.0, "repeats": 1,
            "fresh_node": false, "probe": null, "steps": [], "rates": [], "capacity": cap,
            "highest_achieved_rate": cap * 1.1, "bracket": null, "stopped_early": null, "cost": null,
            "started_at": "", "elapsed_s": 0.0
        });
        let o = Observation::Capacity(Box::new(serde_json::from_value::<CapacityResult>(json).unwrap()));
        Unit::from_observation(&o, 0, None)
    }

    #[test]
    fn intervals_of_skewed_positive_figures_stay_positive() {
        // Three repeats this far apart: mean 1,133, t-based half-width ~4,000. A symmetric
        // interval would reach -2,900 (what the page once printed for latencies).
        let spread = vec![capacity(100.0), capacity(300.0), capacity(3000.0)];
        let cmp = compare(
            "cap",
            &[("a".into(), spread)],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        let cell = &cmp.rows.iter().find(|r| r.metric == "capacity").unwrap().cells[0];
        let (mean, (lo, hi)) = (cell.mean.unwrap(), cell.ci.unwrap());
        assert!(0.0 < lo && lo < mean && mean < hi, "{cell:?}");
        assert!(hi - mean > mean - lo, "skewed upward: {cell:?}");
        // A narrow interval is the linear one, to first order.
        let (lo, hi) = positive_interval(100.0, 1.0);
        assert!((lo - 99.0).abs() < 0.01 && (hi - 101.0).abs() < 0.01, "{lo} {hi}");
        assert_eq!(positive_interval(0.0, 2.0), (0.0, 2.0));
    }

    #[test]
    fn a_certain_difference_is_significant_and_a_small_one_negligible() {
        let a = vec![capacity(1000.0), capacity(1010.0), capacity(990.0)];
        let b = vec![capacity(2000.0), capacity(2030.0), capacity(1985.0)];
        let c = vec![capacity(1005.0), capacity(1000.0), capacity(1008.0)];
        let cmp = compare(
            "cap",
            &[("a".into(), a.clone()), ("b".into(), b), ("c".into(), c)],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        let row = cmp.rows.iter().find(|r| r.metric == "capacity").unwrap();
        let b = &row.cells[1];
        let (lo, hi) = b.ratio_ci.unwrap();
        assert!(lo < 2.0 && hi > 2.0 && (b.ratio.unwrap() - 2.0).abs() < 0.02, "{b:?}");
        assert_eq!(b.verdict, Verdict::Better);
        assert!(
            matches!(
                row.cells[2].verdict,
                Verdict::Negligible { .. } | Verdict::NotSignificant
            ),
            "{:?}",
            row.cells[2]
        );
        assert_eq!(row.cells[0].verdict, Verdict::Baseline { why: None });
        // Identical variants are never different.
        let aa = compare(
            "cap",
            &[("a".into(), a.clone()), ("a2".into(), a.clone())],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        assert!(aa.rows.iter().all(|r| !r.cells[1].verdict.significant()));
        assert!(cmp.render().contains("×2.0"), "{}", cmp.render());
        // Metrics the experiment does not ask about keep their numbers but get no test.
        let b = vec![capacity(2000.0), capacity(2030.0), capacity(1985.0)];
        let only = compare(
            "cap",
            &[("a".into(), a), ("b".into(), b)],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: Some(&["p99".to_string()]),
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        let cell = &only.rows.iter().find(|r| r.metric == "capacity").unwrap().cells[1];
        assert_eq!((cell.p, &cell.verdict), (None, &Verdict::NotTested));
        assert!(cell.ratio.is_some() && cell.ratio_ci.is_none());
    }

    /// A run's observation with throughput `rate` and a window classed `class` (None: a result
    /// from before verdicts).
    fn run(dir: &str, rate: f64, class: Option<&str>) -> Unit {
        let mut json = run_doc(rate);
        if let Some(c) = class {
            json["steady_state"] = serde_json::json!({"class": c, "steady": c == "flat", "window_s": 30.0,
                "series": [], "summary": format!("{c} over 30 s"), "rule": ""});
        }
        Unit::from_observation(&observation(dir, json), 0, None)
    }

    fn observation(dir: &str, json: serde_json::Value) -> Observation {
        Observation::Run {
            dir: dir.into(),
            result: Box::new(serde_json::from_value(json).unwrap()),
            series: Series::default(),
            response: Box::new(new_histogram()),
        }
    }

    #[test]
    fn a_shaped_run_s_knee_is_a_metric_and_higher_is_better() {
        let knee = metrics().into_iter().find(|m| m.key == "knee").unwrap();
        assert!(knee.higher_is_better);
        let mut json = run_doc(1000.0);
        assert_eq!((knee.of)(&observation("flat", json.clone())), None, "no shape, no knee");
        json["knee"] = serde_json::json!({"percentile": "p99", "factor": 3.0, "base_rate": 1000.0,
            "base_ms": 1.2, "held_rate": 7000.0, "broke_rate": 8000.0, "broke_because": "p99 9 ms"});
        assert_eq!((knee.of)(&observation("ramp", json)), Some(7000.0));
    }

    /// A run's result.json with throughput `rate`.
    fn run_doc(rate: f64) -> serde_json::Value {
        let stat = serde_json::json!({"count": 1, "mean_ms": 1.0, "median_ms": 1.0, "p95_ms": 1.0, "p99_ms": 1.0,
            "p999_ms": 1.0, "max_ms": 1.0});
        serde_json::json!({
            "caplab_version": "x", "format": 2, "status": "completed", "workload": "insert", "started_at": "",
            "command": [],
            "config": {
                "client": {"hosts": [], "dc": null, "consistency": "LocalOne", "connections_per_host": 1,
                    "compression": false, "user": null, "request_timeout": {"secs": 12, "nanos": 0},
                    "connect_timeout": {"secs": 3, "nanos": 0}, "tls": false, "tls_ca": null, "tls_insecure": false,
                    "retries": 0},
                "engine": {"rate": 0.0, "concurrency": 1, "threads": 1, "duration_s": 30.0, "ops": null,
                    "warmup": "auto (max 5m)", "interval_s": 1.0, "loader": "1/1"},
                "workload": {"kind": "insert", "keyspace": "k", "partitions": 1, "value_columns": 1, "value_size": 1,
                    "batch_size": 1, "replication_factor": 1, "durable_writes": false, "compaction": false},
                "sla": null},
            "environment": {"client_host": "h", "cores": 2, "ram_bytes": 1, "kernel": "k",
                "cassandra_release_version": null, "local_nodes": []},
            "schema": [], "statements": [], "files": {"hdr_log": "latency.hlog", "csv": "latency.csv"},
            "summary": {"operation_time_s": 30.0, "per_op": [], "abandoned": 0, "total": {"name": "total",
                "ops": 1, "op_rate": rate, "partitions": 1, "partition_rate": rate, "rows": 1, "row_rate": rate,
                "due": 1, "response": stat, "response_ok": stat, "service": stat, "errors": {}, "error_total": 0,
                "late_ops": 0, "max_lag_ms": 0.0}},
        })
    }

    #[test]
    fn the_primary_questions_are_answered_and_earlier_decisions_kept() {
        use crate::stats::sequential::{Decision, Design};
        let a: Vec<Unit> = [1000.0, 1012.0, 990.0, 1005.0]
            .iter()
            .map(|r| run("a", *r, None))
            .collect();
        let b: Vec<Unit> = [1500.0, 1490.0, 1520.0, 1507.0]
            .iter()
            .map(|r| run("b", *r, None))
            .collect();
        let primary = vec![("throughput".to_string(), 0.05), ("p99".to_string(), 0.10)];
        let design = Design::new(0.05, 2, 3, 12);
        let ask_at = |round, complete, earlier| Ask {
            baseline: 0,
            floor: 0.02,
            tested: None,
            steady_only: true,
            question: Some(Question {
                primary: &primary,
                design,
                round,
                complete,
                priors: &[],
                tau_priors: &[],
            }),
            earlier,
            sittings: &ONE,
            own: &[],
        };
        let ask = |round, earlier| ask_at(round, true, earlier);
        let variants = [("a".to_string(), a), ("b".to_string(), b)];
        let cmp = compare("insert", &variants, ask(4, &[]));
        let t = &cmp.answers[0];
        assert_eq!(
            (t.metric.as_str(), t.decision),
            ("throughput", Decision::Better),
            "{t:?}"
        );
        let (lo, hi) = t.ci.unwrap();
        assert!(lo < 1.5 && 1.5 < hi && (t.ratio.unwrap() - 1.5).abs() < 0.02, "{t:?}");
        // Every p99 the same on both sides: no difference at all, so equivalent within ±10 %.
        assert_eq!(cmp.answers[1].decision, Decision::Equivalent, "{:?}", cmp.answers[1]);
        assert!(
            cmp.render().contains("throughput of b: BETTER ×1.50"),
            "{}",
            cmp.render()
        );
        // Before the first look (round 2 of 3 to 12): open, with no interval yet.
        let early = compare("insert", &variants, ask(2, &[]));
        assert_eq!(early.answers[0].decision, Decision::Open);
        // The table's row carries the answer, and its fixed-sample figures only as such: the
        // one planned look's verdict (kept in the JSON) is no second verdict in the terminal.
        let cell = |c: &Comparison, metric: &str| c.rows.iter().find(|r| r.metric == metric).unwrap().cells[1].clone();
        assert_eq!(cell(&early, "throughput").answer, Some(Decision::Open));
        assert_eq!(cell(&early, "throughput").verdict, Verdict::Better);
        assert_eq!(cell(&early, "p50").answer, None, "p50 is not a primary metric here");
        assert!(
            early.render().contains("answer OPEN; fixed-sample figures"),
            "{}",
            early.render()
        );
        // A decision carried from an earlier round stays as it was.
        let mut kept = cmp.answers.clone();
        kept[0].decision = Decision::Worse;
        let again = compare("insert", &variants, ask(5, &kept));
        assert_eq!(again.answers[0].decision, Decision::Worse);
        // An open answer looked at twice in one round (the comparison made again when the
        // experiment ends) keeps one point of history for that round.
        let mut open = cmp.answers.clone();
        open[0].decision = Decision::Open;
        let twice = compare("insert", &variants, ask(4, &open));
        let rounds: Vec<usize> = twice.answers[0].history.iter().map(|h| h.0).collect();
        assert_eq!(rounds, [4], "{:?}", twice.answers[0]);
        // A round cut short (Ctrl-C) is no look: the open answer stays as the last look left
        // it, though the data would now decide it; with no look before, it is open, and says why.
        let cut = compare("insert", &variants, ask_at(5, false, &open));
        assert_eq!(cut.answers, open);
        let first = compare("insert", &variants, ask_at(4, false, &[]));
        assert_eq!(first.answers[0].decision, Decision::Open);
        assert_eq!(first.answers[0].ratio, None);
        assert_eq!(
            first.answers[0].note.as_deref(),
            Some("not looked at yet: round 4 did not complete (cut short, or the budget ended the rounds)")
        );
    }

    #[test]
    fn runs_that_were_not_steady_are_left_out_and_named() {
        let a = vec![
            run("a1", 1000.0, Some("flat")),
            run("a2", 1010.0, Some("flat")),
            run("a3", 400.0, Some("warmup")),
        ];
        let b = vec![
            run("b1", 2000.0, Some("flat")),
            run("b2", 2020.0, None),
            run("b3", 1990.0, Some("flat")),
        ];
        let cmp = compare(
            "insert",
            &[("a".into(), a.clone()), ("b".into(), b.clone())],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        assert_eq!(
            cmp.repeats,
            vec![2, 3],
            "the warm-up run is out; a result without a verdict stays"
        );
        assert_eq!(cmp.excluded.len(), 1);
        assert_eq!(
            (cmp.excluded[0].variant.as_str(), cmp.excluded[0].dir.as_str()),
            ("a", "a3")
        );
        assert!(
            cmp.render().contains("Left out, not steady (1 run(s)") && cmp.render().contains("a3: warmup over 30 s")
        );
        let t = &cmp.rows.iter().find(|r| r.metric == "throughput").unwrap().cells[1];
        assert!((t.ratio.unwrap() - 2003.3 / 1005.0).abs() < 0.01, "{t:?}");
        assert_eq!(t.verdict, Verdict::Better);
        // Kept in, the warm-up run drags the baseline's mean down.
        let all = compare(
            "insert",
            &[("a".into(), a), ("b".into(), b.clone())],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: false,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        assert_eq!((all.repeats.clone(), all.excluded.len()), (vec![3, 3], 0));
        let t = &all.rows.iter().find(|r| r.metric == "throughput").unwrap().cells[1];
        assert!(t.ratio.unwrap() > 2.4, "{t:?}");
        // One steady repeat of three: reported as too few, not as "not significant".
        let few = vec![
            run("c1", 1000.0, Some("flat")),
            run("c2", 800.0, Some("slowdown")),
            run("c3", 700.0, Some("none")),
        ];
        let cmp = compare(
            "insert",
            &[("b".into(), b), ("c".into(), few)],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        let t = &cmp.rows.iter().find(|r| r.metric == "throughput").unwrap().cells[1];
        assert_eq!(t.verdict.to_string(), "too few steady repeats (1 of 3 steady)", "{t:?}");
        assert_eq!((t.p, t.ratio_ci), (None, None));
        assert_eq!(cmp.excluded.len(), 2);
        // The header names each variant's count and does not claim a weaker test was made.
        let head = cmp.render();
        assert!(
            head.starts_with(
                "insert: baseline b, runs compared: b 3, c 1 (too few steady repeats to test \
                 every variant, steady runs only)"
            ),
            "{head}"
        );
    }

    #[test]
    fn a_difference_from_a_baseline_of_zero_has_a_direction() {
        // No GC pause in any repeat of the baseline, five in every repeat of the variant.
        let zero = vec![capacity(0.0), capacity(0.0), capacity(0.0)];
        let five = vec![capacity(5.0), capacity(5.0), capacity(5.0)];
        let cmp = compare(
            "c",
            &[("a".into(), zero), ("b".into(), five)],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        let c = &cmp.rows.iter().find(|r| r.metric == "capacity").unwrap().cells[1];
        assert_eq!((c.ratio, &c.verdict), (None, &Verdict::Better), "{c:?}");
    }

    #[test]
    fn one_repeat_without_a_series_cannot_be_tested() {
        let cmp = compare(
            "cap",
            &[
                ("a".into(), vec![capacity(1000.0)]),
                ("b".into(), vec![capacity(2000.0)]),
            ],
            Ask {
                baseline: 0,
                floor: 0.02,
                tested: None,
                steady_only: true,
                question: None,
                earlier: &[],
                sittings: &ONE,
                own: &[],
            },
        );
        let row = &cmp.rows[0];
        assert_eq!(row.cells[1].verdict, Verdict::TooFew);
        assert_eq!(row.cells[1].ratio, Some(2.0));
        assert!(cmp.evidence.contains("weaker"));
    }
}
