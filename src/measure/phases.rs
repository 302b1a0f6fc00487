//! A run along a rate shape, summarized part by part, and the latency–throughput curve with
//! its knee. Each constant part of the shape in the measured window (a step, a burst and the base
//! between bursts, a trace's run of one rate) gets the rate it asked, the rate achieved and its
//! response-time percentiles, read back from the interval log one second at a time; a ramp or a
//! sine, whose rate never holds, is cut into pieces (a twentieth of the window, 5 s at least),
//! each with the mean rate it asked. Sorted by the rate asked, the parts are the points of a
//! latency–throughput curve, and the knee is where it turns. A rate asked breaks when the run
//! did not keep up (achieved < 98 % of it) or its percentile (`--knee-on`, p99) rose past
//! `--knee-factor` (3) times the low-load level (the median over the three lowest rates asked);
//! the rise is the first rate that broke from which at most one in five of the rates above it
//! held, and the knee lies between the rate below it and it. A part's p99 on a busy node is set
//! by whether a GC pause fell in it, so one part with or without one must not move the knee.

use anyhow::Result;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

use crate::engine::Shape;
use crate::metrics::hdrlog;
use crate::metrics::summary::Latency;

/// One constant part of a shape, as it went.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShapePart {
    /// Seconds from the start of the measured window.
    pub from_s: f64,
    pub to_s: f64,
    /// The rate the shape asked.
    pub target_rate: f64,
    /// Operations completed in it (successes and failures) a second.
    pub achieved_rate: f64,
    /// Response time (from the intended start) of the operations completed in it.
    pub response: Latency,
    /// A constant part's steady-state verdict, judged as a run at its rate (`judge_parts`);
    /// None for a ramp's or a sine's pieces, and for parts too short to judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::steady::Class>,
}

/// The parts of `shape` (its constant parts, or pieces of a ramp or sine) in a measured window
/// that began `measured_from` after the log's first second and lasted `measured_s`, from the
/// interval log at `hlog`. A second belongs to the part its start falls in.
pub fn parts(shape: &Shape, measured_from: Duration, measured_s: f64, hlog: &Path) -> Result<Vec<ShapePart>> {
    // A shape starts with the measured window, but a replayed trace starts with its run (its
    // own first seconds are the warm-up).
    let offset = if shape.is_trace() {
        measured_from.as_secs_f64()
    } else {
        0.0
    };
    let wanted = if shape.piecewise_constant() {
        shape.constant_parts(measured_s)
    } else {
        shape.pieces(offset, measured_s, (measured_s / 20.0).round().max(5.0))
    };
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut sums: Vec<Option<Histogram<u64>>> = vec![None; wanted.len()];
    hdrlog::each(hlog, |logged| {
        // The untagged histogram of each second holds every operation's response time.
        if logged.tag.is_some() || logged.start < measured_from {
            return Ok(());
        }
        let t = (logged.start - measured_from).as_secs_f64();
        let Some(i) = wanted
            .iter()
            .position(|&(from, to, _)| t >= from - 1e-3 && t < to - 1e-3)
        else {
            return Ok(());
        };
        match &mut sums[i] {
            Some(h) => h
                .add(&logged.histogram)
                .map_err(|e| anyhow::anyhow!("{}: {e:?}", hlog.display()))?,
            h @ None => *h = Some(logged.histogram),
        }
        Ok(())
    })?;
    Ok(wanted
        .into_iter()
        .zip(sums)
        .filter_map(|((from_s, to_s, target_rate), h)| {
            let h = h?;
            // Over the part's whole length: a second in which nothing completed is not logged,
            // and must count as a second of nothing, not be left out.
            Some(ShapePart {
                from_s,
                to_s,
                target_rate,
                achieved_rate: h.len() as f64 / (to_s - from_s),
                response: Latency::of(&h),
                steady: None,
            })
        })
        .collect())
}

/// The parts of the run's shape, if it followed one and measured a window, each constant one
/// judged for steady state on its `seconds` (from the measured window's start), and their knee
/// by `rule`; an interval log that cannot be read leaves them out, saying why.
pub fn of_run(
    engine: &crate::engine::EngineConfig,
    measured: Option<crate::engine::Span>,
    log: &Path,
    rule: KneeRule,
    seconds: &[crate::steady::SecondFigures],
) -> (Vec<ShapePart>, Option<Knee>) {
    let (Some(shape), Some(span)) = (&engine.shape, measured) else {
        return (Vec::new(), None);
    };
    let mut parts = parts(shape, span.from, (span.to - span.from).as_secs_f64(), log).unwrap_or_else(|e| {
        eprintln!("The shape's parts are not summarized: {e:#}");
        Vec::new()
    });
    judge_parts(shape, &mut parts, seconds);
    // A replay's rate moves as its application's did, not to find where latency bends.
    let knee = if shape.is_trace() {
        None
    } else {
        knee(&parts, rule.percentile, rule.factor)
    };
    (parts, knee)
}

/// Judges each part of a shape whose rate holds still in its parts (steps, bursts, a trace)
/// for steady state, as a run at that rate, from the measured seconds that start in it
/// (`seconds`: times from the measured window's start). A part shorter than the verdict's
/// 20 s, and every piece of a ramp or a sine, is left unjudged.
pub fn judge_parts(shape: &Shape, parts: &mut [ShapePart], seconds: &[crate::steady::SecondFigures]) {
    if !shape.piecewise_constant() {
        return;
    }
    for p in parts {
        let mine: Vec<crate::steady::SecondFigures> = seconds
            .iter()
            .filter(|s| s.at_s >= p.from_s - 1e-3 && s.at_s < p.to_s - 1e-3)
            .map(|s| crate::steady::SecondFigures {
                at_s: s.at_s - p.from_s,
                ..*s
            })
            .collect();
        p.steady = crate::steady::judge(&mine, crate::steady::Load::Fixed).class;
    }
}

/// `Along the shape: 5,000 op/s asked, 4,998 achieved, p50 0.6 ms, p99 2.1 ms (0-120 s)`, a line
/// a part.
pub fn render(parts: &[ShapePart]) -> String {
    use crate::console::group;
    let mut text = String::from("Along the shape (each part):\n");
    for p in parts {
        text.push_str(&format!(
            "  {:>7.0}-{:<7.0} s  {:>10} op/s asked, {:>10} achieved, p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms{}\n",
            p.from_s,
            p.to_s,
            group(p.target_rate),
            group(p.achieved_rate),
            p.response.median_ms,
            p.response.p99_ms,
            p.response.max_ms,
            p.steady.map_or(String::new(), |c| format!(", window {}", c.name()))
        ));
    }
    text
}

/// Where the latency–throughput curve turns (see the module doc): the knee lies at or above
/// `held_rate` and below `broke_rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The percentile judged (`p99`) and the factor over its low-load level that marks it.
    pub percentile: Percentile,
    pub factor: f64,
    /// The lowest rate asked, and the low-load level: the median of the percentile over the
    /// three lowest rates asked (the lowest alone when the run asked fewer than four).
    pub base_rate: f64,
    pub base_ms: f64,
    /// The rate asked just below the rise (None: it began at the lowest).
    pub held_rate: Option<f64>,
    /// The first rate asked of the rise: it broke, and at most one in five of the rates asked
    /// above it held (None: no rise, so the knee is above the run's highest rate).
    pub broke_rate: Option<f64>,
    /// Why that rate broke, for people.
    pub broke_because: Option<String>,
}

/// The percentile a knee is judged on (`--knee-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Percentile {
    P50,
    P95,
    P99,
    P999,
}

impl Percentile {
    fn of(self, l: &Latency) -> f64 {
        match self {
            Percentile::P50 => l.median_ms,
            Percentile::P95 => l.p95_ms,
            Percentile::P99 => l.p99_ms,
            Percentile::P999 => l.p999_ms,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P95 => "p95",
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
        }
    }
}

/// How a knee is judged: on which percentile, at what factor over its low-load level
/// (`--knee-on`, `--knee-factor`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KneeRule {
    pub percentile: Percentile,
    pub factor: f64,
}

impl Default for KneeRule {
    fn default() -> KneeRule {
        KneeRule {
            percentile: Percentile::P99,
            factor: 3.0,
        }
    }
}

/// The share of the asked rate a part must achieve to count as keeping up.
pub const KEPT_UP: f64 = 0.98;

/// The knee of `parts` (see the module doc); None for fewer than two rates asked. A rate asked
/// by several parts (bursts, a repeating shape) holds only if each of them does.
pub fn knee(parts: &[ShapePart], percentile: Percentile, factor: f64) -> Option<Knee> {
    use crate::console::group;
    // Each rate asked: its worst part's percentile and smallest share achieved.
    let mut rates: Vec<(f64, f64, f64)> = Vec::new();
    let mut sorted: Vec<&ShapePart> = parts.iter().filter(|p| p.target_rate > 0.0).collect();
    sorted.sort_by(|a, b| a.target_rate.total_cmp(&b.target_rate));
    for p in sorted {
        let (ms, share) = (percentile.of(&p.response), p.achieved_rate / p.target_rate);
        match rates.last_mut() {
            Some(last) if last.0 == p.target_rate => (last.1, last.2) = (last.1.max(ms), last.2.min(share)),
            _ => rates.push((p.target_rate, ms, share)),
        }
    }
    if rates.len() < 2 {
        return None;
    }
    let mut low: Vec<f64> = rates
        .iter()
        .take(if rates.len() >= 4 { 3 } else { 1 })
        .map(|r| r.1)
        .collect();
    low.sort_by(f64::total_cmp);
    let base = low[low.len() / 2];
    let broke_at = |(rate, ms, share): (f64, f64, f64)| {
        if share < KEPT_UP {
            Some(format!(
                "achieved {} of {} op/s asked",
                group(share * rate),
                group(rate)
            ))
        } else if ms > factor * base {
            Some(format!(
                "{} {ms:.2} ms, {:.1}× the low-load {base:.2} ms",
                percentile.name(),
                ms / base.max(1e-9)
            ))
        } else {
            None
        }
    };
    let reasons: Vec<Option<String>> = rates.iter().map(|&r| broke_at(r)).collect();
    // The rise: the first rate that broke from which at most one in five rates above it held.
    let rise = (0..rates.len()).find(|&i| {
        let held_above = reasons[i + 1..].iter().filter(|r| r.is_none()).count();
        reasons[i].is_some() && held_above * 5 < rates.len() - i
    });
    Some(Knee {
        percentile,
        factor,
        base_rate: rates[0].0,
        base_ms: base,
        held_rate: match rise {
            Some(i) => i.checked_sub(1).map(|j| rates[j].0),
            None => rates.last().map(|r| r.0),
        },
        broke_rate: rise.map(|i| rates[i].0),
        broke_because: rise.and_then(|i| reasons[i].clone()),
    })
}

impl Knee {
    /// `Knee : between 10,000 and 12,000 op/s (p99 within 3× its low-load 1.20 ms …; at
    /// 12,000: p99 9.80 ms, 8.2× …)`.
    pub fn render(&self) -> String {
        let words = self.describe();
        if words.is_empty() {
            return words;
        }
        format!("Knee                          : {words}\n")
    }

    /// The knee in words, without the label: `between 10,000 and 12,000 op/s (…)`.
    pub fn describe(&self) -> String {
        use crate::console::group;
        let rule = format!(
            "{} within {}× its low-load {:.2} ms and achieved ≥ {:.0} % of the rate asked",
            self.percentile.name(),
            self.factor,
            self.base_ms,
            KEPT_UP * 100.0
        );
        match (self.held_rate, self.broke_rate, &self.broke_because) {
            (Some(h), Some(b), Some(why)) => format!(
                "between {} and {} op/s ({rule} up to {}; from {} on it rose: {why})",
                group(h),
                group(b),
                group(h),
                group(b)
            ),
            (None, Some(b), Some(why)) => format!("below {} op/s, the lowest rate asked ({why})", group(b)),
            (Some(h), _, _) => format!(
                "above {} op/s, the highest rate asked ({rule}, or rose at no more than one rate in five)",
                group(h)
            ),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(target: f64, achieved: f64, p99: f64) -> ShapePart {
        ShapePart {
            from_s: 0.0,
            to_s: 10.0,
            target_rate: target,
            achieved_rate: achieved,
            response: Latency::around_p99(p99),
            steady: None,
        }
    }

    #[test]
    fn each_step_of_a_shape_is_judged_steady_on_its_own_seconds() {
        let shape = Shape::parse("steps:1k,2k,3k/30s").unwrap();
        // A step's seconds at its rate, p50 1 ms; in the third, p50 climbs 1 → 5 ms halfway.
        let seconds: Vec<crate::steady::SecondFigures> = (0..90)
            .map(|t| crate::steady::SecondFigures {
                at_s: t as f64,
                ops_per_s: 1000.0 * (1 + t / 30) as f64 + if t % 2 == 0 { 7.0 } else { -7.0 },
                p50_ms: Some(if t >= 75 { 5.0 } else { 1.0 + 0.01 * (t % 3) as f64 }),
                p99_ms: Some(3.0),
            })
            .collect();
        let mut parts: Vec<ShapePart> = (0..3)
            .map(|i| ShapePart {
                from_s: 30.0 * i as f64,
                to_s: 30.0 * (i + 1) as f64,
                ..part(1000.0 * (i + 1) as f64, 1000.0 * (i + 1) as f64, 3.0)
            })
            .collect();
        judge_parts(&shape, &mut parts, &seconds);
        let classes: Vec<Option<crate::steady::Class>> = parts.iter().map(|p| p.steady).collect();
        use crate::steady::Class;
        assert_eq!(
            classes[..2],
            [Some(Class::Flat), Some(Class::Flat)],
            "each step at its own level"
        );
        assert!(matches!(classes[2], Some(c) if c != Class::Flat), "{classes:?}");
        assert!(render(&parts).contains("window flat"), "{}", render(&parts));
        // A ramp's pieces are not judged: their rate never holds.
        let mut pieces = parts.clone();
        pieces.iter_mut().for_each(|p| p.steady = None);
        judge_parts(&Shape::parse("ramp:1k..3k/90s").unwrap(), &mut pieces, &seconds);
        assert!(pieces.iter().all(|p| p.steady.is_none()));
    }

    #[test]
    fn the_knee_is_the_last_rate_that_held_with_every_lower_one() {
        let steps = [
            part(2000.0, 2000.0, 1.0),
            part(6000.0, 6000.0, 2.9),
            part(12000.0, 11990.0, 9.0),
            part(16000.0, 13000.0, 80.0),
        ];
        let k = knee(&steps, Percentile::P99, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(6000.0), Some(12000.0)));
        // The low-load level: the median of the three lowest rates' p99 (1.0, 2.9, 9.0).
        assert_eq!(k.base_ms, 2.9);
        assert!(k.broke_because.as_deref().unwrap().contains("3.1×"), "{k:?}");
        assert!(k.render().contains("between 6,000 and 12,000 op/s"), "{}", k.render());
        // In any order, and at a looser factor the next step holds too.
        let mut shuffled = steps.clone();
        shuffled.reverse();
        assert_eq!(knee(&shuffled, Percentile::P99, 3.0), Some(k));
        let loose = knee(&steps, Percentile::P99, 10.0).unwrap();
        assert_eq!((loose.held_rate, loose.broke_rate), (Some(12000.0), Some(16000.0)));
        assert!(loose.broke_because.unwrap().starts_with("achieved 13,000 of 16,000"));
    }

    #[test]
    fn a_run_that_never_turned_or_never_kept_up_says_so() {
        let fine = [part(1000.0, 1000.0, 1.0), part(2000.0, 1999.0, 1.5)];
        let k = knee(&fine, Percentile::P99, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(2000.0), None));
        assert!(k.render().contains("above 2,000 op/s"), "{}", k.render());
        let behind = [part(1000.0, 900.0, 1.0), part(2000.0, 1000.0, 1.5)];
        let k = knee(&behind, Percentile::P99, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (None, Some(1000.0)));
        assert!(k.render().contains("below 1,000 op/s"), "{}", k.render());
        // One rate (a trace that never moved), or nothing: no curve to turn.
        assert_eq!(knee(&[part(1000.0, 1000.0, 1.0)], Percentile::P99, 3.0), None);
        assert_eq!(knee(&[], Percentile::P99, 3.0), None);
    }

    #[test]
    fn a_rate_asked_twice_holds_only_if_both_parts_did() {
        // Bursts: base, peak, base, peak; the second peak fell behind.
        let bursts = [
            part(1000.0, 1000.0, 1.0),
            part(5000.0, 5000.0, 2.0),
            part(1000.0, 1000.0, 1.1),
            part(5000.0, 4000.0, 2.0),
        ];
        let k = knee(&bursts, Percentile::P99, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(1000.0), Some(5000.0)));
    }

    #[test]
    fn one_part_with_or_without_a_pause_does_not_move_the_knee() {
        // p99 over each part is set by whether a GC pause fell in it: one unlucky part below the
        // rise, and one lucky part inside it.
        let p99 = [1.0, 1.2, 60.0, 1.1, 1.3, 1.2, 70.0, 65.0, 1.5, 80.0, 90.0, 85.0];
        let parts: Vec<ShapePart> = p99
            .iter()
            .enumerate()
            .map(|(i, &ms)| part(1000.0 * (i + 1) as f64, 1000.0 * (i + 1) as f64, ms))
            .collect();
        let k = knee(&parts, Percentile::P99, 3.0).unwrap();
        assert_eq!(k.base_ms, 1.2, "the median of 1.0, 1.2 and 60");
        assert_eq!(
            (k.held_rate, k.broke_rate),
            (Some(6000.0), Some(7000.0)),
            "{}",
            k.render()
        );
        // On p50 (a third of p99 here) at the same factor, the same rise.
        assert_eq!(knee(&parts, Percentile::P50, 3.0).unwrap().broke_rate, Some(7000.0));
        // A deliberately wrong rule (the first part that broke) would say 2,000-3,000.
        assert_ne!(k.held_rate, Some(2000.0));
    }
}
