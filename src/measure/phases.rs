//! A run along a rate shape, summarized part by part, and the latency–throughput curve with
//! its knee. Each constant part of the shape in the measured window (a step, a burst and the base
//! between bursts, a trace's run of one rate) gets the rate it asked, the rate achieved and its
//! response-time percentiles, read back from the interval log one second at a time; a ramp or a
//! sine, whose rate never holds, is cut into pieces (a twentieth of the window, 5 s at least),
//! each with the mean rate it asked. Sorted by the rate asked, the parts are the points of a
//! latency–throughput curve, and the knee is where it turns: the highest rate asked at which the
//! run kept up (achieved ≥ 98 % of it) with p99 within `--knee-factor` (3) times the p99 at
//! the lowest rate, and so did every lower rate; the knee lies between it and the next rate.

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
}

/// The parts of `shape` (its constant parts, or pieces of a ramp or sine) in a measured window
/// that began `measured_from` after the log's first second and lasted `measured_s`, from the
/// interval log at `hlog`. A second belongs to the part its start falls in.
pub fn parts(shape: &Shape, measured_from: Duration, measured_s: f64, hlog: &Path) -> Result<Vec<ShapePart>> {
    let wanted = if shape.piecewise_constant() {
        shape.constant_parts(measured_s)
    } else {
        shape.pieces(measured_s, (measured_s / 20.0).round().max(5.0))
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
            })
        })
        .collect())
}

/// The parts of the run's shape, if it followed one and measured a window, and their knee at
/// `knee_factor`; an interval log that cannot be read leaves them out, saying why.
pub fn of_run(
    engine: &crate::engine::EngineConfig,
    measured: Option<crate::engine::Span>,
    log: &Path,
    knee_factor: f64,
) -> (Vec<ShapePart>, Option<Knee>) {
    let (Some(shape), Some(span)) = (&engine.shape, measured) else {
        return (Vec::new(), None);
    };
    let parts = parts(shape, span.from, (span.to - span.from).as_secs_f64(), log).unwrap_or_else(|e| {
        eprintln!("The shape's parts are not summarized: {e:#}");
        Vec::new()
    });
    let knee = knee(&parts, knee_factor);
    (parts, knee)
}

/// `Along the shape: 5,000 op/s asked, 4,998 achieved, p50 0.6 ms, p99 2.1 ms (0-120 s)`, a line
/// a part.
pub fn render(parts: &[ShapePart]) -> String {
    use crate::console::group;
    let mut text = String::from("Along the shape (each part):\n");
    for p in parts {
        text.push_str(&format!(
            "  {:>7.0}-{:<7.0} s  {:>10} op/s asked, {:>10} achieved, p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms\n",
            p.from_s,
            p.to_s,
            group(p.target_rate),
            group(p.achieved_rate),
            p.response.median_ms,
            p.response.p99_ms,
            p.response.max_ms
        ));
    }
    text
}

/// Where the latency–throughput curve turns (see the module doc): the knee lies at or above
/// `held_rate` and below `broke_rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The factor over the low-load p99 that marks it.
    pub factor: f64,
    /// The lowest rate asked and its p99: the low-load level.
    pub base_rate: f64,
    pub base_p99_ms: f64,
    /// The highest rate asked that held, with every lower one (None: not even the lowest).
    pub held_rate: Option<f64>,
    /// The lowest rate asked that did not hold (None: every rate held, so the knee is above
    /// the run's highest).
    pub broke_rate: Option<f64>,
    /// Why that rate did not hold, for people.
    pub broke_because: Option<String>,
}

/// The share of the asked rate a part must achieve to count as keeping up.
pub const KEPT_UP: f64 = 0.98;

/// The knee of `parts` at `factor` times the low-load p99; None for fewer than two rates asked.
/// A rate asked by several parts (bursts, a repeating shape) holds only if each of them does.
pub fn knee(parts: &[ShapePart], factor: f64) -> Option<Knee> {
    let mut sorted: Vec<&ShapePart> = parts.iter().filter(|p| p.target_rate > 0.0).collect();
    sorted.sort_by(|a, b| a.target_rate.total_cmp(&b.target_rate));
    let lowest = *sorted.first()?;
    if sorted.last()?.target_rate <= lowest.target_rate {
        return None;
    }
    let base = sorted
        .iter()
        .filter(|p| p.target_rate == lowest.target_rate)
        .map(|p| p.response.p99_ms)
        .fold(0.0, f64::max);
    let why_not = |p: &ShapePart| {
        if p.achieved_rate < KEPT_UP * p.target_rate {
            Some(format!(
                "achieved {} of {} op/s asked",
                crate::console::group(p.achieved_rate),
                crate::console::group(p.target_rate)
            ))
        } else if p.response.p99_ms > factor * base {
            Some(format!(
                "p99 {:.2} ms, {:.1}× the {:.2} ms at {} op/s",
                p.response.p99_ms,
                p.response.p99_ms / base.max(1e-9),
                base,
                crate::console::group(lowest.target_rate)
            ))
        } else {
            None
        }
    };
    let broke = sorted.iter().find_map(|p| Some((p.target_rate, why_not(p)?)));
    let below = |r: f64| sorted.iter().map(|p| p.target_rate).rfind(|&x| x < r);
    Some(Knee {
        factor,
        base_rate: lowest.target_rate,
        base_p99_ms: base,
        // Every part before the first that did not hold did: the highest rate below it.
        held_rate: match &broke {
            Some((r, _)) => below(*r),
            None => sorted.last().map(|p| p.target_rate),
        },
        broke_rate: broke.as_ref().map(|b| b.0),
        broke_because: broke.map(|b| b.1),
    })
}

impl Knee {
    /// `Knee: between 10,000 and 12,000 op/s (p99 within 3× its 1.20 ms at 2,000 op/s up to
    /// 10,000; at 12,000: p99 9.80 ms, 8.2× …)`.
    pub fn render(&self) -> String {
        use crate::console::group;
        let rule = format!(
            "p99 within {}× its {:.2} ms at {} op/s, and achieved ≥ {:.0} % of the rate asked",
            self.factor,
            self.base_p99_ms,
            group(self.base_rate),
            KEPT_UP * 100.0
        );
        match (self.held_rate, self.broke_rate, &self.broke_because) {
            (Some(h), Some(b), Some(why)) => format!(
                "Knee                          : between {} and {} op/s ({rule} up to {}; at {}: {why})\n",
                group(h),
                group(b),
                group(h),
                group(b)
            ),
            (None, Some(b), Some(why)) => format!(
                "Knee                          : below {} op/s, the lowest rate asked ({why})\n",
                group(b)
            ),
            (Some(h), _, _) => format!(
                "Knee                          : above {} op/s, the highest rate asked ({rule} at every rate)\n",
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
            response: Latency {
                count: 1,
                mean_ms: p99 / 3.0,
                median_ms: p99 / 3.0,
                p95_ms: p99 / 2.0,
                p99_ms: p99,
                p999_ms: p99 * 2.0,
                max_ms: p99 * 3.0,
            },
        }
    }

    #[test]
    fn the_knee_is_the_last_rate_that_held_with_every_lower_one() {
        let steps = [
            part(2000.0, 2000.0, 1.0),
            part(6000.0, 6000.0, 2.9),
            part(12000.0, 11990.0, 9.0),
            part(16000.0, 13000.0, 80.0),
        ];
        let k = knee(&steps, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(6000.0), Some(12000.0)));
        assert!(k.broke_because.as_deref().unwrap().contains("9.0×"), "{k:?}");
        assert!(k.render().contains("between 6,000 and 12,000 op/s"), "{}", k.render());
        // In any order, and at a looser factor the next step holds too.
        let mut shuffled = steps.clone();
        shuffled.reverse();
        assert_eq!(knee(&shuffled, 3.0), Some(k));
        let loose = knee(&steps, 10.0).unwrap();
        assert_eq!((loose.held_rate, loose.broke_rate), (Some(12000.0), Some(16000.0)));
        assert!(loose.broke_because.unwrap().starts_with("achieved 13,000 of 16,000"));
    }

    #[test]
    fn a_run_that_never_turned_or_never_kept_up_says_so() {
        let fine = [part(1000.0, 1000.0, 1.0), part(2000.0, 1999.0, 1.5)];
        let k = knee(&fine, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(2000.0), None));
        assert!(k.render().contains("above 2,000 op/s"), "{}", k.render());
        let behind = [part(1000.0, 900.0, 1.0), part(2000.0, 1000.0, 1.5)];
        let k = knee(&behind, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (None, Some(1000.0)));
        assert!(k.render().contains("below 1,000 op/s"), "{}", k.render());
        // One rate (a trace that never moved), or nothing: no curve to turn.
        assert_eq!(knee(&[part(1000.0, 1000.0, 1.0)], 3.0), None);
        assert_eq!(knee(&[], 3.0), None);
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
        let k = knee(&bursts, 3.0).unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(1000.0), Some(5000.0)));
    }
}
