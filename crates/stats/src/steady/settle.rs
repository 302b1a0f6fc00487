//! When an automatic warm-up (`--warmup auto`) may end: the client's series has settled and,
//! on nodes caplab runs here, the JIT compilers have gone quiet.
//!
//! Over the last `WINDOW` seconds of warm-up (Georges et al., OOPSLA 2007, judge a window;
//! Laaber et al., FSE 2020, stop once it is stable):
//! - the series is per-second throughput when the run is flat out, and the service-time p50
//!   and p99 at a fixed rate (where throughput is the schedule's);
//! - **no trend**: the Theil–Sen slope (the median of every pair's slope: a GC pause or two
//!   cannot tilt it) over the window, per 10 s and as a share of the window's median, is within
//!   5 % (throughput and p50) or 15 % (p99);
//! - **bounded variation**: the robust coefficient of variation (1.4826 · MAD / median) is
//!   within 20 % (throughput and p50) or 50 % (p99: per-second p99s swing with GC);
//! - **JIT**: the C1 and C2 compiler threads used at most `JIT_SHARE` (3 %) of the server's
//!   CPU over the window, where the server is watched: from /proc on nodes caplab runs here,
//!   and over JMX (`telemetry::jmx_watch`: compilation time over process CPU time) on clusters
//!   given `--jmx`;
//! - **without the JIT's telemetry** (a cluster caplab does not run), the rule must hold
//!   for `BLIND_HOLD` (30) seconds more, every 30 s window within them settled: a fresh node
//!   reached as a plain `--hosts` target once ended warm-up after 36 s on the rule alone and
//!   then rose from 38k to 51k op/s inside its window, because its JIT was still compiling.
//!
//! The run's `--warmup-max` bounds the wait; the engine ends warm-up there regardless, and the
//! step says the window was measured without having settled.

use std::collections::VecDeque;

use super::pelt::{mad, median};

/// Seconds of warm-up judged at a time (and the shortest automatic warm-up).
pub const WINDOW: usize = 30;
/// The most CPU the JIT compilers may use, as a share of the server's.
pub const JIT_SHARE: f64 = 0.03;
/// Without the JIT's telemetry, the seconds the rule must go on holding after it first holds.
pub const BLIND_HOLD: usize = 30;

/// A per-second series the rule looks at, and its bounds.
#[derive(Debug, Clone, Copy)]
struct Criterion {
    name: &'static str,
    /// Largest trend allowed, as a share of the median per 10 s.
    trend: f64,
    /// Largest robust coefficient of variation.
    spread: f64,
}

const THROUGHPUT: Criterion = Criterion {
    name: "op/s",
    trend: 0.05,
    spread: 0.20,
};
const SERVICE_P50: Criterion = Criterion {
    name: "service p50",
    trend: 0.05,
    spread: 0.20,
};
const SERVICE_P99: Criterion = Criterion {
    name: "service p99",
    trend: 0.15,
    spread: 0.50,
};

/// One second of warm-up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    pub ops_per_s: f64,
    pub service_p50_ms: Option<f64>,
    pub service_p99_ms: Option<f64>,
    /// CPU cores of the server's JIT compiler threads, and of the whole server, in that second
    /// (None when the server is not watched).
    pub jit_cores: Option<f64>,
    pub server_cores: Option<f64>,
}

/// Where the rule stands after a second.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub settled: bool,
    /// What each criterion measured (for people): "op/s +14 %/10s, CV 9 %, JIT 31 % of server CPU".
    pub text: String,
}

/// Feeds on warm-up seconds and says when they have settled.
pub struct Settle {
    flat_out: bool,
    seconds: VecDeque<Sample>,
    seen: usize,
    /// Consecutive seconds the rule has held (for runs without the JIT's telemetry).
    held: usize,
    /// Where the JIT's figure comes from, when not from /proc (" over JMX").
    pub jit_from: &'static str,
}

impl Settle {
    /// For a run flat out (`flat_out`) or at a fixed rate.
    pub fn new(flat_out: bool) -> Settle {
        Settle {
            flat_out,
            seconds: VecDeque::with_capacity(WINDOW + 1),
            seen: 0,
            held: 0,
            jit_from: "",
        }
    }

    /// Takes one more second of warm-up and judges the last `WINDOW` of them.
    pub fn push(&mut self, s: Sample) -> Check {
        self.seen += 1;
        self.seconds.push_back(s);
        if self.seconds.len() > WINDOW {
            self.seconds.pop_front();
        }
        let throughput = self.last(|s| Some(s.ops_per_s));
        if self.seconds.len() < WINDOW {
            return Check {
                settled: false,
                text: format!("judged once {WINDOW} s are in ({} s so far)", self.seen),
            };
        }
        let mut parts = Vec::new();
        let mut settled = true;
        let criteria: Vec<(Criterion, Vec<f64>)> = if self.flat_out {
            vec![(THROUGHPUT, throughput)]
        } else {
            vec![
                (SERVICE_P50, self.last(|s| s.service_p50_ms)),
                (SERVICE_P99, self.last(|s| s.service_p99_ms)),
            ]
        };
        for (c, values) in criteria {
            if values.len() < WINDOW / 2 {
                // Most seconds without a completed operation: nothing has settled.
                settled = false;
                parts.push(format!("{} not measured", c.name));
                continue;
            }
            let (trend, spread) = (trend_per_10s(&values), robust_cv(&values));
            settled &= trend.abs() <= c.trend && spread <= c.spread;
            parts.push(format!(
                "{} {:+.0} %/10s, CV {:.0} %",
                c.name,
                trend * 100.0,
                spread * 100.0
            ));
        }
        let jit: f64 = self.seconds.iter().filter_map(|s| s.jit_cores).sum();
        let server: f64 = self.seconds.iter().filter_map(|s| s.server_cores).sum();
        if self.seconds.iter().any(|s| s.jit_cores.is_some()) {
            let share = if server > 0.0 { jit / server } else { 0.0 };
            settled &= share <= JIT_SHARE;
            parts.push(format!("JIT {:.1} % of server CPU{}", share * 100.0, self.jit_from));
        } else {
            self.held = if settled { self.held + 1 } else { 0 };
            if settled {
                settled = self.held > BLIND_HOLD;
                parts.push(format!(
                    "held {} of {BLIND_HOLD} s (no JIT telemetry from this cluster)",
                    (self.held - 1).min(BLIND_HOLD)
                ));
            }
        }
        Check {
            settled,
            text: parts.join(", "),
        }
    }

    fn last(&self, f: impl Fn(&Sample) -> Option<f64>) -> Vec<f64> {
        self.seconds.iter().filter_map(f).filter(|v| v.is_finite()).collect()
    }
}

/// The Theil–Sen slope of `y` against its index (seconds), times 10, over `y`'s median.
fn trend_per_10s(y: &[f64]) -> f64 {
    let mut slopes = Vec::with_capacity(y.len() * (y.len() - 1) / 2);
    for i in 0..y.len() {
        for j in i + 1..y.len() {
            slopes.push((y[j] - y[i]) / (j - i) as f64);
        }
    }
    let m = median(y);
    if slopes.is_empty() || m == 0.0 {
        return 0.0;
    }
    median(&slopes) * 10.0 / m.abs()
}

/// 1.4826 · MAD / median: the coefficient of variation a normal series would have, unmoved by
/// a few outliers.
fn robust_cv(y: &[f64]) -> f64 {
    let m = median(y);
    if m == 0.0 { 0.0 } else { 1.4826 * mad(y) / m.abs() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat_out(ops: impl Fn(usize) -> f64, jit: impl Fn(usize) -> f64, seconds: usize) -> Option<usize> {
        let mut s = Settle::new(true);
        (0..seconds).find(|&t| {
            s.push(Sample {
                ops_per_s: ops(t),
                jit_cores: Some(jit(t)),
                server_cores: Some(1.5),
                ..Default::default()
            })
            .settled
        })
    }

    /// ±`spread` of noise, reproducible.
    fn wobble(t: usize, spread: f64) -> f64 {
        let x = ((t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as f64 / (1u64 << 24) as f64;
        1.0 + spread * (2.0 * x - 1.0)
    }

    #[test]
    fn a_steady_series_settles_after_one_window() {
        let at = flat_out(|t| 50_000.0 * wobble(t, 0.1), |_| 0.0, 120);
        assert_eq!(at, Some(WINDOW - 1), "judged as soon as a window is full");
    }

    #[test]
    fn a_ramp_settles_only_once_flat_for_most_of_a_window() {
        // A fresh node as measured: ~4.7k op/s rising to ~90k over 55 s, then flat.
        let ramp = |t: usize| if t < 55 { 4_700.0 + 1_550.0 * t as f64 } else { 90_000.0 } * wobble(t, 0.1);
        let at = flat_out(ramp, |_| 0.0, 300).expect("settles");
        assert!((70..=90).contains(&at), "settled at {at} s");
        let mut s = Settle::new(true);
        let text = (0..45)
            .map(|t| {
                s.push(Sample {
                    ops_per_s: ramp(t),
                    ..Default::default()
                })
                .text
            })
            .last();
        assert!(text.unwrap().contains("op/s +"), "the progress line names the trend");
    }

    #[test]
    fn the_jit_compiling_holds_warm_up_even_when_throughput_is_flat() {
        // JIT at 0.3 cores of 1.5 (20 %) until 60 s, then nothing.
        let at = flat_out(|t| 50_000.0 * wobble(t, 0.05), |t| if t < 60 { 0.3 } else { 0.0 }, 200).unwrap();
        // The window's share falls under 3 % once at most ~4 of its 30 s had the JIT busy.
        assert!((82..=90).contains(&at), "settled at {at} s");
        let mut s = Settle::new(true);
        let mut last = None;
        for _ in 0..40 {
            last = Some(s.push(Sample {
                ops_per_s: 50_000.0,
                jit_cores: Some(0.3),
                server_cores: Some(1.5),
                ..Default::default()
            }));
        }
        assert!(last.unwrap().text.contains("JIT 20.0 % of server CPU"));
    }

    #[test]
    fn wild_swings_never_settle() {
        // No trend, but every other second at half speed: variation beyond 20 %.
        assert_eq!(
            flat_out(|t| if t % 2 == 0 { 100_000.0 } else { 40_000.0 }, |_| 0.0, 200),
            None
        );
    }

    #[test]
    fn at_a_fixed_rate_service_times_decide() {
        // Service p50 falling 2 ms → 0.5 ms over 40 s, p99 10× p50; throughput is the schedule's.
        let p50 = |t: usize| if t < 40 { 2.0 - 1.5 * t as f64 / 40.0 } else { 0.5 } * wobble(t, 0.05);
        let settles = |jit: Option<f64>| {
            let mut s = Settle::new(false);
            (0..200).find(|&t| {
                s.push(Sample {
                    ops_per_s: 2_000.0,
                    service_p50_ms: Some(p50(t)),
                    service_p99_ms: Some(10.0 * p50(t)),
                    jit_cores: jit,
                    server_cores: jit.map(|_| 1.5),
                })
                .settled
            })
        };
        let at = settles(Some(0.0)).unwrap();
        assert!((55..=70).contains(&at), "settled at {at} s");
        // A cluster caplab does not run: no JIT telemetry, so the rule must hold 30 s longer.
        assert_eq!(settles(None), Some(at + BLIND_HOLD));
        // No operation completing: nothing to judge, never settled.
        let mut idle = Settle::new(false);
        assert!((0..60).all(|_| !idle.push(Sample::default()).settled));
    }
}
