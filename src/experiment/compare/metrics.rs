//! The table of what a comparison compares: each metric's key (what an experiment's `metrics`
//! names), label, unit, direction, how it is read from an observation, its per-second series
//! (for single repeats) and, for response-time percentiles, the quantile that pools repeats.

use super::load::{Observation, Series};
use crate::measure::RunResult;
use crate::metrics::summary::OpSummary;
use crate::telemetry::ServerFacts;

/// One metric of the table.
#[derive(Clone, Copy)]
pub struct Metric {
    pub key: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// Its value in one observation (None: not measured there).
    pub of: fn(&Observation) -> Option<f64>,
    /// Its per-second values over a run's window, which stand in for repeats when a variant has
    /// only one.
    pub series: Option<fn(&Series) -> &Vec<f64>>,
    /// A response-time percentile's quantile: repeats are also pooled by merging their
    /// histograms and taking it.
    pub quantile: Option<f64>,
}

impl Metric {
    fn new(
        key: &'static str,
        label: &'static str,
        unit: &'static str,
        higher_is_better: bool,
        of: fn(&Observation) -> Option<f64>,
    ) -> Metric {
        Metric {
            key,
            label,
            unit,
            higher_is_better,
            of,
            series: None,
            quantile: None,
        }
    }

    /// A metric where more is better (throughput, capacity, availability).
    fn higher(
        key: &'static str,
        label: &'static str,
        unit: &'static str,
        of: fn(&Observation) -> Option<f64>,
    ) -> Metric {
        Metric::new(key, label, unit, true, of)
    }

    /// A metric where less is better (latency, CPU, pauses, errors).
    fn lower(
        key: &'static str,
        label: &'static str,
        unit: &'static str,
        of: fn(&Observation) -> Option<f64>,
    ) -> Metric {
        Metric::new(key, label, unit, false, of)
    }

    fn series(mut self, series: fn(&Series) -> &Vec<f64>) -> Metric {
        self.series = Some(series);
        self
    }

    fn quantile(mut self, q: f64) -> Metric {
        self.quantile = Some(q);
        self
    }
}

fn total(o: &Observation) -> Option<&OpSummary> {
    o.result().and_then(|r| r.summary.as_ref()).map(|s| &s.total)
}

fn server(o: &Observation) -> Option<&ServerFacts> {
    o.result()
        .and_then(|r| r.server.as_ref())
        .filter(|s| s.not_collected.is_none())
}

fn per_op_us(seconds: f64, o: &Observation) -> Option<f64> {
    let ops = total(o)?.ops;
    (ops > 0).then(|| seconds * 1e6 / ops as f64)
}

/// Every metric compared, in the order of the table: the client's, then the server's.
pub fn metrics() -> Vec<Metric> {
    let mut all = client_metrics();
    all.extend(server_metrics());
    all
}

/// The keys of the metrics a comparison can hold (an experiment's `metrics` names some).
pub fn metric_keys() -> Vec<&'static str> {
    metrics().iter().map(|m| m.key).collect()
}

/// What the client measured: capacity, throughput, latency, errors.
fn client_metrics() -> Vec<Metric> {
    vec![
        Metric::higher("capacity", "capacity", "op/s", |o| match o {
            Observation::Capacity(c) => c.held(),
            _ => None,
        }),
        Metric::higher("highest_rate", "highest throughput", "op/s", |o| match o {
            Observation::Capacity(c) => Some(c.highest_achieved_rate),
            _ => None,
        }),
        // Along a ramp or steps (or a capacity search with --curve): the highest rate asked
        // below the latency-throughput curve's rise (none when it rose from the lowest rate).
        Metric::higher("knee", "knee (highest rate held)", "op/s", |o| match o {
            Observation::Capacity(c) => c.knee.as_ref()?.held_rate,
            _ => o.result()?.knee.as_ref()?.held_rate,
        }),
        Metric::higher("throughput", "throughput", "op/s", |o| total(o).map(|t| t.op_rate)).series(|s| &s.throughput),
        Metric::higher("row_rate", "rows", "row/s", |o| total(o).map(|t| t.row_rate)),
        Metric::lower("p50", "response p50", "ms", |o| total(o).map(|t| t.response.median_ms))
            .series(|s| &s.p50)
            .quantile(0.5),
        Metric::lower("p99", "response p99", "ms", |o| total(o).map(|t| t.response.p99_ms))
            .series(|s| &s.p99)
            .quantile(0.99),
        Metric::lower("p999", "response p99.9", "ms", |o| total(o).map(|t| t.response.p999_ms)).quantile(0.999),
        Metric::lower("max", "response max", "ms", |o| total(o).map(|t| t.response.max_ms)),
        Metric::lower("read_p99", "read response p99", "ms", |o| {
            op(o, "read").map(|t| t.response.p99_ms)
        }),
        Metric::lower("service_p99", "service p99", "ms", |o| {
            total(o).map(|t| t.service.p99_ms)
        }),
        Metric::lower("errors", "errors", "", |o| total(o).map(|t| t.error_total as f64)),
        Metric::higher("availability", "availability (with faults)", "%", |o| {
            o.result().and_then(|r| r.availability).map(|a| a * 100.0)
        }),
        Metric::lower("recovery", "recovery after faults (longest)", "s", |o| {
            o.result().and_then(RunResult::longest_recovery)
        }),
        Metric::lower(
            "lost_writes",
            "acknowledged rows missing or wrong (--validate)",
            "",
            |o| o.result().and_then(|r| r.validation.as_ref()).map(|v| v.lost() as f64),
        ),
        Metric::higher("recall", "recall@k of ANN queries (sample)", "", |o| {
            o.result().and_then(|r| r.recall.first()).map(|r| r.mean)
        }),
        Metric::lower("transfer_p99", "bank transfer p99", "ms", |o| {
            op(o, "transfer").map(|t| t.response.p99_ms)
        }),
        Metric::lower(
            "contended",
            "bank transfers beaten by another (not applied)",
            "%",
            |o| transfers(o, |_, not_applied, _| not_applied),
        ),
        Metric::lower("failed_transfers", "bank transfers failed or timed out", "%", |o| {
            transfers(o, |_, _, failed| failed)
        }),
    ]
}

/// A share of the bank's transfers due, in %: `pick(applied or declined, not applied, failed)`.
fn transfers(o: &Observation, pick: impl Fn(u64, u64, u64) -> u64) -> Option<f64> {
    let (t, d, n) = (
        op(o, "transfer")?,
        op(o, "transfer_declined")?,
        op(o, "transfer_not_applied")?,
    );
    let due = t.due + d.due + n.due;
    let failed = t.error_total + d.error_total + n.error_total;
    (due > 0).then(|| pick(t.ops + d.ops, n.ops, failed) as f64 / due as f64 * 100.0)
}

/// What the server's telemetry measured: CPU, GC, flushes.
fn server_metrics() -> Vec<Metric> {
    vec![
        Metric::lower("server_cpu_us_per_op", "server CPU per op", "µs", |o| {
            let s = server(o)?;
            per_op_us(s.nodes.iter().map(|n| n.cpu_seconds).sum(), o)
        }),
        Metric::lower("server_cpu", "server CPU", "cores", |o| {
            server(o).map(|s| s.server_cpu_cores)
        })
        .series(|s| &s.server_cpu),
        Metric::lower("client_cpu", "client CPU", "cores", |o| {
            server(o).map(|s| s.client_cpu_cores)
        }),
        Metric::lower("gc_count", "GC pauses", "", |o| server(o).map(|s| s.gc_count as f64)),
        Metric::lower("gc_total_ms", "GC pause total", "ms", |o| {
            server(o).map(|s| s.gc_total_ms)
        })
        .series(|s| &s.gc_pause_ms),
        // Per pause only where the GC log says (nodes caplab runs); over JMX pauses are counted
        // per second.
        Metric::lower("gc_max_ms", "GC max pause", "ms", |o| {
            server(o).filter(|s| !s.nodes.is_empty()).map(|s| s.gc_max_ms)
        }),
        // What the heap holds that a collection cannot free (a table's memtable and metadata
        // among it): the mean heap after each collection of the window, over the local nodes
        // whose GC log says.
        Metric::lower("heap_after_gc", "heap after GC (mean)", "MB", |o| {
            let after: Vec<f64> = server(o)?
                .nodes
                .iter()
                .filter(|n| n.gc.collections_with_heap > 0)
                .map(|n| n.gc.heap_after_mean_mb)
                .collect();
            (!after.is_empty()).then(|| after.iter().sum::<f64>() / after.len() as f64)
        }),
        Metric::lower("allocation_stalls", "allocation stalls", "", |o| {
            server(o).map(|s| s.allocation_stalls as f64)
        }),
        Metric::lower("flush_cpu_us_per_flushed_op", "flush CPU per flushed op", "µs", |o| {
            server(o)?.flush_cpu_us_per_flushed_op()
        }),
        // Compaction, read over JMX when the run's tables compact (a cost: less is better).
        Metric::lower("pending_compactions", "pending compactions (mean)", "", |o| {
            Some(server(o)?.compaction.as_ref()?.pending_mean)
        }),
        Metric::lower("compaction_mb_per_s", "compaction read", "MiB/s", |o| {
            Some(server(o)?.compaction.as_ref()?.compacted_mb_per_s)
        }),
        Metric::lower("compacted_per_flushed", "MiB compacted per MiB flushed", "", |o| {
            server(o)?.compaction.as_ref()?.compacted_per_flushed
        }),
        Metric::lower("sstables_per_read", "SSTables per read", "", |o| {
            server(o)?.compaction.as_ref()?.sstables_per_read
        }),
    ]
}

/// The summary of the operation type named `name` (a profile's `read`, say).
fn op<'a>(o: &'a Observation, name: &str) -> Option<&'a OpSummary> {
    let s = o.result()?.summary.as_ref()?;
    s.per_op.iter().find(|p| p.name == name)
}
