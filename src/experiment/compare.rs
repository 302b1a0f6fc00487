//! Comparing variants, metric by metric, with statistics that say how sure the difference is.
//!
//! The repeat (a fresh JVM on fresh nodes) is the unit of replication: each metric is taken
//! once per repeat (a percentile is each repeat's own, never an average of percentiles across
//! runs; the pooled percentile of the merged histograms is shown beside it), and variants are
//! compared on those values: the mean with its 95 % t interval, the ratio to the baseline with a
//! bootstrap 95 % interval, Welch's t-test, and Benjamini–Hochberg's correction over every metric
//! and variant of the measurement (the false discovery rate: Holm's family-wise control leaves
//! almost no power at three repeats and ~15 metrics). A difference is *negligible* when it is below the floor (default 2 %)
//! however small its p-value. With one repeat per variant, the per-second values of the measured
//! window stand in, with an effective sample size by batch means (they are not independent):
//! weaker evidence, and said so; metrics without a per-second series cannot be tested then.
//!
//! Only steady runs are compared unless asked otherwise: a run whose measured window was not
//! steady (its verdict warm-up, slowdown or none, or an automatic warm-up that never settled)
//! is left out, named in the comparison, and a variant left with fewer than two steady repeats
//! is reported as such rather than tested. Windows too short to judge are kept. Capacity
//! searches are compared whole (their steps' verdicts are in capacity.json).

use anyhow::Result;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::console::group;
use crate::measure::{CapacityReport, RunResult};
use crate::metrics::hdrlog;
use crate::metrics::recorder::new_histogram;
use crate::stats::{self, Estimate};

const LEVEL: f64 = 0.95;
const ALPHA: f64 = 0.05;

/// A run's per-second values over its measured window.
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub throughput: Vec<f64>,
    pub p50: Vec<f64>,
    pub p99: Vec<f64>,
    pub server_cpu: Vec<f64>,
    pub gc_pause_ms: Vec<f64>,
}

/// What one repeat of a variant measured.
#[derive(Debug, Clone)]
pub enum Observation {
    Run {
        /// Its results directory, as given.
        dir: String,
        result: Box<RunResult>,
        series: Series,
        /// Every operation type's response times, merged.
        response: Box<Histogram<u64>>,
    },
    Capacity(Box<CapacityReport>),
}

/// A run left out of a comparison because its window was not steady.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Excluded {
    pub variant: String,
    pub dir: String,
    /// The verdict's summary (and why warm-up did not settle, if it did not).
    pub why: String,
}

impl Observation {
    /// Reads a step's results directory (a run's or a capacity search's).
    pub fn load(dir: &Path) -> Result<Observation> {
        if dir.join(crate::measure::capacity::CAPACITY_FILE).exists() {
            return Ok(Observation::Capacity(Box::new(CapacityReport::load(dir)?)));
        }
        let result = RunResult::load(dir)?;
        let mut response = new_histogram();
        for (tag, h) in &result.histograms {
            if tag.ends_with(".response") {
                response.add(&h.0).expect("same bounds");
            }
        }
        let series = series(dir, &result).unwrap_or_default();
        Ok(Observation::Run {
            dir: dir.display().to_string(),
            result: Box::new(result),
            series,
            response: Box::new(response),
        })
    }
}

fn series(dir: &Path, r: &RunResult) -> Result<Series> {
    let mut s = Series::default();
    // Per interval: the untagged histogram, then its tags; an interval is known by its start.
    let mut ok_at: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    hdrlog::each(&dir.join(&r.files.hdr_log), |l| {
        let key = l.start.as_millis() as u64;
        let secs = l.length.as_secs_f64();
        if secs < 0.5 {
            return Ok(());
        }
        match l.tag.as_deref() {
            None => {
                s.p50.push(l.histogram.value_at_quantile(0.5) as f64 / 1e6);
                s.p99.push(l.histogram.value_at_quantile(0.99) as f64 / 1e6);
            }
            Some(t) if t.ends_with(".ok") => {
                ok_at.entry(key).or_insert((0.0, secs)).0 += l.histogram.len() as f64;
            }
            _ => {}
        }
        Ok(())
    })?;
    s.throughput = ok_at.values().map(|(n, secs)| n / secs).collect();
    if let Some(server) = &r.server {
        for sec in server.timeline.iter().filter(|s| s.measured && s.length_s >= 0.5) {
            s.server_cpu.push(sec.server_cpu_cores);
            s.gc_pause_ms.push(sec.gc_pause_ms);
        }
    }
    Ok(s)
}

struct Metric {
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    higher_is_better: bool,
    of: fn(&Observation) -> Option<f64>,
    series: Option<fn(&Series) -> &Vec<f64>>,
    /// The pooled value over several repeats (a percentile of the merged histograms).
    pooled: Option<f64>,
}

fn run(o: &Observation) -> Option<&RunResult> {
    match o {
        Observation::Run { result, .. } => Some(result),
        Observation::Capacity(_) => None,
    }
}

fn total(o: &Observation) -> Option<&crate::metrics::summary::OpSummary> {
    run(o).and_then(|r| r.summary.as_ref()).map(|s| &s.total)
}

fn server(o: &Observation) -> Option<&crate::telemetry::ServerReport> {
    run(o)
        .and_then(|r| r.server.as_ref())
        .filter(|s| s.not_collected.is_none())
}

fn per_op_us(seconds: f64, o: &Observation) -> Option<f64> {
    let ops = total(o)?.ops;
    (ops > 0).then(|| seconds * 1e6 / ops as f64)
}

/// A metric of the table, before any observation is pooled.
fn m(
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    higher_is_better: bool,
    of: fn(&Observation) -> Option<f64>,
    series: Option<fn(&Series) -> &Vec<f64>>,
) -> Metric {
    Metric {
        key,
        label,
        unit,
        higher_is_better,
        of,
        series,
        pooled: None,
    }
}

/// Every metric compared, in the order of the table: the client's, then the server's.
fn metrics() -> Vec<Metric> {
    let mut all = client_metrics();
    all.extend(server_metrics());
    all
}

/// What the client measured: capacity, throughput, latency, errors.
fn client_metrics() -> Vec<Metric> {
    vec![
        m(
            "capacity",
            "capacity",
            "op/s",
            true,
            |o| match o {
                Observation::Capacity(c) => c.capacity,
                _ => None,
            },
            None,
        ),
        m(
            "highest_rate",
            "highest throughput",
            "op/s",
            true,
            |o| match o {
                Observation::Capacity(c) => Some(c.highest_achieved_rate),
                _ => None,
            },
            None,
        ),
        m(
            "throughput",
            "throughput",
            "op/s",
            true,
            |o| total(o).map(|t| t.op_rate),
            Some(|s| &s.throughput),
        ),
        m(
            "row_rate",
            "rows",
            "row/s",
            true,
            |o| total(o).map(|t| t.row_rate),
            None,
        ),
        m(
            "p50",
            "response p50",
            "ms",
            false,
            |o| total(o).map(|t| t.response.median_ms),
            Some(|s| &s.p50),
        ),
        m(
            "p99",
            "response p99",
            "ms",
            false,
            |o| total(o).map(|t| t.response.p99_ms),
            Some(|s| &s.p99),
        ),
        m(
            "p999",
            "response p99.9",
            "ms",
            false,
            |o| total(o).map(|t| t.response.p999_ms),
            None,
        ),
        m(
            "max",
            "response max",
            "ms",
            false,
            |o| total(o).map(|t| t.response.max_ms),
            None,
        ),
        m(
            "service_p99",
            "service p99",
            "ms",
            false,
            |o| total(o).map(|t| t.service.p99_ms),
            None,
        ),
        m(
            "errors",
            "errors",
            "",
            false,
            |o| total(o).map(|t| t.error_total as f64),
            None,
        ),
        m(
            "availability",
            "availability (with faults)",
            "%",
            true,
            |o| run(o).and_then(|r| r.availability).map(|a| a * 100.0),
            None,
        ),
        m(
            "recovery",
            "recovery after faults (longest)",
            "s",
            false,
            |o| run(o).and_then(RunResult::longest_recovery),
            None,
        ),
    ]
}

/// What the server's telemetry measured: CPU, GC, flushes.
fn server_metrics() -> Vec<Metric> {
    vec![
        m(
            "server_cpu_us_per_op",
            "server CPU per op",
            "µs",
            false,
            |o| {
                let s = server(o)?;
                per_op_us(s.nodes.iter().map(|n| n.cpu_seconds).sum(), o)
            },
            None,
        ),
        m(
            "server_cpu",
            "server CPU",
            "cores",
            false,
            |o| server(o).map(|s| s.server_cpu_cores),
            Some(|s| &s.server_cpu),
        ),
        m(
            "client_cpu",
            "client CPU",
            "cores",
            false,
            |o| server(o).map(|s| s.client_cpu_cores),
            None,
        ),
        m(
            "gc_count",
            "GC pauses",
            "",
            false,
            |o| server(o).map(|s| s.gc_count as f64),
            None,
        ),
        m(
            "gc_total_ms",
            "GC pause total",
            "ms",
            false,
            |o| server(o).map(|s| s.gc_total_ms),
            Some(|s| &s.gc_pause_ms),
        ),
        m(
            "gc_max_ms",
            "GC max pause",
            "ms",
            false,
            |o| server(o).map(|s| s.gc_max_ms),
            None,
        ),
        m(
            "allocation_stalls",
            "allocation stalls",
            "",
            false,
            |o| server(o).map(|s| s.allocation_stalls as f64),
            None,
        ),
        m(
            "flush_cpu_us_per_flushed_op",
            "flush CPU per flushed op",
            "µs",
            false,
            |o| server(o)?.flush_cpu_us_per_flushed_op(),
            None,
        ),
    ]
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

/// One variant's figure for one metric.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figure {
    pub variant: String,
    /// Values behind it: repeats, or the effective number of per-second values.
    pub n: f64,
    pub mean: Option<f64>,
    /// 95 % interval of the mean.
    pub ci: Option<(f64, f64)>,
    /// The percentile of every repeat's histograms merged (percentile metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<f64>,
    /// mean / the baseline's mean, and its 95 % interval.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<(f64, f64)>,
    /// Welch's test against the baseline, and the p-value after Benjamini–Hochberg's correction.
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub metric: String,
    pub label: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub cells: Vec<Figure>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub measurement: String,
    pub baseline: String,
    pub floor: f64,
    /// `repeats`, `per-second series (one repeat: weaker evidence)`, or that a variant has too
    /// few steady repeats to be tested.
    pub evidence: String,
    /// Repeats compared per variant (steady ones, unless unsteady ones were included).
    pub repeats: Vec<usize>,
    /// Whether runs whose window was not steady were left out (the default).
    #[serde(default)]
    pub steady_only: bool,
    /// The runs left out, and why.
    #[serde(default)]
    pub excluded: Vec<Excluded>,
    pub rows: Vec<Row>,
}

/// The keys of the metrics a comparison can hold (an experiment's `metrics` names some).
pub fn metric_keys() -> Vec<&'static str> {
    metrics().iter().map(|m| m.key).collect()
}

/// Compares the variants of one measurement. With `tested`, only those metrics get a test
/// (and share the correction); the others keep their means and intervals, marked untested.
/// With `steady_only`, runs whose window was not steady are left out first.
pub fn compare(
    measurement: &str,
    variants: &[(String, Vec<Observation>)],
    baseline: usize,
    floor: f64,
    tested: Option<&[String]>,
    steady_only: bool,
) -> Comparison {
    let mut excluded = Vec::new();
    let mut kept: Vec<(String, Vec<Observation>)> = Vec::new();
    // Per variant: why it cannot be tested (too few steady repeats), if so.
    let mut short: Vec<Option<String>> = Vec::new();
    for (name, obs) in variants {
        let (keep, out): (Vec<Observation>, Vec<Observation>) =
            obs.iter().cloned().partition(|o| !steady_only || !unsteady(o));
        for o in &out {
            if let Observation::Run { dir, result, .. } = o {
                excluded.push(Excluded {
                    variant: name.clone(),
                    dir: dir.clone(),
                    why: result
                        .steady_state
                        .as_ref()
                        .map_or_else(String::new, |s| s.summary.clone()),
                });
            }
        }
        short.push(
            (!out.is_empty() && keep.len() < 2)
                .then(|| format!("too few steady repeats ({} of {} steady)", keep.len(), obs.len())),
        );
        kept.push((name.clone(), keep));
    }
    let variants = &kept[..];
    let repeats: Vec<usize> = variants.iter().map(|(_, o)| o.len()).collect();
    let by_repeats = repeats.iter().all(|&n| n >= 2);
    let mut rows = Vec::new();
    for mut metric in metrics() {
        let values: Vec<Vec<f64>> = variants
            .iter()
            .map(|(_, obs)| obs.iter().filter_map(|o| (metric.of)(o)).collect())
            .collect();
        if values.iter().all(|v| v.is_empty()) {
            continue;
        }
        let estimates: Vec<Option<Estimate>> = variants
            .iter()
            .zip(&values)
            .map(|((_, obs), v)| match (by_repeats, metric.series, obs.as_slice()) {
                (false, Some(series), [Observation::Run { series: s, .. }]) if series(s).len() >= 4 => {
                    let x = series(s);
                    Some(Estimate::from_moments(
                        stats::mean(x),
                        stats::variance(x),
                        stats::effective_n(x),
                        LEVEL,
                    ))
                }
                _ if v.is_empty() => None,
                _ => Some(Estimate::of(v, LEVEL)),
            })
            .collect();
        let base = &estimates[baseline];
        let mut cells = Vec::new();
        for (i, ((name, obs), est)) in variants.iter().zip(&estimates).enumerate() {
            metric.pooled = pooled(metric.key, obs);
            let mut cell = Figure {
                variant: name.clone(),
                n: est.map_or(0.0, |e| e.n),
                mean: est.map(|e| e.mean),
                ci: est
                    .filter(|e| e.half_width.is_finite())
                    .map(|e| positive_interval(e.mean, e.half_width)),
                pooled: metric.pooled.filter(|_| obs.len() > 1),
                ratio: None,
                ratio_ci: None,
                p: None,
                p_adjusted: None,
                verdict: String::new(),
            };
            if i == baseline {
                cell.verdict = short[i]
                    .as_ref()
                    .map_or_else(|| "baseline".into(), |why| format!("baseline: {why}"));
            } else if let Some(why) = short[i].as_ref().or(short[baseline].as_ref()) {
                // Not tested: what would be compared is not steady enough.
                cell.ratio = match (base, est) {
                    (Some(b), Some(e)) if b.mean != 0.0 => Some(e.mean / b.mean),
                    _ => None,
                };
                cell.verdict = if short[i].is_some() {
                    why.clone()
                } else {
                    format!("baseline has {why}")
                };
            } else if let (Some(b), Some(e)) = (base, est) {
                cell.ratio = (b.mean != 0.0).then(|| e.mean / b.mean);
                let testable = b.n >= 2.0 && e.n >= 2.0;
                // Both sides the same constant (no errors, no stalls on either): nothing to
                // test, and no test to spend the correction on.
                let same_constant = b.variance == 0.0 && e.variance == 0.0 && b.mean == e.mean;
                if same_constant {
                    cell.verdict = "no difference (every value the same)".into();
                } else if tested.is_some_and(|t| !t.iter().any(|k| k == metric.key)) {
                    cell.verdict = "not tested (not in the experiment's metrics)".into();
                } else if testable {
                    cell.p = Some(stats::welch_moments((b.mean, b.variance, b.n), (e.mean, e.variance, e.n)).p);
                    cell.ratio_ci = if by_repeats {
                        stats::bootstrap_ratio(&values[baseline], &values[i], LEVEL, 10_000, 0x5eed ^ i as u64)
                    } else {
                        stats::delta_ratio(b, e, LEVEL)
                    };
                }
            }
            cells.push(cell);
        }
        rows.push(Row {
            metric: metric.key.into(),
            label: metric.label.into(),
            unit: metric.unit.into(),
            higher_is_better: metric.higher_is_better,
            cells,
        });
    }
    // Benjamini–Hochberg over every test of this measurement.
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
    for row in &mut rows {
        let better_up = row.higher_is_better;
        let base_mean = row.cells[baseline].mean;
        for cell in row.cells.iter_mut().filter(|c| c.verdict.is_empty()) {
            cell.verdict = verdict(cell, base_mean, floor, better_up);
        }
    }
    Comparison {
        measurement: measurement.to_string(),
        baseline: variants[baseline].0.clone(),
        floor,
        evidence: if short.iter().any(Option::is_some) {
            "too few steady repeats to test every variant".into()
        } else if by_repeats {
            "repeats".into()
        } else {
            "per-second series of single runs (weaker evidence: one JVM each)".into()
        },
        repeats,
        steady_only,
        excluded,
        rows,
    }
}

/// Whether a run is known not to have been steady (capacity searches are compared whole).
fn unsteady(o: &Observation) -> bool {
    match o {
        Observation::Run { result, .. } => result.unsteady(),
        Observation::Capacity(_) => false,
    }
}

fn pooled(metric: &str, obs: &[Observation]) -> Option<f64> {
    let q = match metric {
        "p50" => 0.5,
        "p99" => 0.99,
        "p999" => 0.999,
        _ => return None,
    };
    let mut all = new_histogram();
    for o in obs {
        if let Observation::Run { response, .. } = o {
            all.add(&**response).ok()?;
        }
    }
    (!all.is_empty()).then(|| all.value_at_quantile(q) as f64 / 1e6)
}

/// `base_mean` gives the direction when there is no ratio (a baseline of 0: no GC pause in any
/// repeat, say).
fn verdict(cell: &Figure, base_mean: Option<f64>, floor: f64, higher_is_better: bool) -> String {
    let Some(p) = cell.p_adjusted else {
        return "too few repeats to test".into();
    };
    let within_floor = |r: f64| (r - 1.0).abs() < floor;
    if let Some((lo, hi)) = cell.ratio_ci
        && within_floor(lo)
        && within_floor(hi)
    {
        return format!("negligible (within ±{:.0}%)", floor * 100.0);
    }
    if p >= ALPHA {
        return "not significant".into();
    }
    match cell.ratio {
        Some(r) if within_floor(r) => format!("negligible (< {:.0}%)", floor * 100.0),
        Some(r) => {
            let better = (r > 1.0) == higher_is_better;
            format!("significant, {}", if better { "better" } else { "worse" })
        }
        None => match (cell.mean, base_mean) {
            (Some(m), Some(b)) if m != b => {
                let better = (m > b) == higher_is_better;
                format!("significant, {}", if better { "better" } else { "worse" })
            }
            _ => "significant".into(),
        },
    }
}

fn number(v: f64) -> String {
    if v.abs() >= 1_000.0 {
        group(v)
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

impl Comparison {
    /// The table for the terminal.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{}: baseline {}, runs compared: {} ({}{}), floor {:.0}%\n",
            self.measurement,
            self.baseline,
            self.rows.first().map_or_else(String::new, |r| r
                .cells
                .iter()
                .zip(&self.repeats)
                .map(|(c, n)| format!("{} {n}", c.variant))
                .collect::<Vec<_>>()
                .join(", ")),
            self.evidence,
            if self.steady_only {
                ", steady runs only"
            } else {
                ", steady or not"
            },
            self.floor * 100.0
        );
        if !self.excluded.is_empty() {
            s.push_str(&format!(
                "Left out, not steady ({} run(s); --include-unsteady keeps them):\n",
                self.excluded.len()
            ));
            for e in &self.excluded {
                s.push_str(&format!("  {} {}: {}\n", e.variant, e.dir, e.why));
            }
        }
        s.push_str(&format!(
            "{:<22} {:<14} {:>24} {:>22}  {}\n",
            "metric", "variant", "mean [95% CI]", "ratio [95% CI]", "verdict (adjusted p)"
        ));
        for row in &self.rows {
            let label = if row.unit.is_empty() {
                row.label.clone()
            } else {
                format!("{} ({})", row.label, row.unit)
            };
            for (i, c) in row.cells.iter().enumerate() {
                let mean = match (c.mean, c.ci) {
                    (Some(m), Some((lo, hi))) => format!("{} [{}–{}]", number(m), number(lo), number(hi)),
                    (Some(m), None) => number(m),
                    _ => "-".into(),
                };
                let ratio = match (c.ratio, c.ratio_ci) {
                    (Some(r), Some((lo, hi))) => format!("×{r:.3} [{lo:.3}–{hi:.3}]"),
                    (Some(r), None) => format!("×{r:.3}"),
                    _ => String::new(),
                };
                let p = c.p_adjusted.map(|p| format!(" (p {p:.3})")).unwrap_or_default();
                let pooled = c.pooled.map(|v| format!("; pooled {}", number(v))).unwrap_or_default();
                s.push_str(&format!(
                    "{:<22} {:<14} {:>24} {:>22}  {}{p}{pooled}\n",
                    if i == 0 { label.as_str() } else { "" },
                    c.variant,
                    mean,
                    ratio,
                    c.verdict
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::capacity::CapacityReport;

    fn capacity(cap: f64) -> Observation {
        let json = serde_json::json!({
            "caplab_version": "x", "command": [], "status": "completed", "workload": "w",
            "sla": {"objectives": [], "min_rate_share": 0.97, "error_budget": 0.001},
            "mode": "sweep", "precision": null, "warmup_s": 1.0, "measure_s": 1.0, "repeats": 1,
            "fresh_node": false, "probe": null, "steps": [], "rates": [], "capacity": cap,
            "highest_achieved_rate": cap * 1.1, "bracket": null, "stopped_early": null, "cost": null,
            "started_at": "", "elapsed_s": 0.0
        });
        Observation::Capacity(Box::new(serde_json::from_value::<CapacityReport>(json).unwrap()))
    }

    #[test]
    fn intervals_of_skewed_positive_figures_stay_positive() {
        // Three repeats this far apart: mean 1,133, t-based half-width ~4,000. A symmetric
        // interval would reach -2,900 (what the page once printed for latencies).
        let spread = vec![capacity(100.0), capacity(300.0), capacity(3000.0)];
        let cmp = compare("cap", &[("a".into(), spread)], 0, 0.02, None, true);
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
            0,
            0.02,
            None,
            true,
        );
        let row = cmp.rows.iter().find(|r| r.metric == "capacity").unwrap();
        let b = &row.cells[1];
        let (lo, hi) = b.ratio_ci.unwrap();
        assert!(lo < 2.0 && hi > 2.0 && (b.ratio.unwrap() - 2.0).abs() < 0.02, "{b:?}");
        assert_eq!(b.verdict, "significant, better");
        assert!(
            row.cells[2].verdict.starts_with("negligible") || row.cells[2].verdict == "not significant",
            "{:?}",
            row.cells[2]
        );
        assert_eq!(row.cells[0].verdict, "baseline");
        // Identical variants are never different.
        let aa = compare(
            "cap",
            &[("a".into(), a.clone()), ("a2".into(), a.clone())],
            0,
            0.02,
            None,
            true,
        );
        assert!(aa.rows.iter().all(|r| !r.cells[1].verdict.starts_with("significant")));
        assert!(cmp.render().contains("×2.0"), "{}", cmp.render());
        // Metrics the experiment does not ask about keep their numbers but get no test.
        let b = vec![capacity(2000.0), capacity(2030.0), capacity(1985.0)];
        let only = compare(
            "cap",
            &[("a".into(), a), ("b".into(), b)],
            0,
            0.02,
            Some(&["p99".to_string()]),
            true,
        );
        let cell = &only.rows.iter().find(|r| r.metric == "capacity").unwrap().cells[1];
        assert_eq!(
            (cell.p, cell.verdict.as_str()),
            (None, "not tested (not in the experiment's metrics)")
        );
        assert!(cell.ratio.is_some() && cell.ratio_ci.is_none());
    }

    /// A run's observation with throughput `rate` and a window classed `class` (None: a result
    /// from before verdicts).
    fn run(dir: &str, rate: f64, class: Option<&str>) -> Observation {
        let stat = serde_json::json!({"count": 1, "mean_ms": 1.0, "median_ms": 1.0, "p95_ms": 1.0, "p99_ms": 1.0,
            "p999_ms": 1.0, "max_ms": 1.0});
        let mut json = serde_json::json!({
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
        });
        if let Some(c) = class {
            json["steady_state"] = serde_json::json!({"class": c, "steady": c == "flat", "window_s": 30.0,
                "series": [], "summary": format!("{c} over 30 s"), "rule": ""});
        }
        Observation::Run {
            dir: dir.into(),
            result: Box::new(serde_json::from_value(json).unwrap()),
            series: Series::default(),
            response: Box::new(new_histogram()),
        }
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
            0,
            0.02,
            None,
            true,
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
        assert_eq!(t.verdict, "significant, better");
        // Kept in, the warm-up run drags the baseline's mean down.
        let all = compare(
            "insert",
            &[("a".into(), a), ("b".into(), b.clone())],
            0,
            0.02,
            None,
            false,
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
        let cmp = compare("insert", &[("b".into(), b), ("c".into(), few)], 0, 0.02, None, true);
        let t = &cmp.rows.iter().find(|r| r.metric == "throughput").unwrap().cells[1];
        assert_eq!(t.verdict, "too few steady repeats (1 of 3 steady)", "{t:?}");
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
        let cmp = compare("c", &[("a".into(), zero), ("b".into(), five)], 0, 0.02, None, true);
        let c = &cmp.rows.iter().find(|r| r.metric == "capacity").unwrap().cells[1];
        assert_eq!((c.ratio, c.verdict.as_str()), (None, "significant, better"), "{c:?}");
    }

    #[test]
    fn one_repeat_without_a_series_cannot_be_tested() {
        let cmp = compare(
            "cap",
            &[
                ("a".into(), vec![capacity(1000.0)]),
                ("b".into(), vec![capacity(2000.0)]),
            ],
            0,
            0.02,
            None,
            true,
        );
        let row = &cmp.rows[0];
        assert_eq!(row.cells[1].verdict, "too few repeats to test");
        assert_eq!(row.cells[1].ratio, Some(2.0));
        assert!(cmp.evidence.contains("weaker"));
    }
}
