//! What the live metrics hold: every closed interval added to cumulative counters and
//! histograms, per operation type, and the run's gauges (in flight, target rate, phase, fault,
//! the server's GC and CPU); and those figures as Prometheus metric families, which the
//! endpoint encodes as text and the pusher as remote-write series. The histograms' buckets are
//! buckets.rs's.

use prometheus::proto::{Bucket, Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType};
use std::time::Duration;

use super::buckets::{Buckets, bounds};
use super::native::Native;
use crate::metrics::{ErrorKind, Interval, OpStats};

/// The phases a run goes through, as `caplab_phase{phase}` shows them (1 for the current one).
pub const PHASES: [&str; 3] = ["warmup", "measuring", "idle"];

/// One operation type's cumulative figures.
#[derive(Debug, Clone)]
pub struct OpSeries {
    pub name: String,
    /// Operations by outcome: succeeded, then each `ErrorKind` (never sent included).
    pub outcomes: [u64; 1 + ErrorKind::ALL.len()],
    pub late: u64,
    pub warmup: u64,
    pub response_ok: Buckets,
    pub response_error: Buckets,
    pub service: Buckets,
    /// The same three as native histograms, for remote write.
    pub native: [Native; 3],
}

impl OpSeries {
    fn new(name: &str) -> OpSeries {
        OpSeries {
            name: name.to_string(),
            outcomes: [0; 1 + ErrorKind::ALL.len()],
            late: 0,
            warmup: 0,
            response_ok: Buckets::default(),
            response_error: Buckets::default(),
            service: Buckets::default(),
            native: Default::default(),
        }
    }

    fn add(&mut self, o: &OpStats) {
        self.outcomes[0] += o.ok;
        for (t, e) in self.outcomes[1..].iter_mut().zip(o.errors) {
            *t += e;
        }
        self.late += o.late;
        self.warmup += o.warmup_ops;
        self.response_ok.add(&o.response_ok);
        self.response_error.add(&o.error_response);
        self.service.add(&o.service);
        self.native[0].add(&o.response_ok);
        self.native[1].add(&o.error_response);
        self.native[2].add(&o.service);
    }
}

/// A fault's span, from the start of the measured window.
#[derive(Debug, Clone, Copy)]
pub struct FaultWindow {
    pub at: Duration,
    /// None: until the end of the step.
    pub length: Option<Duration>,
}

/// Everything the endpoint serves.
#[derive(Debug, Clone)]
pub struct State {
    /// On every series: loader, workload, run and the user's labels, sorted by name.
    pub labels: Vec<(String, String)>,
    pub ops: Vec<OpSeries>,
    pub in_flight: u64,
    /// Operations sent so far, and completed so far, this step.
    pub sent: u64,
    pub completed: u64,
    pub target_rate: Option<f64>,
    pub phase: &'static str,
    pub faults: Vec<FaultWindow>,
    pub fault_active: bool,
    /// Seconds of the server's GC pauses and CPU (None: not watched).
    pub server: Option<(f64, f64)>,
    /// The servers' compaction, read over JMX (None: not read).
    pub compaction: Option<Compaction>,
}

/// The servers' compaction as the live metrics show it: pending compactions and SSTables per
/// read as last read, the bytes compacted since caplab began reading.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Compaction {
    pub pending: f64,
    pub compacted_bytes: f64,
    pub sstables_per_read: Option<f64>,
}

impl State {
    pub fn new(labels: Vec<(String, String)>) -> State {
        State {
            labels,
            ops: Vec::new(),
            in_flight: 0,
            sent: 0,
            completed: 0,
            target_rate: None,
            phase: "idle",
            faults: Vec::new(),
            fault_active: false,
            server: None,
            compaction: None,
        }
    }

    /// A step begins: its operation types (series already there keep counting), its rate
    /// (None: as fast as it goes) and its faults.
    pub fn begin(&mut self, names: &[String], target_rate: Option<f64>, faults: Vec<FaultWindow>) {
        for n in names {
            if !self.ops.iter().any(|o| &o.name == n) {
                self.ops.push(OpSeries::new(n));
            }
        }
        (self.target_rate, self.faults, self.phase) = (target_rate, faults, "warmup");
        (self.sent, self.completed, self.in_flight, self.fault_active) = (0, 0, 0, false);
    }

    /// Adds a closed interval. `names` are the step's operation types in the interval's order;
    /// `window_start` is when the measured window began (from the step's start), once it has;
    /// `server` is the interval's GC pause (ms) and the server's CPU (cores).
    pub fn add(&mut self, names: &[String], iv: &Interval, window_start: Option<Duration>, server: Option<(f64, f64)>) {
        for (name, o) in names.iter().zip(&iv.ops) {
            if let Some(s) = self.ops.iter_mut().find(|s| &s.name == name) {
                s.add(o);
            }
            let never_sent = o.errors[ErrorKind::NotSent as usize];
            self.completed += o.ok + o.error_count() - never_sent + o.warmup_ops;
        }
        self.sent = self.sent.max(iv.sent);
        self.in_flight = self.sent.saturating_sub(self.completed);
        self.phase = if iv.warmup { "warmup" } else { "measuring" };
        let end = iv.start + iv.length;
        self.fault_active = window_start.is_some_and(|w| {
            self.faults
                .iter()
                .any(|f| end > w + f.at && f.length.is_none_or(|l| end <= w + f.at + l))
        });
        if let Some((gc_ms, cpu_cores)) = server {
            let (gc, cpu) = self.server.get_or_insert((0.0, 0.0));
            *gc += gc_ms / 1e3;
            *cpu += cpu_cores * iv.length.as_secs_f64();
        }
    }

    /// A second's compaction figures: the pending compactions now, the MB compacted in it,
    /// and SSTables per read (None: no reads, the last figure stands).
    pub fn compaction(&mut self, pending: f64, compacted_mb: f64, sstables_per_read: Option<f64>) {
        let c = self.compaction.get_or_insert_default();
        c.pending = pending;
        c.compacted_bytes += compacted_mb * 1_048_576.0;
        c.sstables_per_read = sstables_per_read.or(c.sstables_per_read);
    }

    /// The step has ended.
    pub fn end(&mut self) {
        (self.phase, self.in_flight, self.fault_active) = ("idle", 0, false);
    }

    /// The run's labels and `extra`, sorted by name.
    pub fn labels_with<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut all: Vec<(&str, &str)> = self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        all.extend_from_slice(extra);
        all.sort();
        all
    }

    /// The metric families, as Prometheus names them.
    pub fn families(&self) -> Vec<MetricFamily> {
        let with = |extra: &[(&str, &str)]| -> Vec<LabelPair> {
            self.labels_with(extra).into_iter().map(|(k, v)| pair(k, v)).collect()
        };
        let mut ops = Vec::new();
        let (mut late, mut warmup, mut response, mut service) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in &self.ops {
            let op = s.name.as_str();
            for (i, n) in s.outcomes.iter().enumerate() {
                let outcome = if i == 0 { "ok" } else { ErrorKind::ALL[i - 1].name() };
                // Error outcomes appear once they happen: most runs have none.
                if i == 0 || *n > 0 {
                    ops.push(counter(with(&[("op", op), ("outcome", outcome)]), *n as f64));
                }
            }
            late.push(counter(with(&[("op", op)]), s.late as f64));
            warmup.push(counter(with(&[("op", op)]), s.warmup as f64));
            response.push(histogram_metric(&s.response_ok, with(&[("op", op), ("outcome", "ok")])));
            if s.response_error.count > 0 {
                let labels = with(&[("op", op), ("outcome", "error")]);
                response.push(histogram_metric(&s.response_error, labels));
            }
            service.push(histogram_metric(&s.service, with(&[("op", op)])));
        }
        let mut out = vec![
            family("caplab_operations_total", HELP_OPS, MetricType::COUNTER, ops),
            family("caplab_operations_late_total", HELP_LATE, MetricType::COUNTER, late),
            family(
                "caplab_warmup_operations_total",
                HELP_WARMUP,
                MetricType::COUNTER,
                warmup,
            ),
            family(
                "caplab_response_time_seconds",
                HELP_RESPONSE,
                MetricType::HISTOGRAM,
                response,
            ),
            family(
                "caplab_service_time_seconds",
                HELP_SERVICE,
                MetricType::HISTOGRAM,
                service,
            ),
            family(
                "caplab_operations_in_flight",
                "Operations sent and not yet answered.",
                MetricType::GAUGE,
                vec![gauge(with(&[]), self.in_flight as f64)],
            ),
            family(
                "caplab_phase",
                "1 for the phase the loader is in: warmup, measuring, or idle (between steps, or done).",
                MetricType::GAUGE,
                PHASES
                    .iter()
                    .map(|p| gauge(with(&[("phase", p)]), f64::from(u8::from(*p == self.phase))))
                    .collect(),
            ),
            family(
                "caplab_fault_active",
                "1 while a fault of the schedule (--fault) is applied, else 0.",
                MetricType::GAUGE,
                vec![gauge(with(&[]), f64::from(u8::from(self.fault_active)))],
            ),
        ];
        if let Some(rate) = self.target_rate {
            out.push(family(
                "caplab_target_rate_operations_per_second",
                "The rate the open model offers (a capacity search changes it each step).",
                MetricType::GAUGE,
                vec![gauge(with(&[]), rate)],
            ));
        }
        if let Some((gc, cpu)) = self.server {
            out.push(family(
                "caplab_server_gc_pause_seconds_total",
                "Time the nodes spent in GC pauses: from their GC logs (nodes caplab runs), or over JMX (--jmx).",
                MetricType::COUNTER,
                vec![counter(with(&[]), gc)],
            ));
            out.push(family(
                "caplab_server_cpu_seconds_total",
                "CPU time the nodes used: from /proc (nodes caplab runs), or over JMX (--jmx).",
                MetricType::COUNTER,
                vec![counter(with(&[]), cpu)],
            ));
        }
        if let Some(c) = self.compaction {
            out.push(family(
                "caplab_server_pending_compactions",
                "Compactions the nodes estimate they still have to do, over JMX (Compaction PendingTasks).",
                MetricType::GAUGE,
                vec![gauge(with(&[]), c.pending)],
            ));
            out.push(family(
                "caplab_server_compacted_bytes_total",
                "Bytes the nodes' compactions wrote since caplab began reading them, over JMX (BytesCompacted).",
                MetricType::COUNTER,
                vec![counter(with(&[]), c.compacted_bytes)],
            ));
            if let Some(per_read) = c.sstables_per_read {
                out.push(family(
                    "caplab_server_sstables_per_read",
                    "SSTables touched per read, all tables: the mean of Cassandra's SSTablesPerReadHistogram.",
                    MetricType::GAUGE,
                    vec![gauge(with(&[]), per_read)],
                ));
            }
        }
        // A family with nothing in it (no step has begun) is not valid exposition.
        out.retain(|f| !f.get_metric().is_empty());
        out
    }
}

const HELP_OPS: &str = "Measured operations by type and outcome: ok, or the error (not_sent: due but never sent, \
                        counted when the run gave it up).";
const HELP_LATE: &str = "Measured operations that started more than 10 ms after their intended time.";
const HELP_WARMUP: &str = "Operations completed during warm-up (not in the histograms).";
const HELP_RESPONSE: &str = "Response time of measured operations: from the intended start (the open model's \
                             schedule) to the answer; outcome ok or error (errors include never-sent operations).";
const HELP_SERVICE: &str = "Service time of measured operations that were sent: from sending to the answer.";

/// A classic histogram as the exposition's metric, with its labels.
fn histogram_metric(b: &Buckets, labels: Vec<LabelPair>) -> Metric {
    let mut cumulative = 0;
    let buckets = bounds()
        .iter()
        .zip(&b.counts)
        .map(|(bound, c)| {
            cumulative += c;
            let mut bucket = Bucket::default();
            bucket.set_upper_bound(*bound);
            bucket.set_cumulative_count(cumulative);
            bucket
        })
        .collect();
    let mut h = prometheus::proto::Histogram::default();
    h.set_bucket(buckets);
    h.set_sample_count(b.count);
    h.set_sample_sum(b.sum_s);
    let mut m = Metric::from_label(labels);
    m.set_histogram(h);
    m
}

fn pair(k: &str, v: &str) -> LabelPair {
    let mut p = LabelPair::default();
    p.set_name(k.to_string());
    p.set_value(v.to_string());
    p
}

fn counter(labels: Vec<LabelPair>, v: f64) -> Metric {
    let mut c = Counter::default();
    c.set_value(v);
    let mut m = Metric::from_label(labels);
    m.set_counter(c);
    m
}

fn gauge(labels: Vec<LabelPair>, v: f64) -> Metric {
    let mut g = Gauge::default();
    g.set_value(v);
    let mut m = Metric::from_gauge(g);
    m.set_label(labels);
    m
}

fn family(name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) -> MetricFamily {
    let mut f = MetricFamily::default();
    f.set_name(name.to_string());
    f.set_help(help.to_string());
    f.set_field_type(kind);
    f.set_metric(metrics);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(ok_ms: &[u64], warmup: bool) -> Interval {
        let mut o = OpStats::default();
        for ms in ok_ms {
            o.response.record(ms * 1_000_000).unwrap();
            o.response_ok.record(ms * 1_000_000).unwrap();
            o.service.record(ms * 1_000_000).unwrap();
        }
        o.ok = ok_ms.len() as u64;
        Interval {
            start: Duration::from_secs(3),
            length: Duration::from_secs(1),
            warmup,
            ops: vec![o],
            sent: 0,
        }
    }

    #[test]
    fn counters_add_up_over_intervals_and_steps_and_gauges_follow_the_step() {
        let names = vec!["insert".to_string()];
        let mut s = State::new(vec![("run".into(), "r1".into())]);
        s.begin(
            &names,
            Some(100.0),
            vec![FaultWindow {
                at: Duration::from_secs(1),
                length: Some(Duration::from_secs(1)),
            }],
        );
        let mut iv = interval(&[1, 2, 3], false);
        iv.sent = 5;
        s.add(&names, &iv, Some(Duration::from_secs(2)), Some((20.0, 1.5)));
        assert_eq!((s.ops[0].outcomes[0], s.in_flight, s.phase), (3, 2, "measuring"));
        assert!(
            s.fault_active,
            "the interval ending at 4 s is within the fault from 3 s to 4 s"
        );
        s.end();
        s.begin(&names, Some(200.0), Vec::new());
        s.add(&names, &interval(&[5], false), Some(Duration::ZERO), Some((0.0, 1.0)));
        assert_eq!(s.ops[0].outcomes[0], 4, "a second step keeps counting");
        assert_eq!(s.ops[0].response_ok.count, 4);
        assert!(!s.fault_active);
        let (gc, cpu) = s.server.unwrap();
        assert!((gc - 0.02).abs() < 1e-9 && (cpu - 2.5).abs() < 1e-9);
        s.compaction(3.0, 1.0, Some(1.5));
        s.compaction(2.0, 0.5, None);
        let text = prometheus::TextEncoder::new().encode_to_string(&s.families()).unwrap();
        assert!(
            text.contains(r#"caplab_server_pending_compactions{run="r1"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"caplab_server_compacted_bytes_total{run="r1"} 1572864"#),
            "{text}"
        );
        assert!(
            text.contains(r#"caplab_server_sstables_per_read{run="r1"} 1.5"#),
            "a second without reads keeps the last figure: {text}"
        );
        assert!(
            text.contains(r#"caplab_operations_total{op="insert",outcome="ok",run="r1"} 4"#),
            "{text}"
        );
        assert!(
            text.contains(r#"caplab_target_rate_operations_per_second{run="r1"} 200"#),
            "{text}"
        );
        assert!(text.contains(r#"caplab_phase{phase="measuring",run="r1"} 1"#), "{text}");
        assert!(text.contains(r#"caplab_response_time_seconds_count{op="insert",outcome="ok",run="r1"} 4"#));
        assert!(
            text.contains(r#"caplab_response_time_seconds_bucket{op="insert",outcome="ok",run="r1",le="+Inf"} 4"#),
            "{text}"
        );
        // 1, 2, 3 and 5 ms: one at or below 1 ms (a value stands for its HdrHistogram bucket's
        // highest, 1.0005 ms: not above the bound), three at or below 3.162 ms, all at 5.623.
        let bucket = |le: &str, n: u64| {
            let line =
                format!(r#"caplab_response_time_seconds_bucket{{op="insert",outcome="ok",run="r1",le="{le}"}} {n}"#);
            assert!(text.contains(&line), "{line} in {text}");
        };
        bucket("0.001", 0);
        bucket("0.001212", 1);
        bucket("0.003162", 3);
        bucket("0.004642", 3);
        bucket("0.005623", 4);
        assert!(
            !text.contains("outcome=\"error\""),
            "no error histogram before an error"
        );
    }
}
