//! The merged interval log and CSV: every loader's histograms added per wall-clock second, the
//! seconds not every loader reported, and the per-second series of the span all measured.

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::measure::result::{CSV, HDR_LOG, PartialSpan};
use crate::metrics::csv::{CsvLog, row};
use crate::metrics::hdrlog::{HdrLog, TagKind, decode};
use crate::metrics::recorder::new_histogram;

use super::loader::{Entry, Loader};

/// The wall-clock span (after `base_ms`, in seconds) in which every loader measured, if any.
pub fn measured_span(loaders: &[Loader], base_ms: i64) -> Option<(f64, f64)> {
    let windows: Vec<(i64, i64)> = loaders.iter().map(Loader::span_ms).collect::<Option<_>>()?;
    let from = windows.iter().map(|w| w.0).max()?;
    let to = windows.iter().map(|w| w.1).min()?;
    (to > from).then(|| ((from - base_ms) as f64 / 1000.0, (to - base_ms) as f64 / 1000.0))
}

/// Writes the merged interval log and CSV, and returns the per-second series of the seconds in
/// `window` (after `base_ms`) for the steady-state verdict.
pub fn write_logs(
    loaders: &[Loader],
    entries: &[Vec<Entry<'_>>],
    out: &Path,
    base_ms: i64,
    window: Option<(f64, f64)>,
) -> Result<Vec<crate::steady::SecondFigures>> {
    let first = &loaders[0];
    let ops: Vec<String> = first
        .result
        .summary
        .as_ref()
        .expect("checked")
        .per_op
        .iter()
        .map(|o| o.name.clone())
        .collect();
    let tables = tables(&first.dir.join(&first.result.files.csv));
    // Tags in a fixed order: the untagged all-operations histogram first, then each
    // operation's measures as the loaders wrote them.
    let mut order: Vec<Option<&str>> = vec![None];
    for e in entries.iter().flatten() {
        if !order.contains(&e.tag) {
            order.push(e.tag);
        }
    }
    let mut by_second: BTreeMap<i64, Vec<&Entry<'_>>> = BTreeMap::new();
    for e in entries.iter().flatten() {
        by_second.entry(e.at_ms).or_default().push(e);
    }
    let base = UNIX_EPOCH + Duration::from_millis(base_ms as u64);
    let mut log = HdrLog::create(&out.join(HDR_LOG), base)?;
    let mut csv = CsvLog::create(
        std::fs::File::create(out.join(CSV)).with_context(|| format!("cannot create {}", out.join(CSV).display()))?,
        "merged".into(),
    )?;
    let mut sums: Vec<Histogram<u64>> = order.iter().map(|_| new_histogram()).collect();
    let mut seconds = Vec::new();
    for (at_ms, list) in by_second {
        sums.iter_mut().for_each(Histogram::reset);
        let length = list[0].length;
        for e in list {
            let i = order
                .iter()
                .position(|t| *t == e.tag)
                .expect("every tag is in the order");
            let h = decode(e.encoded).with_context(|| format!("a histogram at {at_ms} ms"))?;
            sums[i]
                .add(&h)
                .map_err(|e| anyhow::anyhow!("cannot add histograms: {e:?}"))?;
        }
        let start = Duration::from_millis((at_ms - base_ms) as u64);
        // The rate asked of them all: the loaders' own, added, when each asked one that second.
        let target = loaders.iter().map(|l| l.targets.get(&at_ms)).sum::<Option<f64>>();
        if let Some(rate) = target {
            log.write_target(start, length, rate)?;
        }
        for (tag, h) in order.iter().zip(&sums) {
            if !h.is_empty() {
                log.write(*tag, h, start, length)?;
            }
        }
        let when = humantime::format_rfc3339_millis(base + start + length);
        let empty = new_histogram();
        for op in &ops {
            let tag = format!("{op}.response");
            let h = order
                .iter()
                .position(|t| *t == Some(tag.as_str()))
                .map_or(&empty, |i| &sums[i]);
            let table = tables.get(op).map_or("", String::as_str);
            row(
                csv.line(),
                &when,
                "merged",
                (table, op),
                h,
                None,
                (target, length.as_secs_f64()),
            )?;
        }
        csv.write_line()?;
        let at_s = start.as_secs_f64();
        if let Some((from, to)) = window
            && at_s >= from - 1e-6
            && at_s + length.as_secs_f64() <= to + 1e-6
        {
            let ok: u64 = order
                .iter()
                .zip(&sums)
                .filter(|(t, _)| t.is_some_and(|t| TagKind::Ok.is(t)))
                .map(|(_, h)| h.len())
                .sum();
            let all = &sums[0];
            let q = |p: f64| (!all.is_empty()).then(|| all.value_at_quantile(p) as f64 / 1e6);
            seconds.push(crate::steady::SecondFigures {
                at_s: at_s - from,
                ops_per_s: ok as f64 / length.as_secs_f64(),
                p50_ms: q(0.5),
                p99_ms: q(0.99),
            });
        }
    }
    Ok(seconds)
}

/// Each operation type's table, from a loader's CSV.
fn tables(csv: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(csv).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.splitn(5, ',').collect();
            (f.len() == 5).then(|| (f[3].to_string(), f[2].to_string()))
        })
        .collect()
}

/// The runs of seconds in which only some loaders reported, from each loader's slice and the
/// interval starts (epoch ms) it reported.
pub fn partial(loaders: &[(String, &BTreeSet<i64>)], base_ms: i64, interval_ms: i64) -> Vec<PartialSpan> {
    let all: BTreeSet<i64> = loaders.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    let mut spans: Vec<PartialSpan> = Vec::new();
    let mut last_at = None;
    for at in all {
        let missing: Vec<String> = loaders
            .iter()
            .filter(|(_, s)| !s.contains(&at))
            .map(|(slice, _)| slice.clone())
            .collect();
        if missing.is_empty() {
            continue;
        }
        let from_s = (at - base_ms) as f64 / 1000.0;
        let to_s = from_s + interval_ms as f64 / 1000.0;
        match spans.last_mut() {
            Some(s) if last_at == Some(at - interval_ms) && s.missing == missing => s.to_s = to_s,
            _ => spans.push(PartialSpan { from_s, to_s, missing }),
        }
        last_at = Some(at);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_not_every_loader_reported_are_spans_naming_who_was_missing() {
        let secs = |r: std::ops::Range<i64>| r.map(|s| 10_000 + s * 1_000).collect::<BTreeSet<i64>>();
        let (a, b, c) = (secs(0..20), secs(2..20), secs(0..15));
        // b started 2 s late; c stopped 5 s early; a gap in c at 8 s.
        let mut c = c;
        c.remove(&18_000);
        let loaders = vec![
            ("1/3".to_string(), &a),
            ("2/3".to_string(), &b),
            ("3/3".to_string(), &c),
        ];
        let spans = partial(&loaders, 10_000, 1_000);
        let span = |from: f64, to: f64, missing: &[&str]| PartialSpan {
            from_s: from,
            to_s: to,
            missing: missing.iter().map(|m| m.to_string()).collect(),
        };
        assert_eq!(
            spans,
            vec![
                span(0.0, 2.0, &["2/3"]),
                span(8.0, 9.0, &["3/3"]),
                span(15.0, 20.0, &["3/3"])
            ]
        );
        assert!(partial(&loaders[..1], 10_000, 1_000).is_empty());
    }
}
