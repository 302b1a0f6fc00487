//! The series a page draws for one run, computed from its files: per-second latency
//! percentiles, throughput and errors from the interval log (long runs merged into buckets of
//! whole seconds, the percentiles taken from the merged histograms, never averaged); GC pauses,
//! flushes and CPU from result.json's server section; percentile-distribution curves from the
//! run's histograms.

use anyhow::Result;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

use crate::measure::result::RunResult;
use crate::metrics::hdrlog::{self, TagKind};
use crate::metrics::recorder::new_histogram;

/// Per-second points at most on a time axis; longer runs are merged into wider buckets.
pub const MAX_POINTS: usize = 1200;

/// One curve of a percentile-distribution plot: x = 1/(1-p) (1 at the median's left, 100 at
/// p99, 1000 at p99.9), y = latency in ms.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    pub name: String,
    pub x: Vec<f64>,
    pub ms: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SlaWindow {
    pub start: f64,
    pub end: f64,
    pub judged: bool,
    pub pass: bool,
    pub why: String,
}

/// One series' segments between its changepoints, as the verdict found them.
#[derive(Debug, Clone, Serialize)]
pub struct SteadySegments {
    /// `throughput`, `p50` or `p99`.
    pub metric: String,
    pub class: String,
    /// (from, to, mean) of each segment.
    pub segments: Vec<(f64, f64, f64)>,
}

/// Per second read over JMX (its start): pending compactions, MiB/s compacted and SSTables
/// per read (None: no reads in that second).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CompactionSeries {
    pub t: Vec<f64>,
    pub pending: Vec<f64>,
    pub mb_per_s: Vec<Option<f64>>,
    pub per_read: Vec<Option<f64>>,
}

/// A point (or telemetry interval) shorter than this share of its nominal length is partial:
/// drawn without a rate or CPU.
pub const PARTIAL: f64 = 0.5;

/// Everything a run's charts draw; times are Unix seconds.
#[derive(Debug, Clone, Serialize)]
pub struct RunSeries {
    pub label: String,
    /// Seconds per point (1 unless the run was long).
    pub bucket_s: f64,
    /// Start of each point's interval.
    pub t: Vec<f64>,
    pub p50: Vec<Option<f64>>,
    pub p99: Vec<Option<f64>>,
    pub p999: Vec<Option<f64>>,
    pub max: Vec<Option<f64>>,
    pub service_p99: Vec<Option<f64>>,
    /// Successful and failed operations per second, over each point's own length; None for a
    /// point shorter than half its bucket (`PARTIAL`): a run's last interval is often a fraction
    /// of a second, whose rate is no second's.
    pub ok_rate: Vec<Option<f64>>,
    pub error_rate: Vec<Option<f64>>,
    /// The scheduled rate (None: flat out, or a shape: `target_at`).
    pub target: Option<f64>,
    /// Along a shape, the rate asked at each point (the part of the shape it falls in).
    pub target_at: Vec<Option<f64>>,
    /// Along a shape, each part as a point of the latency–throughput curve: (achieved op/s,
    /// p50, p99, p99.9 ms), by achieved rate; and the knee's (held, broke) rates asked.
    pub curve: Vec<(f64, f64, f64, f64)>,
    pub knee: Option<(Option<f64>, Option<f64>)>,
    /// (time the pause ended, ms) of every server GC pause in the window, all nodes.
    pub gc: Vec<(f64, f64)>,
    /// (time the flush ended, MB written) of every memtable flush in the window.
    pub flushes: Vec<(f64, f64)>,
    /// Per telemetry interval (its end): server, client and flush-thread CPU, in cores (None
    /// for an interval shorter than half a second: a few clock ticks over its length).
    pub cpu_t: Vec<f64>,
    pub server_cpu: Vec<Option<f64>>,
    pub client_cpu: Vec<Option<f64>>,
    pub flush_cpu: Vec<Option<f64>>,
    /// Per thread-pool reading (its time): tasks pending, active and blocked, all nodes, and
    /// tasks completed and internode messages dropped per second.
    pub pool_t: Vec<f64>,
    pub pending: Vec<f64>,
    pub active: Vec<f64>,
    pub blocked: Vec<f64>,
    pub completed: Vec<Option<f64>>,
    pub dropped: Vec<Option<f64>>,
    /// The servers' compaction per second, read over JMX.
    pub compaction: CompactionSeries,
    pub sla: Vec<SlaWindow>,
    /// The steady-state verdict's segments, per series (times are Unix seconds).
    pub steady: Vec<SteadySegments>,
    /// (start, end, label) of each fault (`--fault`), Unix seconds; the end is the window's
    /// when it was not undone within it.
    pub faults: Vec<(f64, f64, String)>,
    /// (intended start, response ms, what made it slow) of the slowest operations over p99 and
    /// of the slow traced ones (`--trace-slow`), Unix seconds: marks on the latency timeline.
    pub slow: Vec<(f64, f64, String)>,
    /// Response time (every due operation) and service time, all operation types; then the
    /// response time of each operation type when there are several.
    pub distribution: Vec<Curve>,
}

/// The latency–throughput curve of a shape's parts, by achieved rate.
pub(super) fn shape_curve(parts: &[crate::measure::phases::ShapePart]) -> Vec<(f64, f64, f64, f64)> {
    let mut out: Vec<_> = parts
        .iter()
        .filter(|p| p.target_rate > 0.0)
        .map(|p| {
            (
                p.achieved_rate,
                p.response.median_ms,
                p.response.p99_ms,
                p.response.p999_ms,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The percentile curve of `h`: 20 points per decade of 1/(1-p) up to the last one the
/// histogram's count can resolve, then its max.
pub fn curve(name: &str, h: &Histogram<u64>) -> Curve {
    let mut c = Curve {
        name: name.to_string(),
        x: Vec::new(),
        ms: Vec::new(),
    };
    if h.is_empty() {
        return c;
    }
    let n = h.len() as f64;
    for k in 0.. {
        let x = 10f64.powf(k as f64 / 20.0);
        if x > n {
            break;
        }
        c.x.push(x);
        c.ms.push(h.value_at_quantile(1.0 - 1.0 / x) as f64 / 1e6);
    }
    let last = c.x.last().copied().unwrap_or(1.0);
    if n > last {
        c.x.push(n);
        c.ms.push(h.max() as f64 / 1e6);
    }
    c
}

fn ms(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1e6)
}

/// One point of the charts: `per` intervals added together, as the log is read.
#[derive(Default)]
struct Bucket {
    /// The first interval's start, after the log's base time.
    start: Option<Duration>,
    intervals: usize,
    response: Option<Histogram<u64>>,
    service: Option<Histogram<u64>>,
    ok: u64,
    errors: u64,
    seconds: f64,
}

fn merge(into: &mut Option<Histogram<u64>>, h: &Histogram<u64>) {
    into.get_or_insert_with(new_histogram)
        .add(h)
        .expect("histograms of one log share their range");
}

impl Bucket {
    /// Adds one histogram of the interval starting at `start` (of `length`).
    fn add(&mut self, tag: Option<&str>, start: Duration, length: Duration, h: &Histogram<u64>) {
        self.start.get_or_insert(start);
        match tag {
            None => {
                merge(&mut self.response, h);
                self.seconds += length.as_secs_f64();
            }
            Some(tag) => match TagKind::parse(tag) {
                Some((_, TagKind::Service)) => merge(&mut self.service, h),
                Some((_, TagKind::Ok)) => self.ok += h.len(),
                Some((_, TagKind::Error)) => self.errors += h.len(),
                _ => {}
            },
        }
    }

    /// Its point on every client series, at its start after the log's base time; then empty again (its
    /// histograms' memory kept for the next point). A point shorter than `PARTIAL` of its bucket
    /// has no rates.
    fn flush(&mut self, s: &mut RunSeries) {
        let Some(start) = self.start.take() else {
            return;
        };
        let empty = new_histogram();
        let response = self.response.as_ref().unwrap_or(&empty);
        s.t.push(start.as_secs_f64());
        s.p50.push(ms(response, 0.5));
        s.p99.push(ms(response, 0.99));
        s.p999.push(ms(response, 0.999));
        s.max.push((!response.is_empty()).then(|| response.max() as f64 / 1e6));
        s.service_p99.push(self.service.as_ref().and_then(|h| ms(h, 0.99)));
        let secs = self.seconds.max(1e-9);
        let whole = self.seconds >= PARTIAL * s.bucket_s;
        s.ok_rate.push(whole.then(|| self.ok as f64 / secs));
        s.error_rate.push(whole.then(|| self.errors as f64 / secs));
        self.response
            .iter_mut()
            .chain(self.service.iter_mut())
            .for_each(Histogram::reset);
        (self.intervals, self.ok, self.errors, self.seconds) = (0, 0, 0, 0.0);
    }
}

impl RunSeries {
    /// No point yet, `bucket_s` seconds a point.
    fn empty(label: &str, bucket_s: f64) -> RunSeries {
        RunSeries {
            label: label.to_string(),
            bucket_s,
            t: Vec::new(),
            p50: Vec::new(),
            p99: Vec::new(),
            p999: Vec::new(),
            max: Vec::new(),
            service_p99: Vec::new(),
            ok_rate: Vec::new(),
            error_rate: Vec::new(),
            target: None,
            target_at: Vec::new(),
            curve: Vec::new(),
            knee: None,
            gc: Vec::new(),
            flushes: Vec::new(),
            cpu_t: Vec::new(),
            server_cpu: Vec::new(),
            client_cpu: Vec::new(),
            flush_cpu: Vec::new(),
            pool_t: Vec::new(),
            pending: Vec::new(),
            active: Vec::new(),
            blocked: Vec::new(),
            completed: Vec::new(),
            dropped: Vec::new(),
            compaction: CompactionSeries::default(),
            sla: Vec::new(),
            steady: Vec::new(),
            faults: Vec::new(),
            slow: Vec::new(),
            distribution: Vec::new(),
        }
    }

    /// The series of the run in `dir` (result.json and its interval log). The log is read
    /// one histogram at a time, into one point's histograms: memory does not grow with the
    /// run's length.
    pub fn load(dir: &Path, label: &str) -> Result<(RunResult, RunSeries)> {
        let r = RunResult::load(dir)?;
        let log = dir.join(&r.files.hdr_log);
        let per = hdrlog::interval_count(&log)?.div_ceil(MAX_POINTS).max(1);
        let mut s = RunSeries::empty(label, r.config.engine.interval_s * per as f64);
        s.target = (r.config.engine.rate > 0.0 && r.config.engine.rate_shape.is_none()).then_some(r.config.engine.rate);
        s.curve = shape_curve(&r.shape_parts);
        s.knee = r.knee.as_ref().map(|k| (k.held_rate, k.broke_rate));
        // The log's intervals come in order, each as its untagged histogram (every operation's
        // response time) and its tags. Points are stamped after the log's base time, which
        // `each` returns at the end, and then moved by it.
        let mut point = Bucket::default();
        let mut current: Option<Duration> = None;
        let base = hdrlog::each(&log, |l| {
            if current != Some(l.start) {
                if current.is_some() {
                    point.intervals += 1;
                    if point.intervals == per {
                        point.flush(&mut s);
                    }
                }
                current = Some(l.start);
            }
            point.add(l.tag.as_deref(), l.start, l.length, &l.histogram);
            Ok(())
        })?
        .unwrap_or_default();
        point.flush(&mut s);
        if !r.shape_parts.is_empty() {
            // A point's time after the log's start, less the warm-up: seconds into the window.
            let lead = r.warmup.as_ref().and_then(|w| w.length_s).unwrap_or(0.0);
            s.target_at =
                s.t.iter()
                    .map(|t| {
                        let at = t - lead + 1e-3;
                        let part = r.shape_parts.iter().find(|p| at >= p.from_s && at < p.to_s);
                        part.map(|p| p.target_rate)
                    })
                    .collect();
        }
        s.t.iter_mut().for_each(|t| *t += base.as_secs_f64());
        if let Some(server) = &r.server {
            let (from, to) = (server.measured_from_ms, server.measured_to_ms);
            let inside = |at: u64| at >= from && at <= to;
            for node in &server.nodes {
                for p in node.gc.pauses.iter().filter(|p| inside(p.at_ms)) {
                    s.gc.push((p.at_ms as f64 / 1e3, p.ms));
                }
                for f in node.flushes.flushes.iter().filter(|f| inside(f.at_ms)) {
                    s.flushes.push((f.at_ms as f64 / 1e3, f.written_mb));
                }
            }
            s.gc.sort_by(|a, b| a.0.total_cmp(&b.0));
            s.flushes.sort_by(|a, b| a.0.total_cmp(&b.0));
            for sec in server.timeline.iter().filter(|sec| sec.measured) {
                // A second of telemetry is stamped at its end, an interval at its start: both
                // are drawn at their start, on one time axis.
                s.cpu_t.push(sec.at_ms as f64 / 1e3 - sec.length_s);
                let whole = sec.length_s >= PARTIAL * r.config.engine.interval_s;
                s.server_cpu.push(whole.then_some(sec.server_cpu_cores));
                s.client_cpu.push(whole.then_some(sec.client_cpu_cores));
                s.flush_cpu.push(whole.then_some(sec.flush_cpu_cores));
                // A cluster caplab does not run: its pauses are counted per second, over JMX.
                if server.nodes.is_empty() && sec.gc_pauses > 0 {
                    s.gc.push((sec.at_ms as f64 / 1e3 - sec.length_s, sec.gc_pause_ms));
                }
                if let Some(pending) = sec.pending_compactions {
                    let c = &mut s.compaction;
                    c.t.push(sec.at_ms as f64 / 1e3 - sec.length_s);
                    c.pending.push(pending);
                    c.mb_per_s.push(sec.compaction_mb_per_s);
                    c.per_read.push(sec.sstables_per_read);
                }
            }
            for p in server.pools.iter().flat_map(|p| &p.timeline) {
                s.pool_t.push(p.at_ms as f64 / 1e3);
                s.pending.push(p.pending as f64);
                s.active.push(p.active as f64);
                s.blocked.push(p.blocked as f64);
                s.completed.push(p.completed_per_s);
                s.dropped.push(p.dropped_per_s);
            }
        }
        if let (Some(sla), Some(t0)) = (&r.sla, s.t.first()) {
            for w in &sla.windows {
                s.sla.push(SlaWindow {
                    start: t0 + w.start_s,
                    end: t0 + w.start_s + w.length_s,
                    judged: w.judged,
                    pass: w.pass,
                    why: w.reasons.join("; "),
                });
            }
        }
        if let (Some(v), Some(t0)) = (&r.steady_state, s.t.first()) {
            for series in &v.series {
                s.steady.push(SteadySegments {
                    metric: series.metric.clone(),
                    class: series.class.name().to_string(),
                    segments: series
                        .segments
                        .iter()
                        .map(|g| (t0 + g.from_s, t0 + g.to_s, g.mean))
                        .collect(),
                });
            }
        }
        window_marks(&r, &mut s);
        s.distribution = distributions(&r);
        Ok((r, s))
    }
}

/// What is marked on a run's time charts at its place in the measured window: each fault's
/// span, and the slowest operations (over p99, and traced ones).
fn window_marks(r: &RunResult, s: &mut RunSeries) {
    if let (Ok(anchor), Some(from)) = (
        humantime::parse_rfc3339_weak(&r.started_at),
        r.warmup.as_ref().and_then(|w| w.length_s),
    ) {
        let window = anchor
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            + from;
        let window_end = window + r.summary.as_ref().map_or(0.0, |s| s.operation_time_s);
        for f in &r.faults {
            if let Some(start) = f.start_s {
                let end = f.end_s.map_or(window_end, |e| window + e);
                s.faults.push((window + start, end, f.fault.clone()));
            }
        }
        for o in r.slow.iter().flat_map(|x| &x.slowest) {
            let what = format!("{}: {} {}", o.op, o.cause.label(), o.detail);
            s.slow.push((window + o.at_s, o.response_ms, what));
        }
        for o in r.traces.iter().flat_map(|x| &x.ops) {
            let what = format!("{} (traced): {}", o.operation, o.said);
            s.slow.push((window + o.at_s, o.response_ms, what));
        }
        s.slow.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
}

/// Percentile curves from the run's histograms (measured window, all operations).
pub fn distributions(r: &RunResult) -> Vec<Curve> {
    let mut response = new_histogram();
    let mut service = new_histogram();
    let mut per_op = Vec::new();
    for (key, h) in &r.histograms {
        match TagKind::parse(key) {
            Some((op, TagKind::Response)) => {
                response.add(&h.0).expect("same range");
                per_op.push(curve(&format!("{op} response"), &h.0));
            }
            Some((_, TagKind::Service)) => service.add(&h.0).expect("same range"),
            _ => {}
        }
    }
    let mut curves = vec![curve("response time", &response), curve("service time", &service)];
    if per_op.len() > 1 {
        curves.extend(per_op);
    }
    curves
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's last interval of 60 ms holding 197 operations is no second at 3,283 op/s: its
    /// point has no rate (nor does a telemetry second that short have CPU), a whole one has.
    #[test]
    fn a_partial_last_interval_is_drawn_without_a_rate() {
        let mut s = RunSeries::empty("r", 1.0);
        let mut ok = new_histogram();
        for _ in 0..197 {
            ok.record(1_000_000).unwrap();
        }
        let tag = TagKind::Ok.tag("insert");
        for (at, length) in [(0, 1000), (1000, 60)] {
            let mut b = Bucket::default();
            let (start, length) = (Duration::from_millis(at), Duration::from_millis(length));
            b.add(None, start, length, &ok);
            b.add(Some(&tag), start, length, &ok);
            b.flush(&mut s);
        }
        assert_eq!(s.ok_rate, [Some(197.0), None]);
        assert_eq!(s.t.len(), 2, "the point is there, for its latencies");
    }

    #[test]
    fn a_curve_reaches_the_percentiles_the_count_resolves_and_ends_at_the_max() {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 1_000).unwrap(); // 1 µs .. 10 ms
        }
        let c = curve("r", &h);
        // x = 1, 10^(1/20), ..., 10^4 = 10,000 = the count: 81 points, no extra max point.
        assert_eq!(c.x.len(), 81);
        assert_eq!(c.x[20], 10.0);
        assert!((c.ms[20] - h.value_at_quantile(0.9) as f64 / 1e6).abs() < 1e-12);
        assert!((c.ms[40] - h.value_at_quantile(0.99) as f64 / 1e6).abs() < 1e-12);
        assert!((c.ms[80] - 10.0).abs() < 0.01, "{}", c.ms[80]);
        assert!(c.ms.windows(2).all(|w| w[0] <= w[1]));
        let mut small = new_histogram();
        for v in [1u64, 2, 3, 500] {
            small.record(v * 1_000_000).unwrap();
        }
        let c = curve("s", &small);
        assert_eq!(*c.x.last().unwrap(), 4.0);
        assert!((c.ms.last().unwrap() - 500.0).abs() < 1.0);
        assert!(curve("e", &new_histogram()).x.is_empty());
    }
}
