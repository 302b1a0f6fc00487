//! A run's measured window cut into equal consecutive sections, each with its own rate and
//! percentiles, read back from its interval log in one pass: what sectioning
//! (`stats::sectioning`) needs to put an interval on the run's own figures. Memory stays one
//! histogram per section whatever the window's length.

use anyhow::Result;
use hdrhistogram::Histogram;
use std::path::Path;

use super::RunResult;
use crate::metrics::hdrlog::{self, TagKind};
use crate::metrics::recorder::new_histogram;

/// How many sections a window is cut into: 9 degrees of freedom, and sections of 6 s in a
/// 60 s window, long enough for a p99.9 of a few thousand operations a second.
pub const SECTIONS: usize = 10;

/// One section's figures (every due operation's response time, as the summary's).
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub ops_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
}

struct Acc {
    secs: f64,
    ok: u64,
    all: Histogram<u64>,
}

/// The run's window in `n` sections, or None when it has fewer whole seconds than sections
/// (or a section saw no operation).
pub fn of(dir: &Path, r: &RunResult, n: usize) -> Result<Option<Vec<Section>>> {
    let log = dir.join(&r.files.hdr_log);
    let seconds = hdrlog::interval_count(&log)?;
    if seconds < n || n == 0 {
        return Ok(None);
    }
    let mut acc: Vec<Acc> = (0..n)
        .map(|_| Acc {
            secs: 0.0,
            ok: 0,
            all: new_histogram(),
        })
        .collect();
    // Lines of one interval share its start and come together; the k-th interval of `seconds`
    // goes to section k · n / seconds.
    let (mut k, mut last) = (0usize, None);
    hdrlog::each(&log, |l| {
        if last != Some(l.start) {
            if last.is_some() {
                k += 1;
            }
            last = Some(l.start);
            if l.length.as_secs_f64() >= 0.5 {
                acc[(k * n / seconds).min(n - 1)].secs += l.length.as_secs_f64();
            }
        }
        if l.length.as_secs_f64() < 0.5 {
            // A partial last second, left out as the steady-state verdict leaves it out.
            return Ok(());
        }
        let a = &mut acc[(k * n / seconds).min(n - 1)];
        match l.tag.as_deref() {
            None => a
                .all
                .add(&l.histogram)
                .map_err(|e| anyhow::anyhow!("{}: {e:?}", log.display()))?,
            Some(t) if TagKind::Ok.is(t) => a.ok += l.histogram.len(),
            _ => {}
        }
        Ok(())
    })?;
    if acc.iter().any(|a| a.secs <= 0.0 || a.all.is_empty()) {
        return Ok(None);
    }
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e6;
    Ok(Some(
        acc.iter()
            .map(|a| Section {
                ops_per_s: a.ok as f64 / a.secs,
                p50_ms: ms(&a.all, 0.5),
                p99_ms: ms(&a.all, 0.99),
                p999_ms: ms(&a.all, 0.999),
            })
            .collect(),
    ))
}
