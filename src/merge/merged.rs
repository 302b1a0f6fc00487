//! The merged result.json: the first loader's settings, every loader's counts summed and its
//! latencies from the loaders' whole-window histograms added, each loader recorded.

use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use crate::measure::result::{LoaderRecord, MergeRecord, RunResult, RunStatus, WarmupRecord};
use crate::metrics::hdrlog::{Encoded, TagKind};
use crate::metrics::recorder::new_histogram;
use crate::metrics::summary::{Latency, OpSummary, Summary};

use super::loader::Loader;

/// The merged result.json: the first loader's configuration, the loaders' summaries and
/// histograms added, the list of loaders.
pub fn merged_result(loaders: &[Loader], dirs: &[PathBuf], base_ms: i64) -> Result<RunResult> {
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
    r.server_profile = None;
    // A fault schedule ran in one loader, and its judgement was on that loader's seconds.
    r.faults = Vec::new();
    r.availability = None;
    // A shape's parts are each loader's (in its own result.json): percentiles do not add.
    r.shape_parts = Vec::new();
    r.knee = None;
    // Each loader's slow operations are over its own p99, matched against what it saw, and its
    // client audit and traces are its own: they stay in the loaders' result.json.
    r.slow = None;
    r.client = None;
    r.traces = None;
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
            client_late_ops: sum(|p| p.client_late_ops),
            max_client_lag_ms: parts.iter().map(|p| p.max_client_lag_ms).fold(0.0, f64::max),
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
