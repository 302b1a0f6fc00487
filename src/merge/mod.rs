//! Merging loaders' results (`caplab merge`): several `caplab run --loader i/n` processes, on
//! one machine or many, each wrote a results directory; this writes one that holds them all,
//! which `report`, `compare` and experiments read like any run's.
//!
//! Merging is exact: the interval logs' histograms are added interval by interval on their
//! wall-clock start times (every loader's intervals are whole wall-clock seconds), and the
//! summary's percentiles come from the loaders' whole-window histograms added together, never
//! from averaged percentiles. Counts (operations, rows, errors by kind) are summed; rates are
//! summed, each loader's over its own window. Seconds in which only some loaders reported are
//! in the merged figures and named in result.json's `merged.partial`. Loaders that ran
//! different workloads or schemas, whose intervals do not share a grid, or that ran the same
//! slice, are refused before anything is written.
//!
//! Not merged: the service-level verdict (judge the merged run with `compare`, or read each
//! loader's) and server profiles. The server's facts are the first loader's (every loader
//! watched the same cluster).

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::engine::LoaderSlice;
use crate::measure::result::{
    CSV, HDR_LOG, LoaderRecord, MergeRecord, PartialSpan, RunResult, RunStatus, WarmupRecord,
};
use crate::metrics::csv::{CsvLog, row};
use crate::metrics::hdrlog::{Encoded, HdrLog, TagKind, decode};
use crate::metrics::recorder::new_histogram;
use crate::metrics::summary::{Latency, OpSummary, Summary};

/// One loader's results, read and checked.
struct Loader {
    dir: PathBuf,
    result: RunResult,
    slice: LoaderSlice,
    /// Its interval log's text and base time (epoch milliseconds).
    log: Vec<u8>,
    base_ms: i64,
    /// The start (epoch ms) of every interval its CSV has a row for: the seconds it reported.
    seconds: BTreeSet<i64>,
}

/// One histogram of a loader's log, placed on the wall clock.
struct Entry<'a> {
    at_ms: i64,
    length: Duration,
    tag: Option<&'a str>,
    encoded: &'a str,
}

/// Merges the loaders' results in `dirs` into `out` (created; caplab's result files in it are
/// replaced only with `force`), and returns the merged result.
pub fn merge(dirs: &[PathBuf], out: &Path, force: bool) -> Result<RunResult> {
    if dirs.len() < 2 {
        bail!("merge needs the results directories of at least two loaders (caplab run --loader i/n)");
    }
    let mut loaders = dirs.iter().map(|d| Loader::read(d)).collect::<Result<Vec<_>>>()?;
    loaders.sort_by_key(|l| l.slice);
    check(&loaders)?;
    let interval_ms = (loaders[0].result.config.engine.interval_s * 1000.0).round() as i64;
    check_grid(
        &loaders.iter().map(|l| (l.name(), l.base_ms)).collect::<Vec<_>>(),
        interval_ms,
    )?;

    crate::measure::out::claim(out, force)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let base_ms = loaders.iter().map(|l| l.base_ms).min().expect("two loaders");
    let entries = loaders.iter().map(|l| l.entries()).collect::<Result<Vec<_>>>()?;
    let mut merged = merged_result(&loaders, dirs, base_ms)?;
    let window = measured_window(&loaders, base_ms);
    let seconds = write_logs(&loaders, &entries, out, base_ms, window)?;
    let reported: Vec<(String, &BTreeSet<i64>)> = loaders.iter().map(|l| (l.slice.to_string(), &l.seconds)).collect();
    merged.merged.as_mut().expect("set").partial = partial(&reported, base_ms, interval_ms);
    if let Some((from, _)) = window {
        let mut verdict = crate::steady::judge(&seconds);
        if merged.warmup.as_ref().is_some_and(|w| w.settled == Some(false)) {
            verdict.steady = false;
            verdict
                .summary
                .push_str("; a loader's warm-up did not settle within its maximum");
        }
        merged.steady_state = Some(verdict);
        if let Some(w) = &mut merged.warmup {
            w.length_s = Some(from);
        }
    }
    merged.save(out)?;
    Ok(merged)
}

impl Loader {
    fn read(dir: &Path) -> Result<Loader> {
        let result = RunResult::load(dir)?;
        let name = dir.display();
        if result.summary.is_none() {
            bail!(
                "{name}: this loader never finished (status {}): it has no summary to merge; leave it out, or run it again",
                result.status.name()
            );
        }
        let slice = LoaderSlice::parse(&result.config.engine.loader)
            .map_err(|e| anyhow::anyhow!("{name}: its loader slice: {e}"))?;
        let log_path = dir.join(&result.files.hdr_log);
        let log = std::fs::read(&log_path).with_context(|| format!("cannot read {}", log_path.display()))?;
        let base_ms =
            base_time_ms(&log).with_context(|| format!("{}: no BaseTime or StartTime", log_path.display()))?;
        let csv_path = dir.join(&result.files.csv);
        let csv = std::fs::read_to_string(&csv_path).with_context(|| format!("cannot read {}", csv_path.display()))?;
        let interval_ms = (result.config.engine.interval_s * 1000.0).round() as i64;
        let mut seconds = BTreeSet::new();
        for line in csv.lines().skip(1) {
            let when = line.split(',').next().unwrap_or_default();
            let end = humantime::parse_rfc3339_weak(when)
                .with_context(|| format!("{}: '{when}' is not a time", csv_path.display()))?;
            seconds.insert(epoch_ms(end) - interval_ms);
        }
        Ok(Loader {
            dir: dir.to_path_buf(),
            result,
            slice,
            log,
            base_ms,
            seconds,
        })
    }

    /// Every histogram of its log, on the wall clock.
    fn entries(&self) -> Result<Vec<Entry<'_>>> {
        use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
        let mut out = Vec::new();
        for entry in IntervalLogIterator::new(&self.log) {
            let entry =
                entry.map_err(|e| anyhow::anyhow!("{}: not an interval log line: {e:?}", self.dir.display()))?;
            if let LogEntry::Interval(h) = entry {
                out.push(Entry {
                    at_ms: self.base_ms + h.start_timestamp().as_millis() as i64,
                    length: h.duration(),
                    tag: h.tag().map(|t| t.as_str()),
                    encoded: h.encoded_histogram(),
                });
            }
        }
        Ok(out)
    }

    fn name(&self) -> String {
        format!("{} (loader {})", self.dir.display(), self.slice)
    }

    /// Its measured window on the wall clock (epoch ms), when it measured anything.
    fn window_ms(&self) -> Option<(i64, i64)> {
        let start = humantime::parse_rfc3339_weak(&self.result.started_at).ok()?;
        let from = self.result.warmup.as_ref()?.length_s?;
        let length = self.result.summary.as_ref()?.operation_time_s;
        let from_ms = epoch_ms(start) + (from * 1000.0).round() as i64;
        Some((from_ms, from_ms + (length * 1000.0).round() as i64))
    }
}

fn epoch_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}

fn base_time_ms(log: &[u8]) -> Option<i64> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let (mut base, mut start) = (None, None);
    for entry in IntervalLogIterator::new(log).flatten() {
        match entry {
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::Interval(_) => break,
        }
    }
    base.or(start).map(|t| t.as_millis() as i64)
}

/// Refuses loaders that did not run the same thing as one load, naming the difference.
fn check(loaders: &[Loader]) -> Result<()> {
    let first = &loaders[0];
    let json = |l: &Loader| serde_json::to_value(&l.result.config.workload).unwrap_or_default();
    for l in &loaders[1..] {
        let (a, b) = (first.name(), l.name());
        if l.result.workload != first.result.workload || json(l) != json(first) {
            let what = differing_keys(&json(first), &json(l));
            bail!(
                "{a} and {b} ran different workloads ({} vs {}{}): merge only loaders of one run",
                first.result.workload,
                l.result.workload,
                if what.is_empty() {
                    String::new()
                } else {
                    format!("; they differ in {what}")
                }
            );
        }
        if l.result.schema != first.result.schema {
            bail!("{a} and {b} ran against different schemas: merge only loaders of one run against one cluster");
        }
        if l.slice == first.slice || loaders.iter().filter(|o| o.slice == l.slice).count() > 1 {
            bail!(
                "loader {} is given twice ({b}): give each loader's results once",
                l.slice
            );
        }
        if l.result.config.engine.loader.split('/').nth(1) != first.result.config.engine.loader.split('/').nth(1) {
            bail!(
                "{a} and {b} split the work differently ({} and {}): merge loaders of one --loader i/n split",
                first.slice,
                l.slice
            );
        }
        if l.result.config.engine.interval_s != first.result.config.engine.interval_s {
            bail!(
                "{a} and {b} have different interval lengths ({} s and {} s): their seconds cannot be added",
                first.result.config.engine.interval_s,
                l.result.config.engine.interval_s
            );
        }
    }
    Ok(())
}

fn differing_keys(a: &serde_json::Value, b: &serde_json::Value) -> String {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
        _ => String::new(),
    }
}

/// Refuses loaders whose intervals start at different offsets into the interval (no common
/// grid: their seconds would be added across two different seconds). `bases` are each
/// loader's name and log base time (epoch ms).
fn check_grid(bases: &[(String, i64)], interval_ms: i64) -> Result<()> {
    let offset = |base: i64| base.rem_euclid(interval_ms.max(1));
    let first = offset(bases[0].1);
    for (name, base) in &bases[1..] {
        let o = offset(*base);
        let apart = (o - first).abs().min(interval_ms - (o - first).abs());
        if apart > 1 {
            bail!(
                "{} and {name} do not share an interval grid: their intervals start {first} ms and {o} ms into \
                 the interval. Loaders of one run start on whole wall-clock seconds (caplab does this); these were not \
                 written so",
                bases[0].0,
            );
        }
    }
    Ok(())
}

/// The wall-clock span (after `base_ms`, in seconds) in which every loader measured, if any.
fn measured_window(loaders: &[Loader], base_ms: i64) -> Option<(f64, f64)> {
    let windows: Vec<(i64, i64)> = loaders.iter().map(Loader::window_ms).collect::<Option<_>>()?;
    let from = windows.iter().map(|w| w.0).max()?;
    let to = windows.iter().map(|w| w.1).min()?;
    (to > from).then(|| ((from - base_ms) as f64 / 1000.0, (to - base_ms) as f64 / 1000.0))
}

/// Writes the merged interval log and CSV, and returns the per-second series of the seconds in
/// `window` (after `base_ms`) for the steady-state verdict.
fn write_logs(
    loaders: &[Loader],
    entries: &[Vec<Entry<'_>>],
    out: &Path,
    base_ms: i64,
    window: Option<(f64, f64)>,
) -> Result<Vec<crate::steady::Second>> {
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
            row(csv.line(), &when, "merged", table, op, h, None)?;
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
            seconds.push(crate::steady::Second {
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
fn partial(loaders: &[(String, &BTreeSet<i64>)], base_ms: i64, interval_ms: i64) -> Vec<PartialSpan> {
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

/// The merged result.json: the first loader's configuration, the loaders' summaries and
/// histograms added, the list of loaders.
fn merged_result(loaders: &[Loader], dirs: &[PathBuf], base_ms: i64) -> Result<RunResult> {
    let first = &loaders[0].result;
    let mut r = first.clone();
    let results: Vec<&RunResult> = loaders.iter().map(|l| &l.result).collect();
    r.status = if results.iter().any(|x| x.status == RunStatus::Failed) {
        RunStatus::Failed
    } else if results.iter().any(|x| x.status == RunStatus::Interrupted) {
        RunStatus::Interrupted
    } else {
        RunStatus::Completed
    };
    r.interrupted_by = results.iter().find_map(|x| x.interrupted_by.clone());
    let reasons: Vec<String> = loaders
        .iter()
        .filter_map(|l| l.result.end_reason.as_ref().map(|e| format!("loader {}: {e}", l.slice)))
        .collect();
    r.end_reason = (!reasons.is_empty()).then(|| reasons.join("; "));
    r.started_at = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(base_ms as u64)).to_string();
    r.finished_at = results.iter().filter_map(|x| x.finished_at.clone()).max();
    r.command = std::iter::once("caplab merge".to_string())
        .chain(dirs.iter().map(|d| d.display().to_string()))
        .collect();
    r.config.engine.rate = results.iter().map(|x| x.config.engine.rate).sum();
    r.config.engine.loader = format!("all of {}", loaders.len());
    let hosts: Vec<String> = results.iter().map(|x| x.environment.client_host.clone()).collect();
    r.environment.client_host = hosts.join(",");
    r.environment.cores = results.iter().map(|x| x.environment.cores).sum();
    r.environment.ram_bytes = results.iter().map(|x| x.environment.ram_bytes).sum();
    r.histograms = BTreeMap::new();
    for x in &results {
        if x.histograms.is_empty() {
            bail!(
                "{}'s result.json has no histograms (it was written compact, on a full disk): its percentiles cannot be \
                 merged exactly",
                x.workload
            );
        }
        for (k, Encoded(h)) in &x.histograms {
            let into = r
                .histograms
                .entry(k.clone())
                .or_insert_with(|| Encoded(new_histogram()));
            into.0
                .add(h)
                .map_err(|e| anyhow::anyhow!("cannot add histograms: {e:?}"))?;
        }
    }
    r.summary = Some(merged_summary(&results, &r.histograms));
    r.sla = None;
    r.profile = None;
    // A fault schedule ran in one loader, and its judgement was on that loader's seconds.
    r.faults = Vec::new();
    r.availability = None;
    r.retries = results.iter().map(|x| x.retries).sum();
    r.started_ops = results.iter().map(|x| x.started_ops).sum();
    r.incomplete = loaders
        .iter()
        .flat_map(|l| {
            l.result.incomplete.iter().map(|i| crate::measure::sinks::Incomplete {
                file: format!("loader {}: {}", l.slice, i.file),
                reason: i.reason.clone(),
            })
        })
        .collect();
    r.warmup = first.warmup.as_ref().map(|w| WarmupRecord {
        asked: w.asked.clone(),
        length_s: None,
        settled: if results
            .iter()
            .any(|x| x.warmup.as_ref().and_then(|w| w.settled) == Some(false))
        {
            Some(false)
        } else {
            w.settled
        },
        check: None,
    });
    r.steady_state = None;
    r.merged = Some(MergeRecord {
        loaders: loaders
            .iter()
            .map(|l| {
                let from = l.seconds.first().copied().unwrap_or(l.base_ms);
                let to = l.seconds.last().copied().unwrap_or(l.base_ms)
                    + (l.result.config.engine.interval_s * 1000.0) as i64;
                LoaderRecord {
                    dir: l.dir.display().to_string(),
                    host: l.result.environment.client_host.clone(),
                    slice: l.slice.to_string(),
                    status: l.result.status,
                    engine: l.result.config.engine.clone(),
                    started_at: l.result.started_at.clone(),
                    from_s: (from - base_ms) as f64 / 1000.0,
                    to_s: (to - base_ms) as f64 / 1000.0,
                    intervals: l.seconds.len(),
                    ops: l.result.summary.as_ref().map_or(0, |s| s.total.ops),
                }
            })
            .collect(),
        partial: Vec::new(),
    });
    Ok(r)
}

/// The loaders' summaries added: counts and rates summed, latencies from `histograms`
/// (`<op>.response`, `.ok`, `.service`, all loaders').
fn merged_summary(results: &[&RunResult], histograms: &BTreeMap<String, Encoded>) -> Summary {
    let summaries: Vec<&Summary> = results.iter().filter_map(|r| r.summary.as_ref()).collect();
    let first = summaries[0];
    let empty = new_histogram();
    let hist = |op: &str, kind: TagKind| {
        let mut h = new_histogram();
        for (k, Encoded(v)) in histograms {
            if TagKind::parse(k).is_some_and(|(o, k)| k == kind && (op == "total" || o == op)) {
                h.add(v).expect("same bounds");
            }
        }
        if h.is_empty() { empty.clone() } else { h }
    };
    let merge_op = |name: &str, parts: Vec<&OpSummary>| {
        let sum = |f: fn(&OpSummary) -> u64| parts.iter().map(|p| f(p)).sum::<u64>();
        let sumf = |f: fn(&OpSummary) -> f64| parts.iter().map(|p| f(p)).sum::<f64>();
        let mut errors = BTreeMap::new();
        for p in &parts {
            for (k, n) in &p.errors {
                *errors.entry(k.clone()).or_insert(0) += n;
            }
        }
        OpSummary {
            name: name.to_string(),
            ops: sum(|p| p.ops),
            op_rate: sumf(|p| p.op_rate),
            partitions: sum(|p| p.partitions),
            partition_rate: sumf(|p| p.partition_rate),
            rows: sum(|p| p.rows),
            row_rate: sumf(|p| p.row_rate),
            due: sum(|p| p.due),
            response: Latency::of(&hist(name, TagKind::Response)),
            response_ok: Latency::of(&hist(name, TagKind::Ok)),
            service: Latency::of(&hist(name, TagKind::Service)),
            errors,
            error_total: sum(|p| p.error_total),
            late_ops: sum(|p| p.late_ops),
            max_lag_ms: parts.iter().map(|p| p.max_lag_ms).fold(0.0, f64::max),
        }
    };
    Summary {
        operation_time_s: summaries.iter().map(|s| s.operation_time_s).fold(0.0, f64::max),
        total: merge_op("total", summaries.iter().map(|s| &s.total).collect()),
        per_op: first
            .per_op
            .iter()
            .map(|o| {
                let parts = summaries
                    .iter()
                    .filter_map(|s| s.per_op.iter().find(|p| p.name == o.name))
                    .collect();
                merge_op(&o.name, parts)
            })
            .collect(),
        abandoned: summaries.iter().map(|s| s.abandoned).sum(),
    }
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

    #[test]
    fn loaders_off_the_common_grid_are_refused() {
        let on = vec![
            ("a".to_string(), 1_795_554_180_000),
            ("b".to_string(), 1_795_554_183_000),
        ];
        assert!(check_grid(&on, 1_000).is_ok());
        // 1 ms of rounding in the logs' base times is the same grid, on either side of a second.
        assert!(check_grid(&[("a".into(), 1_000_999), ("b".into(), 2_000_000)], 1_000).is_ok());
        let off = vec![
            ("a".to_string(), 1_795_554_180_000),
            ("b".to_string(), 1_795_554_180_437),
        ];
        let e = check_grid(&off, 1_000).unwrap_err().to_string();
        assert!(
            e.contains("a and b do not share an interval grid") && e.contains("437 ms"),
            "{e}"
        );
    }
}
