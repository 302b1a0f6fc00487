//! The steady-state verdict of a measured window, from its per-second throughput, p50 and p99:
//! changepoints in each series' mean (PELT), the segments between them, and a class in the
//! manner of Barrett et al. ("Virtual Machine Warmup Blows Hot and Cold", OOPSLA 2017):
//!
//! - **flat**: one level, or levels that recur (a server that alternates between phases, as a
//!   GC-bound one does, has no trend: its mean is a fair figure);
//! - **warmup**: the window starts worse than everything after it, or ends better than
//!   everything before it (it was still getting faster);
//! - **slowdown**: the reverse (it started better, or ends worse, than the rest);
//! - **none**: no steady state: it ends at a new level it had not settled at, or the series
//!   disagree (one warms up while another slows down).
//!
//! Spikes are not changepoints: a value more than 3σ from the running median of five is
//! replaced by that median first, so a GC pause every few seconds leaves a flat series flat.
//! Levels closer than a tolerance (5 % of the median for throughput, 10 % for p50, 20 % for
//! p99, and never less than 0.05 ms for p50 or 0.25 ms for p99) are the same level: a p50 that
//! moves from 0.30 to 0.33 ms at a light fixed rate is scheduling noise on a shared machine, not
//! a slowdown a user would act on (Barrett et al. ignore changes under an absolute delta too).

use serde::{Deserialize, Serialize};

use super::pelt::{self, median};
use crate::console::group;

/// The shortest segment, seconds: shorter excursions are noise, not levels.
pub const MIN_SEGMENT: usize = 5;
/// Windows shorter than this (two segments) are not judged.
pub const MIN_WINDOW: usize = 2 * MIN_SEGMENT;
/// The penalty per changepoint, in units of σ²·ln n (3: the modified BIC of Zhang & Siegmund,
/// which R's changepoint package uses by default).
pub const PENALTY: f64 = 3.0;
/// Values further than this many σ from the running median of five are spikes.
pub const SPIKE_SIGMAS: f64 = 3.0;
/// A new level at the end of a window shorter than this share of it has not settled.
pub const SETTLED_SHARE: f64 = 0.2;
/// Two levels differ only when their means are further apart than this many long-run standard
/// errors (the window's own noise, autocorrelation included).
pub const NOISE_Z: f64 = 0.0;
/// Seconds per batch for the long-run noise.
pub const NOISE_BATCH: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Flat,
    Warmup,
    Slowdown,
    None,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Flat => "flat",
            Class::Warmup => "warm-up",
            Class::Slowdown => "slowdown",
            Class::None => "no steady state",
        }
    }
}

/// One per-second series to judge: its name, unit, which way is better, and how far apart two
/// levels must be to differ: `tolerance` of the series' median, and at least `floor` (in `unit`).
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub tolerance: f64,
    pub floor: f64,
}

pub const THROUGHPUT: Metric = Metric {
    name: "throughput",
    unit: "op/s",
    higher_is_better: true,
    tolerance: 0.05,
    floor: 0.0,
};
pub const P50: Metric = Metric {
    name: "p50",
    unit: "ms",
    higher_is_better: false,
    tolerance: 0.10,
    floor: 0.05,
};
pub const P99: Metric = Metric {
    name: "p99",
    unit: "ms",
    higher_is_better: false,
    tolerance: 0.20,
    floor: 0.25,
};

/// One second of a measured window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    /// Its start, seconds after the window's start.
    pub at_s: f64,
    pub ops_per_s: f64,
    /// Response time percentiles of the operations due in it (None when there were none).
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Seconds after the window's start.
    pub from_s: f64,
    pub to_s: f64,
    pub mean: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesVerdict {
    pub metric: String,
    pub unit: String,
    pub class: Class,
    /// Where each segment after the first begins, seconds after the window's start.
    pub changepoints_s: Vec<f64>,
    pub segments: Vec<Segment>,
    /// The noise σ the penalty was scaled by.
    pub sigma: f64,
    /// From the first level to the last, as a share of the first, and the half-width of its
    /// 95 % interval (None for one level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<(f64, f64)>,
    pub why: String,
}

/// `steady_state` in result.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// None when the window was too short to judge.
    pub class: Option<Class>,
    /// Whether the window is steady: flat (or too short to say otherwise).
    pub steady: bool,
    pub window_s: f64,
    pub series: Vec<SeriesVerdict>,
    /// One line for people.
    pub summary: String,
    pub rule: String,
}

impl SteadyState {
    /// The summary line.
    pub fn render(&self) -> String {
        format!("Steady state                  : {}", self.summary)
    }
}

pub fn rule() -> String {
    format!(
        "PELT changepoints in the mean of per-second throughput, p50 and p99 (values >{SPIKE_SIGMAS}σ from the running \
         median of 5 replaced by it; σ from successive differences), penalty {PENALTY}σ²·ln n, segments ≥{MIN_SEGMENT} s; \
         levels within {:.0} % (throughput), {:.0} % or {} ms (p50), {:.0} % or {} ms (p99) of the median are one level. \
         flat: one level \
         or recurring levels; warmup: starts below or ends above all else; slowdown: the reverse; none: a new level \
         in the last {:.0} % of the window, or series that disagree. Windows under {MIN_WINDOW} s are not judged.",
        THROUGHPUT.tolerance * 100.0,
        P50.tolerance * 100.0,
        P50.floor,
        P99.tolerance * 100.0,
        P99.floor,
        SETTLED_SHARE * 100.0
    )
}

/// Judges a measured window from its seconds.
pub fn judge(seconds: &[Second]) -> SteadyState {
    let window_s = seconds.len() as f64;
    let series: Vec<SeriesVerdict> = [
        (
            THROUGHPUT,
            seconds.iter().map(|s| (s.at_s, Some(s.ops_per_s))).collect::<Vec<_>>(),
        ),
        (P50, seconds.iter().map(|s| (s.at_s, s.p50_ms)).collect()),
        (P99, seconds.iter().map(|s| (s.at_s, s.p99_ms)).collect()),
    ]
    .into_iter()
    .filter_map(|(m, points)| {
        let (at, values): (Vec<f64>, Vec<f64>) = points
            .into_iter()
            .filter_map(|(t, v)| v.filter(|v| v.is_finite()).map(|v| (t, v)))
            .unzip();
        judge_series(m, &at, &values)
    })
    .collect();
    if series.is_empty() {
        return SteadyState {
            class: None,
            steady: true,
            window_s,
            series,
            summary: format!("not judged: {window_s:.0} s measured, at least {MIN_WINDOW} s are needed"),
            rule: rule(),
        };
    }
    let classes: Vec<Class> = series.iter().map(|s| s.class).collect();
    let has = |c| classes.contains(&c);
    let class = if has(Class::None) || (has(Class::Warmup) && has(Class::Slowdown)) {
        Class::None
    } else if has(Class::Warmup) {
        Class::Warmup
    } else if has(Class::Slowdown) {
        Class::Slowdown
    } else {
        Class::Flat
    };
    let notes: Vec<String> = series
        .iter()
        .filter(|s| s.class != Class::Flat || class == Class::Flat)
        .map(|s| s.why.clone())
        .collect();
    let summary = match class {
        Class::Flat => format!("flat over {window_s:.0} s ({})", notes.join("; ")),
        c => format!("{} over {window_s:.0} s: {}", c.name().to_uppercase(), notes.join("; ")),
    };
    SteadyState {
        class: Some(class),
        steady: class == Class::Flat,
        window_s,
        series,
        summary,
        rule: rule(),
    }
}

/// The verdict of one series (values at the given times); None when too short to judge.
pub fn judge_series(m: Metric, at: &[f64], x: &[f64]) -> Option<SeriesVerdict> {
    judge_series_z(m, at, x, NOISE_Z)
}

/// The long-run standard deviation of `x`: what its mean over a stretch of seconds varies by,
/// autocorrelation (phases, a GC cycle) included, per √second: batch means of `NOISE_BATCH`
/// seconds, their variance times the batch length. Falls back to `sigma` (independent
/// seconds) when fewer than three batches fit.
fn long_run_sigma(x: &[f64], sigma: f64) -> f64 {
    let batches: Vec<f64> = x
        .chunks_exact(NOISE_BATCH)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    if batches.len() < 3 {
        return sigma;
    }
    let m = batches.iter().sum::<f64>() / batches.len() as f64;
    let var = batches.iter().map(|b| (b - m).powi(2)).sum::<f64>() / (batches.len() - 1) as f64;
    (var * NOISE_BATCH as f64).sqrt().max(sigma)
}

/// `judge_series` with the noise bound's z (0: levels differ by the tolerance alone).
pub fn judge_series_z(m: Metric, at: &[f64], x: &[f64], z: f64) -> Option<SeriesVerdict> {
    let n = x.len();
    if n < MIN_WINDOW {
        return None;
    }
    let sigma = pelt::noise_sigma(x);
    let cleaned = despike(x, sigma);
    let level = median(&cleaned).abs().max(f64::MIN_POSITIVE);
    let penalty = (PENALTY * sigma * sigma * (n as f64).ln()).max((level * 1e-9).powi(2));
    let mut bounds = vec![0];
    bounds.extend(pelt::changepoints(&cleaned, penalty, MIN_SEGMENT));
    bounds.push(n);
    let mean = |a: usize, b: usize| cleaned[a..b].iter().sum::<f64>() / (b - a) as f64;
    // (start, end, mean) in indices.
    let mut segs: Vec<(usize, usize, f64)> = bounds.windows(2).map(|w| (w[0], w[1], mean(w[0], w[1]))).collect();
    // Neighbours closer than the tolerance, or than the window's own noise can move two means
    // of their lengths apart, are one level: merged, the least distinct first.
    let tol = (m.tolerance * level).max(m.floor);
    // The noise around the levels PELT found (so a real change does not inflate it).
    let residuals: Vec<f64> = segs
        .iter()
        .flat_map(|&(a, b, m)| cleaned[a..b].iter().map(move |v| v - m))
        .collect();
    let noise = z * long_run_sigma(&residuals, sigma);
    let distinct = |a: &(usize, usize, f64), b: &(usize, usize, f64)| {
        let d = (a.2 - b.2).abs();
        let bound = noise * (1.0 / (a.1 - a.0) as f64 + 1.0 / (b.1 - b.0) as f64).sqrt();
        (d / tol).min(if bound > 0.0 { d / bound } else { f64::INFINITY })
    };
    while segs.len() > 1 {
        let (i, d) = segs
            .windows(2)
            .map(|w| distinct(&w[0], &w[1]))
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("two segments or more");
        if d >= 1.0 {
            break;
        }
        let (a, b) = (segs[i].0, segs[i + 1].1);
        segs[i] = (a, b, mean(a, b));
        segs.remove(i + 1);
    }
    let better = |a: f64, b: f64| {
        if m.higher_is_better { a - b > tol } else { b - a > tol }
    };
    let (first, last) = (segs[0], segs[segs.len() - 1]);
    let (earlier, later) = (&segs[..segs.len() - 1], &segs[1..]);
    let class = if segs.len() == 1 {
        Class::Flat
    } else {
        let warm = later.iter().all(|s| better(s.2, first.2)) || earlier.iter().all(|s| better(last.2, s.2));
        let slow = later.iter().all(|s| better(first.2, s.2)) || earlier.iter().all(|s| better(s.2, last.2));
        let new_at_end = earlier.iter().all(|s| (s.2 - last.2).abs() >= tol)
            && ((last.1 - last.0) as f64) < SETTLED_SHARE * n as f64;
        match (warm, slow) {
            (true, false) => Class::Warmup,
            (false, true) => Class::Slowdown,
            (true, true) => Class::None,
            (false, false) if new_at_end => Class::None,
            (false, false) => Class::Flat,
        }
    };
    let time = |i: usize| if i < at.len() { at[i] } else { at[n - 1] + 1.0 };
    let segments: Vec<Segment> = segs
        .iter()
        .map(|&(a, b, mean)| Segment {
            from_s: time(a),
            to_s: time(b),
            mean,
        })
        .collect();
    let changepoints_s: Vec<f64> = segments.iter().skip(1).map(|s| s.from_s).collect();
    // The change from the first level to the last, as a share of the first, and the half-width
    // of its 95 % interval from the noise around the levels (autocorrelation included).
    let change = (segs.len() > 1 && first.2 != 0.0).then(|| {
        let residuals: Vec<f64> = segs
            .iter()
            .flat_map(|&(a, b, m)| cleaned[a..b].iter().map(move |v| v - m))
            .collect();
        let se = long_run_sigma(&residuals, sigma)
            * (1.0 / (first.1 - first.0) as f64 + 1.0 / (last.1 - last.0) as f64).sqrt();
        ((last.2 - first.2) / first.2.abs(), 1.96 * se / first.2.abs())
    });
    let why = describe(m, class, &segments, change);
    Some(SeriesVerdict {
        metric: m.name.into(),
        unit: m.unit.into(),
        class,
        changepoints_s,
        segments,
        sigma,
        change,
        why,
    })
}

/// Values further than `SPIKE_SIGMAS`·σ from the running median of five replaced by it.
fn despike(x: &[f64], sigma: f64) -> Vec<f64> {
    if sigma <= 0.0 {
        return x.to_vec();
    }
    (0..x.len())
        .map(|i| {
            let m = median(&x[i.saturating_sub(2)..(i + 3).min(x.len())]);
            if (x[i] - m).abs() > SPIKE_SIGMAS * sigma {
                m
            } else {
                x[i]
            }
        })
        .collect()
}

fn value(v: f64, unit: &str) -> String {
    if unit == "op/s" {
        format!("{} op/s", group(v))
    } else {
        format!("{v:.2} ms")
    }
}

fn describe(m: Metric, class: Class, segs: &[Segment], change: Option<(f64, f64)>) -> String {
    let size = change
        .map(|(c, h)| format!(", {:+.1} % [{:+.1}, {:+.1}]", c * 100.0, (c - h) * 100.0, (c + h) * 100.0))
        .unwrap_or_default();
    let first = &segs[0];
    let last = &segs[segs.len() - 1];
    let at = |s: &[Segment]| {
        s.iter()
            .skip(1)
            .map(|g| format!("{:.0}", g.from_s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cps = if segs.len() == 2 {
        format!("changepoint at {} s", at(segs))
    } else {
        format!("changepoints at {} s", at(segs))
    };
    let moved = if last.mean > first.mean { "rose" } else { "fell" };
    match class {
        Class::Flat if segs.len() == 1 => format!("{} {} throughout", m.name, value(first.mean, m.unit)),
        Class::Flat => {
            let lo = segs.iter().map(|s| s.mean).fold(f64::INFINITY, f64::min);
            let hi = segs.iter().map(|s| s.mean).fold(f64::NEG_INFINITY, f64::max);
            format!(
                "{} alternates between {} and {} without a trend ({cps})",
                m.name,
                value(lo, m.unit),
                value(hi, m.unit)
            )
        }
        Class::None => format!(
            "{} moved to {} in its last {:.0} s and had not settled ({cps})",
            m.name,
            value(last.mean, m.unit),
            last.to_s - last.from_s
        ),
        _ => format!(
            "{} {moved} {} → {} ({cps}{size})",
            m.name,
            value(first.mean, m.unit),
            value(last.mean, m.unit)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reproducible noise source (xorshift), uniform in [-0.5, 0.5).
    fn noise(seed: u64) -> impl FnMut() -> f64 {
        let mut s = seed | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 1_000_000) as f64 / 1_000_000.0 - 0.5
        }
    }

    /// A throughput series of `n` seconds: `level(t)` plus noise of ±`spread` (a share).
    fn series(n: usize, spread: f64, seed: u64, level: impl Fn(f64) -> f64) -> Vec<f64> {
        let mut e = noise(seed);
        (0..n).map(|t| level(t as f64) * (1.0 + spread * 2.0 * e())).collect()
    }

    fn class_of(x: &[f64]) -> SeriesVerdict {
        let at: Vec<f64> = (0..x.len()).map(|i| i as f64).collect();
        judge_series(THROUGHPUT, &at, x).unwrap()
    }

    #[test]
    fn a_flat_series_is_flat() {
        for seed in 1..20 {
            let v = class_of(&series(60, 0.05, seed, |_| 50_000.0));
            assert_eq!(v.class, Class::Flat, "seed {seed}: {v:?}");
            assert_eq!(v.segments.len(), 1, "{v:?}");
        }
    }

    #[test]
    fn a_ramp_then_flat_is_warmup_with_its_changepoints() {
        // From 5k to 50k over the first 25 s, then 50k: a JIT warming.
        for seed in 1..20 {
            let v = class_of(&series(90, 0.05, seed, |t| {
                if t < 25.0 { 5_000.0 + 1_800.0 * t } else { 50_000.0 }
            }));
            assert_eq!(v.class, Class::Warmup, "seed {seed}: {v:?}");
            assert!(v.changepoints_s.iter().all(|&c| c <= 30.0), "{v:?}");
            assert!(!v.changepoints_s.is_empty());
            let last = v.segments.last().unwrap();
            assert!((last.mean - 50_000.0).abs() < 1_500.0 && last.from_s <= 30.0, "{v:?}");
        }
    }

    #[test]
    fn a_step_up_is_warmup_at_the_step() {
        for seed in 1..20 {
            let v = class_of(&series(60, 0.05, seed, |t| if t < 40.0 { 40_000.0 } else { 48_000.0 }));
            assert_eq!(v.class, Class::Warmup, "seed {seed}: {v:?}");
            assert_eq!(v.changepoints_s.len(), 1, "{v:?}");
            assert!((38.0..=42.0).contains(&v.changepoints_s[0]), "{v:?}");
        }
    }

    #[test]
    fn a_slow_decline_is_a_slowdown() {
        // 20 % lost over two minutes, in noise of ±5 %.
        for seed in 1..20 {
            let v = class_of(&series(120, 0.05, seed, |t| 50_000.0 * (1.0 - 0.2 * t / 120.0)));
            assert_eq!(v.class, Class::Slowdown, "seed {seed}: {v:?}");
            assert!(v.segments.first().unwrap().mean > v.segments.last().unwrap().mean);
        }
    }

    #[test]
    fn noise_without_a_trend_is_flat() {
        // ±25 % per second, as a GC-bound server on two shared cores gives.
        for seed in 1..40 {
            let v = class_of(&series(60, 0.25, seed, |_| 100_000.0));
            assert_eq!(v.class, Class::Flat, "seed {seed}: {v:?}");
        }
    }

    #[test]
    fn periodic_spikes_on_a_flat_series_stay_flat() {
        // A GC pause every 10 s: throughput halves for that second, p99 jumps ×20.
        for seed in 1..20 {
            let x = series(60, 0.03, seed, |t| if t as u64 % 10 == 7 { 25_000.0 } else { 50_000.0 });
            let v = class_of(&x);
            assert_eq!((v.class, v.segments.len()), (Class::Flat, 1), "seed {seed}: {v:?}");
            let p99: Vec<f64> = series(60, 0.1, seed, |t| if t as u64 % 10 == 7 { 200.0 } else { 10.0 });
            let at: Vec<f64> = (0..60).map(|i| i as f64).collect();
            let v = judge_series(P99, &at, &p99).unwrap();
            assert_eq!((v.class, v.segments.len()), (Class::Flat, 1), "seed {seed}: {v:?}");
        }
    }

    #[test]
    fn recurring_levels_are_flat_and_a_new_level_at_the_end_is_not() {
        // Phases of 100k and 130k that come back (measured here: G1 on a warm node).
        let phases = |t: f64| {
            if (t as u64 / 15).is_multiple_of(2) {
                100_000.0
            } else {
                130_000.0
            }
        };
        let v = class_of(&series(90, 0.03, 7, phases));
        assert_eq!(v.class, Class::Flat, "{v:?}");
        assert!(v.segments.len() >= 4 && v.why.contains("alternates"), "{v:?}");
        // The same phases, then 115k for the last 8 s of 68: a level not seen before, not settled.
        let v = class_of(&series(68, 0.02, 3, |t| if t < 60.0 { phases(t) } else { 115_000.0 }));
        assert_eq!(v.class, Class::None, "{v:?}");
    }

    #[test]
    fn latency_classes_the_other_way_round() {
        // p50 falling from 8 ms to 2 ms is a warm-up; rising is a slowdown.
        let at: Vec<f64> = (0..60).map(|i| i as f64).collect();
        let falling = series(60, 0.05, 5, |t| if t < 20.0 { 8.0 - 0.3 * t } else { 2.0 });
        assert_eq!(judge_series(P50, &at, &falling).unwrap().class, Class::Warmup);
        let rising = series(60, 0.05, 5, |t| if t < 30.0 { 2.0 } else { 3.0 });
        assert_eq!(judge_series(P50, &at, &rising).unwrap().class, Class::Slowdown);
    }

    #[test]
    fn a_sub_floor_latency_step_is_one_level() {
        // At a light fixed rate p50 sits near 0.3 ms: a 0.03 ms step (10 %, under the 0.05 ms
        // floor) is one level; the same relative step at 3 ms is a slowdown.
        let at: Vec<f64> = (0..60).map(|i| i as f64).collect();
        let light = series(60, 0.005, 5, |t| if t < 30.0 { 0.30 } else { 0.34 });
        assert_eq!(judge_series(P50, &at, &light).unwrap().class, Class::Flat);
        let busy = series(60, 0.005, 5, |t| if t < 30.0 { 3.0 } else { 3.4 });
        assert_eq!(judge_series(P50, &at, &busy).unwrap().class, Class::Slowdown);
    }

    #[test]
    fn a_window_combines_its_series_and_short_ones_are_not_judged() {
        let seconds = |ops: &dyn Fn(f64) -> f64, p50: &dyn Fn(f64) -> f64| -> Vec<Second> {
            (0..60)
                .map(|t| {
                    let t = t as f64;
                    Second {
                        at_s: t,
                        ops_per_s: ops(t),
                        p50_ms: Some(p50(t)),
                        p99_ms: Some(p50(t) * 4.0),
                    }
                })
                .collect()
        };
        let flat = judge(&seconds(&|_| 1000.0, &|_| 1.0));
        assert_eq!((flat.class, flat.steady), (Some(Class::Flat), true), "{flat:?}");
        assert_eq!(flat.series.len(), 3);
        let warm = judge(&seconds(&|t| if t < 30.0 { 500.0 } else { 1000.0 }, &|t| {
            if t < 30.0 { 2.0 } else { 1.0 }
        }));
        assert_eq!((warm.class, warm.steady), (Some(Class::Warmup), false), "{warm:?}");
        assert!(
            warm.render().contains("WARM-UP") && warm.summary.contains("changepoint at 30 s"),
            "{}",
            warm.summary
        );
        // Throughput warming while latency worsens: no steady state.
        let mixed = judge(&seconds(&|t| if t < 30.0 { 500.0 } else { 1000.0 }, &|t| {
            if t < 30.0 { 1.0 } else { 3.0 }
        }));
        assert_eq!(mixed.class, Some(Class::None), "{mixed:?}");
        let short = judge(&seconds(&|_| 1000.0, &|_| 1.0)[..6]);
        assert_eq!((short.class, short.steady), (None, true));
        assert!(short.summary.contains("not judged"), "{}", short.summary);
        // Seconds without an operation have no latency: left out of those series.
        let mut gaps = seconds(&|_| 1000.0, &|_| 1.0);
        gaps[10].p50_ms = None;
        gaps[10].p99_ms = None;
        assert_eq!(judge(&gaps).class, Some(Class::Flat));
        let json = serde_json::to_value(&warm).unwrap();
        assert_eq!(json["class"], "warmup");
        assert_eq!(json["series"][0]["changepoints_s"], serde_json::json!([30.0]));
    }
}
#[cfg(test)]
mod explore {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;
    fn normal(rng: &mut Pcg64Mcg) -> f64 {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    fn window(rng: &mut Pcg64Mcg, n: usize, sd: f64, phase: f64, change: Option<(usize, f64)>) -> Vec<f64> {
        let mut ar = 0.0;
        let mut p = if rng.random::<bool>() { phase } else { -phase };
        let mut next_phase = rng.random_range(20..40);
        let mut next_gc = rng.random_range(3..6);
        (0..n)
            .map(|t| {
                ar = 0.5 * ar + sd * 0.75f64.sqrt() * normal(rng);
                if t == next_phase {
                    p = -p;
                    next_phase += rng.random_range(20..40);
                }
                let mut x = 70_000.0 * (1.0 + p + ar);
                if t == next_gc {
                    x *= 0.75;
                    next_gc += rng.random_range(3..6);
                }
                if let Some((at, c)) = change
                    && t >= at
                {
                    x *= 1.0 + c;
                }
                x
            })
            .collect()
    }
    #[test]
    fn explore_verdict() {
        let at: Vec<f64> = (0..60).map(|i| i as f64).collect();
        for z in [0.0, 2.0, 2.5, 3.0] {
            let mut rng = Pcg64Mcg::seed_from_u64(3);
            for (sd, phase) in [(0.05, 0.0), (0.10, 0.0), (0.10, 0.08), (0.10, 0.15)] {
                let runs = 500;
                let (mut fp, mut det) = (0, 0);
                for _ in 0..runs {
                    let x = window(&mut rng, 60, sd, phase, None);
                    fp += usize::from(judge_series_z(THROUGHPUT, &at, &x, z).unwrap().class != Class::Flat);
                    let y = window(&mut rng, 60, sd, phase, Some((40, -0.2)));
                    det += usize::from(judge_series_z(THROUGHPUT, &at, &y, z).unwrap().class != Class::Flat);
                }
                eprintln!(
                    "z {z} sd {sd} phase ±{phase}: false alarms {:.1} %, detect -20% last third {:.1} %",
                    fp as f64 * 100.0 / runs as f64,
                    det as f64 * 100.0 / runs as f64
                );
            }
        }
    }
}
