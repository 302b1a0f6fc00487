//! A run along a rate shape, summarized part by part: each constant part of the shape in the
//! measured window (a step, a burst and the base between bursts, a trace's run of one rate) gets
//! the rate it asked, the rate achieved and its response-time percentiles, read back from the
//! interval log one second at a time, so a steps run gives the points of a latency–throughput
//! curve. Ramps and sines have no constant part: their seconds are in the CSV.

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

/// The constant parts of `shape` in a measured window that began `measured_from` after the log's
/// first second and lasted `measured_s`, from the interval log at `hlog`. A second belongs to
/// the part its start falls in.
pub fn parts(shape: &Shape, measured_from: Duration, measured_s: f64, hlog: &Path) -> Result<Vec<ShapePart>> {
    let wanted = shape.constant_parts(measured_s);
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

/// The parts of the run's shape, if it followed one with constant parts and measured a window;
/// an interval log that cannot be read leaves them out, saying why.
pub fn of_run(
    engine: &crate::engine::EngineConfig,
    measured: Option<crate::engine::Span>,
    log: &Path,
) -> Vec<ShapePart> {
    let (Some(shape), Some(span)) = (&engine.shape, measured) else {
        return Vec::new();
    };
    parts(shape, span.from, (span.to - span.from).as_secs_f64(), log).unwrap_or_else(|e| {
        eprintln!("The shape's parts are not summarized: {e:#}");
        Vec::new()
    })
}

/// `Along the shape: 5,000 op/s asked, 4,998 achieved, p50 0.6 ms, p99 2.1 ms (0-120 s)`, a line
/// a part.
pub fn render(parts: &[ShapePart]) -> String {
    use crate::console::group;
    let mut text = String::from("Along the shape (each constant part):\n");
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
