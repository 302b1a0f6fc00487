//! Rate shapes: how the open model's target rate moves through a run. A shape is a list of
//! phases, each a constant rate, a linear change or one period of a sine; after the last phase
//! the phases repeat (a sine, bursts) or the last rate holds (a ramp, steps, a trace). The
//! schedule asks a shape when operation `i` is intended to start: the time at which the shape's
//! cumulative operations reach `i`, in closed form for constants and ramps and by a safeguarded
//! Newton step for a sine, with no allocation per operation.
//!
//! Written as `--rate`: `2000` (constant), `ramp:1k..40k/5m`, `steps:5k,10k,20k/2m`,
//! `sine:20k±10k/60s` (or `+-`), `burst:10k,+30k for 5s every 60s` (the base rate, then the
//! burst at the end of each period); or `--rate-file FILE`, one rate a second.

use std::time::Duration;

mod times;
mod written;

use written::FORMS;
pub use written::parse_rate;

/// How the rate moves within one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Curve {
    /// Operations per second throughout.
    Const(f64),
    /// From one rate to another, linearly over the phase.
    Linear { from: f64, to: f64 },
    /// `mean + amplitude · sin(2π t / length)`: one period over the phase.
    Sine { mean: f64, amplitude: f64 },
}

#[derive(Debug, Clone, PartialEq)]
struct Phase {
    curve: Curve,
    /// Seconds.
    length: f64,
    /// Seconds from the shape's start to this phase's.
    start: f64,
    /// Operations intended before this phase.
    ops_before: f64,
}

impl Phase {
    /// The rate `u` seconds into the phase.
    fn rate(&self, u: f64) -> f64 {
        match self.curve {
            Curve::Const(r) => r,
            Curve::Linear { from, to } => from + (to - from) * u / self.length,
            Curve::Sine { mean, amplitude } => mean + amplitude * (std::f64::consts::TAU * u / self.length).sin(),
        }
    }

    /// Operations intended in the first `u` seconds of the phase.
    fn ops(&self, u: f64) -> f64 {
        match self.curve {
            Curve::Const(r) => r * u,
            Curve::Linear { from, to } => from * u + (to - from) * u * u / (2.0 * self.length),
            Curve::Sine { mean, amplitude } => {
                let w = std::f64::consts::TAU / self.length;
                mean * u + amplitude / w * (1.0 - (w * u).cos())
            }
        }
    }

    /// Seconds into the phase at which `x` of its operations are intended (0 ≤ x ≤ its total).
    fn time_of(&self, x: f64) -> f64 {
        let u = match self.curve {
            Curve::Const(r) => x / r,
            Curve::Linear { from, to } => {
                // a·u + k·u²/2 = x, in the form that stays exact as k goes to 0 either way.
                let k = (to - from) / self.length;
                let d = from + (from * from + 2.0 * k * x).max(0.0).sqrt();
                if d > 0.0 { 2.0 * x / d } else { 0.0 }
            }
            Curve::Sine { mean, .. } => {
                // The cumulative count rises monotonically: Newton from the mean rate's guess,
                // falling back to halving the bracket whenever a step would leave it.
                let (mut lo, mut hi) = (0.0, self.length);
                let mut u = (x / mean).clamp(lo, hi);
                for _ in 0..60 {
                    let f = self.ops(u) - x;
                    if f.abs() < 1e-9 {
                        break;
                    }
                    if f > 0.0 {
                        hi = u;
                    } else {
                        lo = u;
                    }
                    let rate = self.rate(u);
                    let next = u - f / rate;
                    u = if rate > 1e-12 && next > lo && next < hi {
                        next
                    } else {
                        0.5 * (lo + hi)
                    };
                    if hi - lo < 1e-12 {
                        break;
                    }
                }
                u
            }
        };
        u.clamp(0.0, self.length)
    }
}

/// A rate that moves through a run (see the module doc for how it is written).
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    phases: Vec<Phase>,
    /// Whether the phases repeat (a sine, bursts); otherwise the last rate holds after them.
    repeats: bool,
    /// (seconds, rate) before the phases: a fixed warm-up at the shape's first rate.
    lead: Option<(f64, f64)>,
    /// A captured trace's operations (`times.rs`), so many: its own first seconds are the
    /// warm-up, and played once (not repeating) nothing after them is due.
    trace: Option<u64>,
    /// As written (`ramp:1k..40k/5m`), for results and messages.
    pub text: String,
}

impl Shape {
    fn new(parts: Vec<(Curve, f64)>, repeats: bool, text: String) -> Result<Shape, String> {
        let mut phases = Vec::with_capacity(parts.len());
        let (mut start, mut ops_before) = (0.0, 0.0);
        for (curve, length) in parts {
            let phase = Phase {
                curve,
                length,
                start,
                ops_before,
            };
            let lowest = match curve {
                Curve::Const(r) => r,
                Curve::Linear { from, to } => from.min(to),
                Curve::Sine { mean, amplitude } => mean - amplitude.abs(),
            };
            let sound = length > 0.0 && length.is_finite() && lowest >= 0.0 && phase.ops(length).is_finite();
            if !sound {
                return Err(format!(
                    "'{text}' is not a rate shape: every part needs a length above 0 and no rate below 0; {FORMS}"
                ));
            }
            start += length;
            ops_before += phase.ops(length);
            phases.push(phase);
        }
        if phases.is_empty() || ops_before <= 0.0 {
            return Err(format!("'{text}' asks for no operations at all; {FORMS}"));
        }
        Ok(Shape {
            phases,
            repeats,
            lead: None,
            trace: None,
            text,
        })
    }

    /// One rate throughout.
    pub fn constant(rate: f64) -> Shape {
        Shape {
            phases: vec![Phase {
                curve: Curve::Const(rate),
                length: 1.0,
                start: 0.0,
                ops_before: 0.0,
            }],
            repeats: false,
            lead: None,
            trace: None,
            text: format!("{rate}"),
        }
    }

    /// A constant rate is no shape: the schedule keeps its plain spacing.
    pub fn constant_rate(&self) -> Option<f64> {
        match self.phases.as_slice() {
            [one] if self.lead.is_none() => match one.curve {
                Curve::Const(r) => Some(r),
                _ => None,
            },
            _ => None,
        }
    }

    /// The shape's own length (with its lead), after which its last rate holds; None when it
    /// repeats or is a constant rate.
    pub fn length(&self) -> Option<Duration> {
        (!self.repeats && self.constant_rate().is_none())
            .then(|| Duration::from_secs_f64(self.lead_ops().0 + self.span()))
    }

    fn span(&self) -> f64 {
        let last = self.phases.last().expect("a shape has a phase");
        last.start + last.length
    }

    fn total(&self) -> f64 {
        let last = self.phases.last().expect("a shape has a phase");
        last.ops_before + last.ops(last.length)
    }

    fn final_rate(&self) -> f64 {
        let last = self.phases.last().expect("a shape has a phase");
        last.rate(last.length)
    }

    /// The phase `t` seconds (within the first period or span) falls in.
    fn phase_at(&self, t: f64) -> &Phase {
        let i = self.phases.partition_point(|p| p.start <= t).saturating_sub(1);
        &self.phases[i]
    }

    /// The lead's length and operations (0 without one).
    fn lead_ops(&self) -> (f64, f64) {
        self.lead.map_or((0.0, 0.0), |(length, rate)| (length, length * rate))
    }

    /// The target rate `t` seconds after the start.
    pub fn rate_at(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        match self.lead {
            Some((length, rate)) if t < length => return rate,
            Some((length, _)) => return self.rate_in(t - length),
            None => {}
        }
        self.rate_in(t)
    }

    fn rate_in(&self, t: f64) -> f64 {
        if !self.repeats && t >= self.span() {
            return self.final_rate();
        }
        let u = if self.repeats { t % self.span() } else { t };
        let p = self.phase_at(u);
        p.rate(u - p.start)
    }

    /// Operations intended in the first `t` seconds.
    pub fn ops_before(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        let (lead, lead_ops) = self.lead_ops();
        if t < lead {
            return t * self.lead.map_or(0.0, |(_, r)| r);
        }
        let t = t - lead;
        let inner = if !self.repeats && t >= self.span() {
            self.total() + self.final_rate() * (t - self.span())
        } else {
            let k = if self.repeats { (t / self.span()).floor() } else { 0.0 };
            let u = t - k * self.span();
            let p = self.phase_at(u);
            k * self.total() + p.ops_before + p.ops(u - p.start)
        };
        lead_ops + inner
    }

    /// Seconds after the start at which operation `i` is intended (infinite when a held rate of
    /// 0 never reaches it).
    pub fn time_of(&self, i: f64) -> f64 {
        let (lead, lead_ops) = self.lead_ops();
        if i < lead_ops {
            return i / self.lead.map_or(1.0, |(_, r)| r);
        }
        let i = i - lead_ops;
        let total = self.total();
        let (k, x) = if self.repeats {
            let k = (i / total).floor();
            (k, i - k * total)
        } else if i >= total {
            let rate = self.final_rate();
            return if rate > 0.0 {
                lead + self.span() + (i - total) / rate
            } else {
                f64::INFINITY
            };
        } else {
            (0.0, i)
        };
        // The last phase whose operations start at or before x: a phase of rate 0 holds none,
        // so the next one (with the same count before it) takes x.
        let at = self.phases.partition_point(|p| p.ops_before <= x).saturating_sub(1);
        let p = &self.phases[at];
        lead + k * self.span() + p.start + p.time_of(x - p.ops_before)
    }

    /// The mean rate over the shape (its period, or its span), without the lead.
    pub fn mean_rate(&self) -> f64 {
        self.total() / self.span()
    }

    /// The same shape at `factor` times the rate (a loader's share).
    pub fn scaled(&self, factor: f64) -> Shape {
        let scale = |c: Curve| match c {
            Curve::Const(r) => Curve::Const(r * factor),
            Curve::Linear { from, to } => Curve::Linear {
                from: from * factor,
                to: to * factor,
            },
            Curve::Sine { mean, amplitude } => Curve::Sine {
                mean: mean * factor,
                amplitude: amplitude * factor,
            },
        };
        let parts = self.phases.iter().map(|p| (scale(p.curve), p.length)).collect();
        match Shape::new(parts, self.repeats, self.text.clone()) {
            Ok(mut s) => {
                s.lead = self.lead.map(|(length, rate)| (length, rate * factor));
                s
            }
            Err(_) => self.clone(),
        }
    }

    /// The shape after a lead of `lead` at its first rate (a fixed warm-up): the shape itself
    /// starts when the measured window does. A trace's operations have no lead: its own first
    /// seconds are the warm-up.
    pub fn after(&self, lead: Duration) -> Shape {
        if lead.is_zero() || self.constant_rate().is_some() || self.trace.is_some() {
            return self.clone();
        }
        let (before, _) = self.lead_ops();
        Shape {
            lead: Some((before + lead.as_secs_f64(), self.phases[0].rate(0.0))),
            ..self.clone()
        }
    }

    /// Whether every phase (and the lead) holds one rate: steps, bursts, traces.
    pub fn piecewise_constant(&self) -> bool {
        self.trace.is_none() && self.phases.iter().all(|p| matches!(p.curve, Curve::Const(_)))
    }

    /// The `span` seconds from `offset` (seconds into the shape) cut into pieces of `width`
    /// seconds (the last may be shorter): (from, to, the rate asked over it on average), from
    /// the offset, for a ramp, a sine or a trace, whose rate never holds.
    pub fn pieces(&self, offset: f64, span: f64, width: f64) -> Vec<(f64, f64, f64)> {
        let mut out = Vec::new();
        let mut from = 0.0;
        while from < span - 1e-9 {
            let to = (from + width).min(span);
            let asked = self.ops_before(offset + to) - self.ops_before(offset + from);
            out.push((from, to, asked / (to - from)));
            from = to;
        }
        out
    }

    /// The constant parts of the shape within its first `span` seconds: (from, to, rate), each
    /// part of a step, a burst or a trace (and a lead) that a run can summarize on its own.
    pub fn constant_parts(&self, span: f64) -> Vec<(f64, f64, f64)> {
        let mut out = Vec::new();
        let (lead, _) = self.lead_ops();
        if let Some((length, rate)) = self.lead {
            out.push((0.0, length.min(span), rate));
        }
        let mut k = 0.0;
        loop {
            for p in &self.phases {
                let from = lead + k * self.span() + p.start;
                if from >= span {
                    return out;
                }
                if let Curve::Const(r) = p.curve {
                    out.push((from, (from + p.length).min(span), r));
                }
            }
            if !self.repeats {
                return out;
            }
            k += 1.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operations intended in each whole second of the first `n`.
    fn per_second(s: &Shape, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| s.ops_before(i as f64 + 1.0) - s.ops_before(i as f64))
            .collect()
    }

    #[test]
    fn a_ramp_is_cut_into_pieces_each_with_its_mean_rate() {
        let s = Shape::parse("ramp:1000..3000/20s").unwrap();
        assert!(!s.piecewise_constant());
        assert!(Shape::parse("steps:1k,2k/10s").unwrap().piecewise_constant());
        let p = s.pieces(0.0, 20.0, 5.0);
        let rates: Vec<f64> = p.iter().map(|x| x.2.round()).collect();
        assert_eq!(rates, [1250.0, 1750.0, 2250.0, 2750.0]);
        assert_eq!((p[0].0, p[3].1), (0.0, 20.0));
        // A last piece shorter than the others, and past the ramp its last rate holds.
        let p = s.pieces(0.0, 23.0, 10.0);
        assert_eq!(p.len(), 3);
        assert_eq!((p[2].0, p[2].1, p[2].2.round()), (20.0, 23.0, 3000.0));
    }

    /// time_of inverts ops_before, and intended times never go backwards.
    fn inverts(s: &Shape, ops: u64) {
        let mut last = 0.0;
        for i in (0..ops).step_by(7) {
            let t = s.time_of(i as f64);
            assert!(t >= last - 1e-9, "{}: op {i} at {t} before {last}", s.text);
            let back = s.ops_before(t);
            assert!(
                (back - i as f64).abs() < 1e-4,
                "{}: op {i} at {t} s counts {back}",
                s.text
            );
            last = t;
        }
    }

    #[test]
    fn a_plain_rate_is_a_constant_shape() {
        let s = Shape::parse("2k").unwrap();
        assert_eq!(s.constant_rate(), Some(2000.0));
        assert_eq!(s.length(), None);
        assert!((s.time_of(3000.0) - 1.5).abs() < 1e-12);
        assert_eq!(s.ops_before(10.0), 20_000.0);
    }

    #[test]
    fn a_ramp_rises_linearly_then_holds() {
        let s = Shape::parse("ramp:1k..5k/4s").unwrap();
        assert_eq!(s.length(), Some(Duration::from_secs(4)));
        assert_eq!(per_second(&s, 6), vec![1500.0, 2500.0, 3500.0, 4500.0, 5000.0, 5000.0]);
        assert_eq!(s.rate_at(2.0), 3000.0);
        assert_eq!(s.mean_rate(), 3000.0);
        inverts(&s, 30_000);
        // Down as well as up, and from nothing.
        inverts(&Shape::parse("ramp:40k..1k/5m").unwrap(), 200_000);
        let up = Shape::parse("ramp:0..10k/10s").unwrap();
        assert_eq!(up.time_of(0.0), 0.0);
        inverts(&up, 50_000);
    }

    #[test]
    fn steps_hold_each_rate_for_their_length() {
        let s = Shape::parse("steps:5k,10k,20k/2s").unwrap();
        assert_eq!(per_second(&s, 8), vec![5e3, 5e3, 10e3, 10e3, 20e3, 20e3, 20e3, 20e3]);
        assert_eq!(
            s.constant_parts(100.0),
            vec![(0.0, 2.0, 5e3), (2.0, 4.0, 10e3), (4.0, 6.0, 20e3)]
        );
        // The first operation of the second step is intended exactly when it begins.
        assert!((s.time_of(10_000.0) - 2.0).abs() < 1e-12);
        inverts(&s, 100_000);
    }

    #[test]
    fn a_sine_swings_about_its_mean_and_repeats() {
        let s = Shape::parse("sine:20k±10k/60s").unwrap();
        assert_eq!(s.length(), None, "it repeats");
        assert!((s.rate_at(15.0) - 30_000.0).abs() < 1e-6);
        assert!((s.rate_at(45.0) - 10_000.0).abs() < 1e-6);
        assert!((s.rate_at(75.0) - 30_000.0).abs() < 1e-6, "the second period");
        assert!((s.ops_before(120.0) - 2.0 * 60.0 * 20_000.0).abs() < 1e-3);
        inverts(&s, 3_000_000);
        // Down to 0 at its trough, and still inverted there.
        inverts(&Shape::parse("sine:1k+-1k/10s").unwrap(), 25_000);
        assert!(
            Shape::parse("sine:1k±2k/10s")
                .unwrap_err()
                .contains("cannot exceed its mean")
        );
    }

    #[test]
    fn bursts_come_at_the_end_of_each_period() {
        let s = Shape::parse("burst:10k,+30k for 5s every 60s").unwrap();
        let secs = per_second(&s, 125);
        assert!(secs[..55].iter().all(|&n| n == 10e3));
        assert!(secs[55..60].iter().all(|&n| n == 40e3));
        assert!(secs[60..115].iter().all(|&n| n == 10e3));
        assert!(secs[115..120].iter().all(|&n| n == 40e3));
        assert_eq!(secs[120], 10e3);
        assert_eq!(
            s.constant_parts(70.0),
            vec![(0.0, 55.0, 10e3), (55.0, 60.0, 40e3), (60.0, 70.0, 10e3)]
        );
        inverts(&s, 2_000_000);
        assert!(
            Shape::parse("burst:1k,+1k for 60s every 60s")
                .unwrap_err()
                .contains("shorter than its period")
        );
    }

    #[test]
    fn a_trace_replays_one_rate_a_second() {
        let text = "second,rate\n0,100\n1,100\n2,300 # the spike\n\n3,0\n4,200\n";
        let s = Shape::from_trace(text, "prod.csv").unwrap();
        assert_eq!(s.length(), Some(Duration::from_secs(5)));
        assert_eq!(per_second(&s, 6), vec![100.0, 100.0, 300.0, 0.0, 200.0, 200.0]);
        // Nothing is intended in the silent second: the 500th operation waits for the next.
        assert!((s.time_of(500.0) - 4.0).abs() < 1e-12, "{}", s.time_of(500.0));
        inverts(&s, 1_500);
        // Plain rates, one a line.
        let plain = Shape::from_trace("1k\n2k\n", "t").unwrap();
        assert_eq!(per_second(&plain, 2), vec![1000.0, 2000.0]);
        let err = Shape::from_trace("100\nfast\n", "t.txt").unwrap_err();
        assert!(err.contains("t.txt line 2") && err.contains("'fast'"), "{err}");
        assert!(
            Shape::from_trace("# nothing\n", "e")
                .unwrap_err()
                .contains("holds no rates")
        );
        assert!(Shape::from_trace("0\n0\n", "z").unwrap_err().contains("no operations"));
        // A trace that ends silent never reaches operations past it.
        let quiet = Shape::from_trace("10\n0\n", "q").unwrap();
        assert_eq!(quiet.time_of(10.0), f64::INFINITY);
    }

    #[test]
    fn a_warm_up_runs_at_the_first_rate_before_the_shape() {
        let s = Shape::parse("steps:1k,2k/1s").unwrap().after(Duration::from_secs(3));
        assert_eq!(per_second(&s, 6), vec![1e3, 1e3, 1e3, 1e3, 2e3, 2e3]);
        let sine = Shape::parse("sine:2k±1k/4s").unwrap().after(Duration::from_secs(2));
        assert!((sine.rate_at(1.0) - 2000.0).abs() < 1e-9 && (sine.rate_at(3.0) - 3000.0).abs() < 1e-9);
        assert!(
            (sine.rate_at(7.0) - 3000.0).abs() < 1e-9,
            "still repeating after the lead"
        );
        inverts(&sine, 40_000);
    }

    #[test]
    fn a_share_of_a_shape_is_the_shape_scaled() {
        let s = Shape::parse("ramp:1k..5k/4s").unwrap().scaled(0.5);
        assert_eq!(per_second(&s, 4), vec![750.0, 1250.0, 1750.0, 2250.0]);
    }

    #[test]
    fn malformed_shapes_name_the_forms() {
        for bad in [
            "ramp:1k/5m",
            "ramp:1k..x/5m",
            "steps:1k,2k",
            "sine:5k/10s",
            "burst:1k,30k for 5s every 60s",
            "wave:1k",
            "fast",
            "ramp:1k..2k/0s",
            "steps:-1,2/1s",
        ] {
            let err = Shape::parse(bad).unwrap_err();
            assert!(
                err.contains("ramp:1k..40k/5m") || err.contains("shorter"),
                "{bad}: {err}"
            );
        }
    }
}
