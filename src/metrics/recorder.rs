//! Recording: the engine's workers write into shards (a worker always uses the same one, and
//! there are several per thread), so recording an operation takes an uncontended lock. Once
//! per interval the collector swaps each shard out and merges them.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Latencies are recorded in nanoseconds, to 3 significant digits from 1 ns to one hour
/// (longer ones are clamped to the top). A lowest value of 1 µs would step by 0.5 µs below
/// 1 ms (0.5 % at 100 µs) for 28 % less memory per histogram.
pub const LOWEST_NS: u64 = 1;
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
pub const SIGFIG: u8 = 3;

/// An operation that started this much after its intended time did not start on time.
pub const LATE_NS: u64 = 10_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).expect("valid histogram bounds")
}

/// Warm-up service times are only looked at to decide when warm-up ends: two significant
/// digits (1 %) are plenty, in a tenth of the memory.
pub fn warmup_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 2).expect("valid histogram bounds")
}

/// What went wrong with an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server's read or write timeout (the coordinator gave up on replicas).
    ServerTimeout,
    /// The client's own request timeout.
    ClientTimeout,
    Unavailable,
    Overloaded,
    /// No connection could carry the request.
    Connection,
    Other,
    /// Due before the end of the schedule (or a stop) but never sent: every operation in
    /// flight was waiting for the server, or the client could not keep up. Its latency is a
    /// lower bound: from its intended start until the run gave it up.
    NotSent,
}

impl ErrorKind {
    /// A failure that says nothing of the data (a timeout, a coordinator unavailable or
    /// overloaded): trying again may answer.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::ClientTimeout | ErrorKind::ServerTimeout | ErrorKind::Unavailable | ErrorKind::Overloaded
        )
    }

    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::ServerTimeout,
        ErrorKind::ClientTimeout,
        ErrorKind::Unavailable,
        ErrorKind::Overloaded,
        ErrorKind::Connection,
        ErrorKind::Other,
        ErrorKind::NotSent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ServerTimeout => "server_timeout",
            ErrorKind::ClientTimeout => "client_timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Connection => "connection",
            ErrorKind::Other => "other",
            ErrorKind::NotSent => "not_sent",
        }
    }
}

/// Everything measured for one operation type over some time.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// Completion minus intended start, every operation: successes, failures (until the error
    /// arrived) and operations never sent (until the run gave them up: a lower bound). What
    /// percentiles and service levels are taken of, as a timeout is a latency above any bound.
    pub response: Histogram<u64>,
    /// The same for successful operations only.
    pub response_ok: Histogram<u64>,
    /// Completion minus actual send, every operation that was sent.
    pub service: Histogram<u64>,
    /// Completion minus intended start, failed operations (never-sent ones included).
    pub error_response: Histogram<u64>,
    pub ok: u64,
    pub rows: u64,
    pub partitions: u64,
    pub errors: [u64; ErrorKind::ALL.len()],
    /// Operations that started more than `LATE_NS` after their intended time.
    pub late: u64,
    /// Largest start delay behind schedule, ns.
    pub max_lag_ns: u64,
    /// Operations a free worker held before their intended start yet sent more than `LATE_NS`
    /// after it: late because of the client itself (a starved or busy runtime), not because
    /// every worker waited on the server.
    pub client_late: u64,
    /// Largest start delay of such operations (a free worker's), ns.
    pub max_client_lag_ns: u64,
    /// Operations completed during warm-up (not in the histograms above).
    pub warmup_ops: u64,
    /// Service times of warm-up operations: what an automatic warm-up watches at a fixed rate.
    pub warmup_service: Histogram<u64>,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            response: new_histogram(),
            response_ok: new_histogram(),
            service: new_histogram(),
            error_response: new_histogram(),
            ok: 0,
            rows: 0,
            partitions: 0,
            errors: [0; ErrorKind::ALL.len()],
            late: 0,
            max_lag_ns: 0,
            client_late: 0,
            max_client_lag_ns: 0,
            warmup_ops: 0,
            warmup_service: warmup_histogram(),
        }
    }
}

impl OpStats {
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Operations that were due in the measured window: succeeded, failed or never sent.
    pub fn due(&self) -> u64 {
        self.ok + self.error_count()
    }

    pub fn add(&mut self, o: &OpStats) {
        self.response.add(&o.response).expect("same bounds");
        self.response_ok.add(&o.response_ok).expect("same bounds");
        self.service.add(&o.service).expect("same bounds");
        self.error_response.add(&o.error_response).expect("same bounds");
        self.ok += o.ok;
        self.rows += o.rows;
        self.partitions += o.partitions;
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
        self.late += o.late;
        self.max_lag_ns = self.max_lag_ns.max(o.max_lag_ns);
        self.client_late += o.client_late;
        self.max_client_lag_ns = self.max_client_lag_ns.max(o.max_client_lag_ns);
        self.warmup_ops += o.warmup_ops;
        self.warmup_service.add(&o.warmup_service).expect("same bounds");
    }

    /// Zeroes the counts, keeping the histograms' memory.
    pub fn reset(&mut self) {
        self.response.reset();
        self.response_ok.reset();
        self.service.reset();
        self.error_response.reset();
        self.ok = 0;
        self.rows = 0;
        self.partitions = 0;
        self.errors = [0; ErrorKind::ALL.len()];
        self.late = 0;
        self.max_lag_ns = 0;
        self.client_late = 0;
        self.max_client_lag_ns = 0;
        self.warmup_ops = 0;
        self.warmup_service.reset();
    }
}

/// One completed operation (or one given up before it was sent), as the engine reports it.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub op: usize,
    pub intended: Instant,
    /// None for an operation never sent (its result is `ErrorKind::NotSent`).
    pub sent: Option<Instant>,
    /// When it completed, or was given up.
    pub done: Instant,
    /// Rows and partitions written or read, or the error.
    pub result: Result<(u64, u64), ErrorKind>,
    /// False for warm-up operations.
    pub measured: bool,
    /// A worker held it, free, before its intended start: any lateness of its send is the
    /// client's own.
    pub waited: bool,
}

/// Where an operation's response time starts: its intended start, or its send when the engine
/// sent it a little early (it rounds sends to its timer's ticks), so a response is never
/// shorter than its service time.
pub fn response_from(c: &Completion) -> Instant {
    c.sent.map_or(c.intended, |sent| c.intended.min(sent))
}

/// Nanoseconds from `t0` to `at`, negative when `at` came first.
pub fn ns_since(t0: Instant, at: Instant) -> i64 {
    match at.checked_duration_since(t0) {
        Some(d) => d.as_nanos() as i64,
        None => -(t0.duration_since(at).as_nanos() as i64),
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn op_stats(op_types: usize) -> Vec<OpStats> {
    (0..op_types).map(|_| OpStats::default()).collect()
}

/// Fresh (empty) per-operation-type stats for every shard of a recorder.
pub type ShardSets = Vec<Vec<OpStats>>;

pub fn shard_sets(shards: usize, op_types: usize) -> ShardSets {
    (0..shards.max(1)).map(|_| op_stats(op_types)).collect()
}

/// The shards of one run.
pub struct Recorder {
    shards: Vec<Mutex<Vec<OpStats>>>,
}

impl Recorder {
    pub fn new(shards: usize, op_types: usize) -> Recorder {
        let shards = (0..shards.max(1)).map(|_| Mutex::new(op_stats(op_types))).collect();
        Recorder { shards }
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Records into shard `shard`: the caller (a worker) always passes the same one.
    pub fn record(&self, shard: usize, c: &Completion) {
        let mut guard = self.shards[shard % self.shards.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let s = &mut guard[c.op];
        if !c.measured {
            // Warm-up counts what completed; a warm-up operation never sent is not kept.
            if let Some(sent) = c.sent {
                s.warmup_ops += 1;
                s.warmup_service
                    .saturating_record(ns(c.done.saturating_duration_since(sent)));
            }
            return;
        }
        let response = ns(c.done.saturating_duration_since(response_from(c)));
        if let Some(sent) = c.sent {
            let lag = ns(sent.saturating_duration_since(c.intended));
            if lag > LATE_NS {
                s.late += 1;
            }
            s.max_lag_ns = s.max_lag_ns.max(lag);
            if c.waited {
                s.client_late += u64::from(lag > LATE_NS);
                s.max_client_lag_ns = s.max_client_lag_ns.max(lag);
            }
            s.service.saturating_record(ns(c.done.saturating_duration_since(sent)));
        }
        s.response.saturating_record(response);
        match c.result {
            Ok((rows, partitions)) => {
                s.ok += 1;
                s.rows += rows;
                s.partitions += partitions;
                s.response_ok.saturating_record(response);
            }
            Err(kind) => {
                s.errors[kind as usize] += 1;
                s.error_response.saturating_record(response);
            }
        }
    }

    /// Takes what every shard recorded since the last call, leaving `fresh` (empty stats, one
    /// set per shard) in their place. Each shard's lock is held only for the swap: the
    /// merging is done by whoever receives the sets (`merge`), away from the workers.
    pub fn swap_out(&self, mut fresh: ShardSets) -> ShardSets {
        for (shard, set) in self.shards.iter().zip(fresh.iter_mut()) {
            std::mem::swap(&mut *shard.lock().unwrap_or_else(|p| p.into_inner()), set);
        }
        fresh
    }

    /// Merges every shard into `into` (one entry per op type, zeroed first) and leaves the
    /// shards empty.
    pub fn drain_into(&self, into: &mut [OpStats]) {
        let mut sets = self.swap_out(shard_sets(self.shards.len(), into.len()));
        merge(&mut sets, into);
    }
}

/// Merges shard sets into `into` (zeroed first) and empties them for reuse.
pub fn merge(sets: &mut ShardSets, into: &mut [OpStats]) {
    into.iter_mut().for_each(OpStats::reset);
    for set in sets.iter_mut() {
        for (acc, s) in into.iter_mut().zip(set.iter_mut()) {
            acc.add(s);
            s.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion(
        op: usize,
        intended_ms: u64,
        sent_ms: u64,
        done_ms: u64,
        result: Result<(u64, u64), ErrorKind>,
    ) -> Completion {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        Completion {
            op,
            intended: at(intended_ms),
            sent: Some(at(sent_ms)),
            done: at(done_ms),
            result,
            measured: true,
            waited: false,
        }
    }

    #[test]
    fn an_operation_a_free_worker_sent_late_is_the_clients_lateness() {
        let r = Recorder::new(1, 1);
        // Waited for by a free worker, then sent 30 ms late; one 5 ms late; one 40 ms late
        // because no worker was free (the server's doing).
        let waited = |c: Completion| Completion { waited: true, ..c };
        r.record(0, &waited(completion(0, 0, 30, 31, Ok((1, 1)))));
        r.record(0, &waited(completion(0, 100, 105, 106, Ok((1, 1)))));
        r.record(0, &completion(0, 200, 240, 241, Ok((1, 1))));
        let mut out = op_stats(1);
        r.drain_into(&mut out);
        let o = &out[0];
        assert_eq!((o.late, o.client_late), (2, 1));
        assert_eq!((o.max_lag_ns, o.max_client_lag_ns), (40_000_000, 30_000_000));
    }

    #[test]
    fn records_response_from_intended_and_service_from_send() {
        let r = Recorder::new(4, 2);
        r.record(0, &completion(0, 0, 50, 60, Ok((10, 1))));
        r.record(3, &completion(1, 0, 0, 5, Err(ErrorKind::Overloaded)));
        r.record(
            5,
            &Completion {
                measured: false,
                ..completion(0, 0, 0, 1, Ok((1, 1)))
            },
        );
        let mut out = op_stats(2);
        r.drain_into(&mut out);
        let insert = &out[0];
        assert_eq!(
            (
                insert.ok,
                insert.rows,
                insert.partitions,
                insert.late,
                insert.warmup_ops
            ),
            (1, 10, 1, 1, 1)
        );
        assert!(
            (insert.response.max() as f64 - 60e6).abs() < 60e3,
            "response = done - intended"
        );
        assert_eq!(insert.response_ok.max(), insert.response.max());
        assert!(
            (insert.service.max() as f64 - 10e6).abs() < 10e3,
            "service = done - sent"
        );
        assert_eq!(out[1].errors[ErrorKind::Overloaded as usize], 1);
        assert_eq!(
            out[1].response_ok.len(),
            0,
            "errors stay out of the successes' histogram"
        );
        assert_eq!(
            (out[1].response.len(), out[1].service.len(), out[1].due()),
            (1, 1, 1),
            "but are in every operation's response and service times"
        );
        // Sent before its intended start: response time is the service time, not less.
        r.record(1, &completion(0, 2, 1, 4, Ok((1, 1))));
        let mut early = op_stats(2);
        r.drain_into(&mut early);
        assert!(
            (early[0].response.max() as f64 - 3e6).abs() < 3e3,
            "response = done - sent"
        );
        assert_eq!(early[0].late, 0);
        assert_eq!(out[1].error_response.len(), 1);
        // Drained shards start empty.
        r.drain_into(&mut out);
        assert_eq!(out[0].ok + out[0].response.len() + out[1].error_count(), 0);
    }

    #[test]
    fn an_operation_never_sent_counts_from_its_intended_start_until_given_up() {
        let r = Recorder::new(1, 1);
        let t0 = Instant::now();
        r.record(
            0,
            &Completion {
                op: 0,
                intended: t0,
                sent: None,
                done: t0 + Duration::from_millis(700),
                result: Err(ErrorKind::NotSent),
                measured: true,
                waited: false,
            },
        );
        let mut out = op_stats(1);
        r.drain_into(&mut out);
        let o = &out[0];
        assert_eq!((o.errors[ErrorKind::NotSent as usize], o.due(), o.ok), (1, 1, 0));
        assert!((o.response.max() as f64 - 700e6).abs() < 700e3, "{}", o.response.max());
        assert_eq!((o.service.len(), o.late), (0, 0), "it has no service time and no send");
    }
}

/// One interval's merged measurements.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Since the run started.
    pub start: Duration,
    pub length: Duration,
    /// True when the interval ends before the measured window begins.
    pub warmup: bool,
    pub ops: Vec<OpStats>,
    /// Operations sent so far this run (warm-up ones too) when the interval closed: less those
    /// completed so far, the operations in flight.
    pub sent: u64,
}

impl Interval {
    /// Whether it holds measured (not warm-up) operations.
    pub fn has_measured(&self) -> bool {
        self.ops.iter().any(|o| o.ok + o.error_count() > 0)
    }

    /// Whether it belongs in the results: after warm-up, or holding measured operations.
    pub fn is_reported(&self) -> bool {
        !self.warmup || self.has_measured()
    }
}
