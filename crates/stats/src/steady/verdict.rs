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

use super::pelt::{self, mad, median};
use crate::format::group;

/// The shortest segment, seconds: shorter excursions are noise, not levels.
pub const MIN_SEGMENT: usize = 10;
/// Windows shorter than this (two segments) are not judged.
pub const MIN_WINDOW: usize = 2 * MIN_SEGMENT;
/// The penalty per changepoint, in units of σ²τ·ln n (the modified BIC of Zhang & Siegmund,
/// which R's changepoint package uses, has 3; 2.5 keeps false alarms under 5 % on both the
/// anti-correlated seconds measured here and independent ones, and sees more: the calibration
/// tests below).
pub const PENALTY: f64 = 2.5;
/// Values further than this many σ from the running median of five are spikes.
pub const SPIKE_SIGMAS: f64 = 3.0;
/// A new level at the end of a window shorter than this share of it has not settled.
pub const SETTLED_SHARE: f64 = 0.2;
/// Seconds per batch for the noise of means.
pub const NOISE_BATCH: usize = 5;

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
pub struct SecondFigures {
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
    /// The measured span's length (`window_s` in result.json).
    #[serde(rename = "window_s")]
    pub measured_s: f64,
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
         median of 5 replaced by it; σ from successive differences), penalty {PENALTY}σ²τ·ln n (τ: the seconds' \
         autocorrelation, lags 1-5, within [0.5, 4]), levels ≥{MIN_SEGMENT} s; \
         levels within {:.0} % (throughput), {:.0} % or {} ms (p50), {:.0} % or {} ms (p99) of the median are one level. \
         flat: one level \
         or recurring levels; warmup: starts below or ends above all else; slowdown: the reverse; none: a new level \
         in the last {:.0} % of the window, or series that disagree. Throughput decides the window's class flat out, \
         throughput and p50 at a fixed rate; p99 is shown. Windows under {MIN_WINDOW} s are not judged.",
        THROUGHPUT.tolerance * 100.0,
        P50.tolerance * 100.0,
        P50.floor,
        P99.tolerance * 100.0,
        P99.floor,
        SETTLED_SHARE * 100.0
    )
}

/// How the load was offered, which says which series carries a window's signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// As fast as the server answers: throughput is what moves, and with a fixed number of
    /// operations in flight p50 mirrors it (Little's law), so throughput alone decides; judged
    /// on both, a window had two chances to be called unsteady for one change, and 8 % of
    /// stationary windows were (the simulation below).
    FlatOut,
    /// At a fixed rate: throughput is held by the schedule and moves only when the server falls
    /// behind; p50 is what moves. Both decide.
    Fixed,
}

impl Load {
    /// The load of a run at `rate` operations a second (0: flat out).
    pub fn of(rate: f64) -> Load {
        if rate > 0.0 { Load::Fixed } else { Load::FlatOut }
    }
}

/// Judges a measured window from its seconds.
pub fn judge(seconds: &[SecondFigures], load: Load) -> SteadyState {
    let measured_s = seconds.len() as f64;
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
            measured_s,
            series,
            summary: format!("not judged: {measured_s:.0} s measured, at least {MIN_WINDOW} s are needed"),
            rule: rule(),
        };
    }
    // p99 is shown but does not decide: at a fixed rate its seconds jump from 3 ms to
    // 45 ms and back for 5-10 s around GC pauses and flushes (16 of 30 stationary windows were
    // called unsteady on p99 alone or with it), and leaving such windows out of comparisons
    // would favour the configurations that pause more. Throughput and p50 decide at a fixed
    // rate, throughput flat out (`Load`).
    let decides = |s: &&SeriesVerdict| s.metric != P99.name && (load == Load::Fixed || s.metric != P50.name);
    let classes: Vec<Class> = series.iter().filter(decides).map(|s| s.class).collect();
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
        .map(|s| {
            if s.metric == P99.name && s.class != Class::Flat && class == Class::Flat {
                format!("{} (p99 alone does not make a window unsteady)", s.why)
            } else if s.metric == P50.name && load == Load::FlatOut && s.class != Class::Flat && class == Class::Flat {
                format!("{} (flat out, throughput decides)", s.why)
            } else {
                s.why.clone()
            }
        })
        .collect();
    let summary = match class {
        Class::Flat => format!("flat over {measured_s:.0} s ({})", notes.join("; ")),
        c => format!(
            "{} over {measured_s:.0} s: {}",
            c.name().to_uppercase(),
            notes.join("; ")
        ),
    };
    SteadyState {
        class: Some(class),
        steady: class == Class::Flat,
        measured_s,
        series,
        summary,
        rule: rule(),
    }
}

/// The noise of `x`'s means, per √second: σ·√τ, with τ the sum of its autocorrelations
/// (Bartlett's weights, lags 1 to 5). Each autocorrelation comes from the spread of differences
/// `k` seconds apart against that of differences 8 to 12 seconds apart, where correlation here
/// has died (ρ_k = 1 − D_k / D_far, D from the median absolute deviation): a change of level
/// moves only `k` of the differences, so it does not count as correlation, and independent
/// seconds give τ = 1 without bias (residuals around a running median, the first way tried,
/// are anti-correlated by construction: τ came out near 0.5 and flat noise was called
/// unsteady 9 % of the time). τ is kept within [1/2, 4]: a 60 s window cannot tell more. On
/// this machine a flat-out run's seconds are anti-correlated (a slow second's work completes
/// two seconds on): means of several seconds vary less than independent seconds would, and a
/// change of level stands out more than σ alone says; positively correlated noise (phases)
/// works the other way.
fn mean_noise(x: &[f64], sigma: f64) -> f64 {
    const LAGS: usize = 5;
    const FAR: std::ops::RangeInclusive<usize> = 8..=12;
    let n = x.len();
    if n < 2 * FAR.end() {
        return sigma;
    }
    let spread = |k: usize| {
        let d: Vec<f64> = (0..n - k).map(|i| x[i + k] - x[i]).collect();
        (1.4826 * mad(&d)).powi(2)
    };
    let far = FAR.map(spread).sum::<f64>() / FAR.count() as f64;
    if far <= 0.0 {
        return sigma;
    }
    let tau = 1.0
        + 2.0
            * (1..=LAGS)
                .map(|k| (1.0 - k as f64 / (LAGS + 1) as f64) * (1.0 - spread(k) / far))
                .sum::<f64>();
    sigma * tau.clamp(0.5, 4.0).sqrt()
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

/// The verdict of one series (values at the given times); None when too short to judge.
pub fn judge_series(m: Metric, at: &[f64], x: &[f64]) -> Option<SeriesVerdict> {
    let n = x.len();
    if n < MIN_WINDOW {
        return None;
    }
    let sigma = pelt::noise_sigma(x);
    let cleaned = despike(x, sigma);
    let level = median(&cleaned).abs().max(f64::MIN_POSITIVE);
    // Scaled by the noise of means, not of single seconds (see `mean_noise`).
    let noise = mean_noise(&cleaned, sigma);
    let penalty = (PENALTY * noise * noise * (n as f64).ln()).max((level * 1e-9).powi(2));
    let mut bounds = vec![0];
    bounds.extend(pelt::changepoints(&cleaned, penalty, MIN_SEGMENT));
    bounds.push(n);
    let mean = |a: usize, b: usize| cleaned[a..b].iter().sum::<f64>() / (b - a) as f64;
    // (start, end, mean) in indices.
    let mut segs: Vec<(usize, usize, f64)> = bounds.windows(2).map(|w| (w[0], w[1], mean(w[0], w[1]))).collect();
    // Neighbours closer than the tolerance are one level: merged, closest first.
    let tol = (m.tolerance * level).max(m.floor);
    while segs.len() > 1 {
        let (i, d) = segs
            .windows(2)
            .map(|w| (w[0].2 - w[1].2).abs())
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("two segments or more");
        if d >= tol {
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
        .map(|(c, h)| {
            format!(
                ", {:+.1} % [{:+.1}, {:+.1}]",
                c * 100.0,
                (c - h) * 100.0,
                (c + h) * 100.0
            )
        })
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
            // Levels of at least 10 s: the last changepoint within one segment of the ramp's end.
            let end = 25.0 + MIN_SEGMENT as f64;
            assert!(v.changepoints_s.iter().all(|&c| c <= end), "{v:?}");
            assert!(!v.changepoints_s.is_empty());
            let last = v.segments.last().unwrap();
            assert!((last.mean - 50_000.0).abs() < 1_500.0 && last.from_s <= end, "{v:?}");
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
        // ±25 % per second, as a GC-bound server on two shared cores gives. The verdict is
        // calibrated to 5 % false alarms on measured noise (the calibration module);
        // on independent noise it is at about its level (4.8 %), so what this asserts is 7 %:
        // the rate of 1,000 seeded windows plus three Monte Carlo standard errors (2 %).
        let alarms = (1..=1000)
            .filter(|&seed| class_of(&series(60, 0.25, seed, |_| 100_000.0)).class != Class::Flat)
            .count();
        let rate = alarms as f64 / 1000.0;
        eprintln!("independent noise: {alarms} of 1,000 flat windows called unsteady");
        assert!(
            crate::stats::sim::bound(rate, 1000) <= 0.07,
            "{alarms} of 1,000 flat windows called unsteady"
        );
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
        let seconds = |ops: &dyn Fn(f64) -> f64, p50: &dyn Fn(f64) -> f64| -> Vec<SecondFigures> {
            (0..60)
                .map(|t| {
                    let t = t as f64;
                    SecondFigures {
                        at_s: t,
                        ops_per_s: ops(t),
                        p50_ms: Some(p50(t)),
                        p99_ms: Some(p50(t) * 4.0),
                    }
                })
                .collect()
        };
        let flat = judge(&seconds(&|_| 1000.0, &|_| 1.0), Load::FlatOut);
        assert_eq!((flat.class, flat.steady), (Some(Class::Flat), true), "{flat:?}");
        assert_eq!(flat.series.len(), 3);
        let warm = judge(
            &seconds(&|t| if t < 30.0 { 500.0 } else { 1000.0 }, &|t| {
                if t < 30.0 { 2.0 } else { 1.0 }
            }),
            Load::Fixed,
        );
        assert_eq!((warm.class, warm.steady), (Some(Class::Warmup), false), "{warm:?}");
        assert!(
            warm.render().contains("WARM-UP") && warm.summary.contains("changepoint at 30 s"),
            "{}",
            warm.summary
        );
        // Throughput warming while latency worsens: no steady state.
        // Throughput warming while latency worsens: no steady state at a fixed rate, where both
        // decide; flat out, throughput decides (p50 mirrors it, and is named beside).
        let mixed_seconds = seconds(&|t| if t < 30.0 { 500.0 } else { 1000.0 }, &|t| {
            if t < 30.0 { 1.0 } else { 3.0 }
        });
        let mixed = judge(&mixed_seconds, Load::Fixed);
        assert_eq!(mixed.class, Some(Class::None), "{mixed:?}");
        assert_eq!(judge(&mixed_seconds, Load::FlatOut).class, Some(Class::Warmup));
        // A p50 step alone: unsteady at a fixed rate, flat (and said) flat out.
        let p50_step = seconds(&|_| 1000.0, &|t| if t < 30.0 { 1.0 } else { 2.0 });
        assert_eq!(judge(&p50_step, Load::Fixed).class, Some(Class::Slowdown));
        let flat_out = judge(&p50_step, Load::FlatOut);
        assert_eq!(flat_out.class, Some(Class::Flat), "{flat_out:?}");
        assert!(
            flat_out.summary.contains("flat out, throughput decides"),
            "{}",
            flat_out.summary
        );
        let short = judge(&seconds(&|_| 1000.0, &|_| 1.0)[..6], Load::FlatOut);
        assert_eq!((short.class, short.steady), (None, true));
        assert!(short.summary.contains("not judged"), "{}", short.summary);
        // Seconds without an operation have no latency: left out of those series.
        let mut gaps = seconds(&|_| 1000.0, &|_| 1.0);
        gaps[10].p50_ms = None;
        gaps[10].p99_ms = None;
        assert_eq!(judge(&gaps, Load::FlatOut).class, Some(Class::Flat));
        let json = serde_json::to_value(&warm).unwrap();
        assert_eq!(json["class"], "warmup");
        assert_eq!(json["series"][0]["changepoints_s"], serde_json::json!([30.0]));
    }
}

/// The verdict's error rates on synthetic windows with the noise measured here, proved by
/// simulation (bench/steady-calibration.sh measures the same on real windows).
#[cfg(test)]
mod calibration {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn normal(rng: &mut Pcg64Mcg) -> f64 {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// An `n` s flat-out throughput window as a settled 5.0.9 node gives it here (30 minutes
    /// of E1 inserts, bench/steady-calibration.sh): per-second values with a coefficient of
    /// variation of 21 %, no lag-1 correlation and -0.39 at lag 2 (a slow second's work
    /// completes two seconds on), 8 % of seconds below 60 % of the median (GC pauses), 10-s
    /// means within 3.7 %; then `change` (a share) for the last third.
    pub fn flat_out(rng: &mut Pcg64Mcg, n: usize, change: f64) -> Vec<f64> {
        let e: Vec<f64> = (0..n + 2).map(|_| normal(rng)).collect();
        (0..n)
            .map(|t| {
                let mut x = 1.0 + 0.16 * (e[t + 2] - 0.6 * e[t]);
                if rng.random::<f64>() < 0.08 {
                    x *= 0.5;
                }
                let level = if 3 * t >= 2 * n { 1.0 + change } else { 1.0 };
                68_000.0 * level * x.max(0.05)
            })
            .collect()
    }

    /// The share of `runs` windows of `n` s the verdict does not call flat.
    fn not_flat(runs: usize, seed: u64, n: usize, change: f64) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let at: Vec<f64> = (0..n).map(|i| i as f64).collect();
        (0..runs)
            .filter(|_| {
                judge_series(THROUGHPUT, &at, &flat_out(&mut rng, n, change))
                    .unwrap()
                    .class
                    != Class::Flat
            })
            .count() as f64
            / runs as f64
    }

    /// Stationary windows (2,000 each of 60 and 120 s): not flat at most 5 % of the time, the rate
    /// plus three Monte Carlo standard errors (about 1.1 %) asserted; measured 3.1 % and 2.6 %. A 20 % change of level for the
    /// last third: at this noise (per-second CV 21 %) seen in 64-68 % of 60 s windows and 90-96 %
    /// of 120 s ones, which is what a penalised changepoint can do at 5 % false alarms on 20 s of
    /// such seconds; asserted at least 60 % and 85 % (4 standard errors below). README states
    /// these figures. Seeds are fixed, so the test is deterministic.
    #[test]
    fn false_alarms_and_detections_with_the_noise_measured_here() {
        let runs = 2_000;
        for n in [60, 120] {
            let alarms = not_flat(runs, 1, n, 0.0);
            let fall = not_flat(runs, 2, n, -0.20);
            let rise = not_flat(runs, 3, n, 0.20);
            eprintln!(
                "{n} s windows: stationary {:.1} % not flat; 20 % fall in the last third {:.1} % seen, rise {:.1} %",
                alarms * 100.0,
                fall * 100.0,
                rise * 100.0
            );
            for size in [0.10, 0.15, 0.30] {
                eprintln!(
                    "  {:.0} % fall in the last third: {:.1} % seen",
                    size * 100.0,
                    not_flat(1_000, 4, n, -size) * 100.0
                );
            }
            assert!(crate::stats::sim::bound(alarms, runs) <= 0.05, "{n} s: {alarms}");
            let least = if n >= 120 { 0.85 } else { 0.60 };
            assert!(fall >= least && rise >= least, "{n} s: {fall} {rise}");
        }
    }

    /// A window's seconds as a settled node gives them flat out: `flat_out`'s throughput, and a
    /// p50 that follows it (a closed loop: a slow second's operations wait longer, p50 ∝
    /// 1 / throughput^0.8) with its own noise (CV 8 %). At a fixed rate (`fixed`): throughput
    /// held within 0.5 %, p50 with the same noise (a pause of 100 ms moves a second's p50
    /// little; it moves p99, which does not decide).
    fn seconds(rng: &mut Pcg64Mcg, n: usize, fixed: bool) -> Vec<SecondFigures> {
        flat_out(rng, n, 0.0)
            .into_iter()
            .enumerate()
            .map(|(t, ops)| {
                let (ops, p50) = if fixed {
                    (3000.0 * (1.0 + 0.005 * normal(rng)), 0.9 * (0.08 * normal(rng)).exp())
                } else {
                    (ops, 3.5 * (68_000.0 / ops).powf(0.8) * (0.08 * normal(rng)).exp())
                };
                SecondFigures {
                    at_s: t as f64,
                    ops_per_s: ops,
                    p50_ms: Some(p50),
                    p99_ms: Some(p50 * 4.0),
                }
            })
            .collect()
    }

    /// The false-alarm rate of a window's whole class as `judge` decides it, on 2,000
    /// stationary windows each of 60 and 120 s, flat out (throughput decides; seed 61) and at a
    /// fixed rate (throughput and p50 decide; seed 62): the rate plus three Monte Carlo standard
    /// errors at most 5 %. Judged on throughput and p50 together flat out, as caplab did, the
    /// same windows were called unsteady 8.1 % and 7.4 % of the time (the check fails that).
    #[test]
    fn the_whole_class_false_alarm_rate_holds_flat_out_and_at_a_fixed_rate() {
        let runs = 2_000;
        for (load, seed) in [(Load::FlatOut, 61), (Load::Fixed, 62)] {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            for n in [60, 120] {
                let fixed = load == Load::Fixed;
                let alarms = (0..runs)
                    .filter(|_| judge(&seconds(&mut rng, n, fixed), load).class != Some(Class::Flat))
                    .count();
                let rate = alarms as f64 / runs as f64;
                eprintln!("{load:?}, {n} s windows: {:.1} % not flat", rate * 100.0);
                assert!(crate::stats::sim::bound(rate, runs) <= 0.05, "{load:?} {n} s: {rate}");
            }
        }
        // Both deciding flat out: the union of two views of one signal.
        let mut rng = Pcg64Mcg::seed_from_u64(61);
        let both = (0..runs)
            .filter(|_| judge(&seconds(&mut rng, 60, false), Load::Fixed).class != Some(Class::Flat))
            .count() as f64
            / runs as f64;
        eprintln!("flat out judged on both: {:.1} % not flat", both * 100.0);
        assert!(crate::stats::sim::bound(both, runs) > 0.05, "{both}");
    }
}
