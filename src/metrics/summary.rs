//! The run summary: cassandra-stress's fields (op, partition and row rates, latency mean,
//! median, 95th, 99th, 99.9th, max, totals, errors, operation time) for response time and
//! for service time, per operation type and in total.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::recorder::{ErrorKind, OpStats};
use crate::console::group;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

#[cfg(test)]
impl Latency {
    /// For tests: a distribution with this p99 and the other figures in fixed proportion to it.
    pub fn around_p99(p99: f64) -> Latency {
        Latency {
            count: 100,
            mean_ms: p99 / 3.0,
            median_ms: p99 / 3.0,
            p95_ms: p99 / 2.0,
            p99_ms: p99,
            p999_ms: p99 * 2.0,
            max_ms: p99 * 3.0,
        }
    }
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Latency {
        let q = |x| h.value_at_quantile(x) as f64 / 1e6;
        Latency {
            count: h.len(),
            mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1e6 },
            median_ms: q(0.5),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: h.max() as f64 / 1e6,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpSummary {
    pub name: String,
    pub ops: u64,
    pub op_rate: f64,
    pub partitions: u64,
    pub partition_rate: f64,
    pub rows: u64,
    pub row_rate: f64,
    /// Operations due in the measured window: successes, failures and never sent.
    pub due: u64,
    /// Completion minus intended start (includes waiting behind schedule), of every due
    /// operation: failures until their error, never-sent ones until given up.
    pub response: Latency,
    /// The same, of successful operations only.
    pub response_ok: Latency,
    /// Completion minus actual send, of every operation sent.
    pub service: Latency,
    pub errors: BTreeMap<String, u64>,
    pub error_total: u64,
    pub late_ops: u64,
    pub max_lag_ms: f64,
    /// Of `late_ops`, those a free worker held before their intended start: late because of the
    /// client itself, not the server (absent from results written before it was counted).
    #[serde(default)]
    pub client_late_ops: u64,
    #[serde(default)]
    pub max_client_lag_ms: f64,
}

impl OpSummary {
    pub fn of(name: &str, s: &OpStats, seconds: f64) -> OpSummary {
        let rate = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
        OpSummary {
            name: name.to_string(),
            ops: s.ok,
            op_rate: rate(s.ok),
            partitions: s.partitions,
            partition_rate: rate(s.partitions),
            rows: s.rows,
            row_rate: rate(s.rows),
            due: s.due(),
            response: Latency::of(&s.response),
            response_ok: Latency::of(&s.response_ok),
            service: Latency::of(&s.service),
            errors: ErrorKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), s.errors[*k as usize]))
                .filter(|(_, n)| *n > 0)
                .collect(),
            error_total: s.error_count(),
            late_ops: s.late,
            max_lag_ms: s.max_lag_ns as f64 / 1e6,
            client_late_ops: s.client_late,
            max_client_lag_ms: s.max_client_lag_ns as f64 / 1e6,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Length of the measured window.
    pub operation_time_s: f64,
    pub total: OpSummary,
    pub per_op: Vec<OpSummary>,
    /// Operations still in flight when the drain after the end timed out (never completed,
    /// so in no figure above).
    pub abandoned: u64,
}

impl Summary {
    pub fn of(names: &[String], totals: &[OpStats], measured: Duration, abandoned: u64) -> Summary {
        let secs = measured.as_secs_f64();
        let mut all = OpStats::default();
        for t in totals {
            all.add(t);
        }
        Summary {
            operation_time_s: secs,
            total: OpSummary::of("total", &all, secs),
            per_op: names
                .iter()
                .zip(totals)
                .map(|(n, t)| OpSummary::of(n, t, secs))
                .collect(),
            abandoned,
        }
    }

    /// The text printed at the end of a run.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let t = &self.total;
        let per_op = |f: &dyn Fn(&OpSummary) -> String| -> String {
            if self.per_op.len() < 2 {
                return String::new();
            }
            let parts: Vec<String> = self.per_op.iter().map(|p| format!("{}: {}", p.name, f(p))).collect();
            format!("  [{}]", parts.join(", "))
        };
        let _ = writeln!(o, "Results:");
        let _ = writeln!(
            o,
            "Op rate                       : {:>12} op/s{}",
            group(t.op_rate),
            per_op(&|p| format!("{} op/s", group(p.op_rate)))
        );
        let _ = writeln!(
            o,
            "Partition rate                : {:>12} pk/s",
            group(t.partition_rate)
        );
        let _ = writeln!(o, "Row rate                      : {:>12} row/s", group(t.row_rate));
        let not_sent = t.errors.get(ErrorKind::NotSent.name()).copied().unwrap_or(0);
        let _ = writeln!(
            o,
            "Latency of                    : {:>12} due operations{}",
            group(t.due as f64),
            if t.error_total == 0 {
                " (all succeeded)".to_string()
            } else {
                format!(
                    " (failures until their error, never-sent ones until given up: {} failed, {} never sent)",
                    group((t.error_total - not_sent) as f64),
                    group(not_sent as f64)
                )
            }
        );
        for (label, l) in [("Latency", &t.response), ("Service time", &t.service)] {
            let _ = writeln!(o, "{:<30}: {:>12.3} ms", format!("{label} mean"), l.mean_ms);
            let _ = writeln!(o, "{:<30}: {:>12.3} ms", format!("{label} median"), l.median_ms);
            let _ = writeln!(o, "{:<30}: {:>12.3} ms", format!("{label} 95th percentile"), l.p95_ms);
            let _ = writeln!(o, "{:<30}: {:>12.3} ms", format!("{label} 99th percentile"), l.p99_ms);
            let _ = writeln!(
                o,
                "{:<30}: {:>12.3} ms",
                format!("{label} 99.9th percentile"),
                l.p999_ms
            );
            let _ = writeln!(o, "{:<30}: {:>12.3} ms", format!("{label} max"), l.max_ms);
        }
        if t.error_total > 0 {
            let l = &t.response_ok;
            let _ = writeln!(
                o,
                "Latency of successes only     : {:>12} median, {:.3} p99, {:.3} p99.9, {:.3} max (ms)",
                format!("{:.3}", l.median_ms),
                l.p99_ms,
                l.p999_ms,
                l.max_ms
            );
        }
        let _ = writeln!(o, "Total operations              : {:>12}", group(t.ops as f64));
        let _ = writeln!(o, "Total partitions              : {:>12}", group(t.partitions as f64));
        let _ = writeln!(o, "Total rows                    : {:>12}", group(t.rows as f64));
        let kinds: Vec<String> = t.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            o,
            "Total errors                  : {:>12}{}",
            group(t.error_total as f64),
            if kinds.is_empty() {
                String::new()
            } else {
                format!("  [{}]", kinds.join(", "))
            }
        );
        if t.late_ops > 0 || not_sent > 0 {
            let _ = writeln!(
                o,
                "Behind schedule               : {} ops started >10 ms late (max {:.1} ms), {} never sent",
                group(t.late_ops as f64),
                t.max_lag_ms,
                group(not_sent as f64)
            );
        }
        if let Some(said) = client_lateness(t) {
            let _ = writeln!(o, "Client's own lateness         : {said}");
        }
        if self.abandoned > 0 {
            let _ = writeln!(
                o,
                "Abandoned in flight           : {:>12} (no answer within the drain after the end)",
                group(self.abandoned as f64)
            );
        }
        if self.per_op.len() > 1 {
            let _ = writeln!(o, "Per operation                 :");
            for p in &self.per_op {
                let _ = writeln!(
                    o,
                    "  {:<28}: {:>9} op/s  {:>10} rows  p50 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3} ms  errors {}",
                    p.name,
                    group(p.op_rate),
                    group(p.rows as f64),
                    p.response.median_ms,
                    p.response.p99_ms,
                    p.response.p999_ms,
                    p.response.max_ms,
                    p.error_total
                );
            }
        }
        let secs = self.operation_time_s;
        let _ = writeln!(
            o,
            "Total operation time          : {:02}:{:02}:{:06.3}",
            (secs / 3600.0) as u64,
            (secs / 60.0) as u64 % 60,
            secs % 60.0
        );
        o
    }
}

/// What the client's own lateness (`OpSummary::client_late_ops`) says of a run on a schedule:
/// the share of operations a free worker sent more than 10 ms late, and which percentiles that
/// share reaches (1 % reaches the p99, 0.1 % the p99.9). None flat out, where nothing is due.
pub fn client_lateness(t: &OpSummary) -> Option<String> {
    if t.max_client_lag_ms <= 0.0 || t.due == 0 {
        return None;
    }
    let share = t.client_late_ops as f64 / t.due as f64;
    let reach = if share >= 0.01 {
        "p99 and above include the client's own delay: give caplab more CPU (--threads, --client-cpus) or more loaders"
    } else if share >= 0.001 {
        "p99.9 and above include the client's own delay"
    } else if t.client_late_ops > 0 {
        "too few to reach the p99.9"
    } else {
        "it kept its schedule"
    };
    Some(format!(
        "{} ops ({:.2} %) sent >10 ms late by a free worker (max {:.1} ms): {reach}",
        group(t.client_late_ops as f64),
        100.0 * share,
        t.max_client_lag_ms
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_totals() {
        let mut s = OpStats::default();
        for v in 1..=1000u64 {
            s.response.record(v * 1_000_000).unwrap();
            s.service.record(v * 500_000).unwrap();
        }
        s.ok = 1000;
        s.rows = 10_000;
        s.partitions = 1000;
        s.errors[ErrorKind::ServerTimeout as usize] = 3;
        let sum = Summary::of(&["batch".into()], &[s], Duration::from_secs(10), 0);
        assert_eq!(sum.total.op_rate, 100.0);
        assert_eq!(sum.total.row_rate, 1000.0);
        assert!((sum.total.response.median_ms - 500.0).abs() < 1.0);
        assert!((sum.total.service.max_ms - 500.0).abs() < 1.0);
        let text = sum.render();
        assert!(
            text.contains("Row rate                      :        1,000 row/s"),
            "{text}"
        );
        assert!(text.contains("server_timeout 3"), "{text}");
        assert!(
            text.lines().skip(1).all(|l| l.find(':') == Some(30)),
            "labels line up: {text}"
        );
        assert!(text.contains("Total operation time          : 00:00:10.000"), "{text}");
    }

    #[test]
    fn the_clients_own_lateness_names_the_percentiles_it_reaches() {
        let mut s = OpStats {
            ok: 10_000,
            max_client_lag_ns: 12_000_000,
            ..OpStats::default()
        };
        let said = |late: u64, s: &mut OpStats| {
            s.client_late = late;
            client_lateness(&OpSummary::of("t", s, 10.0)).unwrap()
        };
        assert!(said(0, &mut s).ends_with("it kept its schedule"), "{}", said(0, &mut s));
        assert!(said(9, &mut s).ends_with("too few to reach the p99.9"));
        assert!(said(10, &mut s).contains("p99.9 and above include"));
        let many = said(100, &mut s);
        assert!(
            many.contains("(1.00 %)") && many.contains("p99 and above include") && many.contains("max 12.0 ms"),
            "{many}"
        );
        // Flat out nothing is due at a time, and nothing is said.
        s.max_client_lag_ns = 0;
        assert_eq!(client_lateness(&OpSummary::of("t", &s, 10.0)), None);
    }
}
