//! Which operations are due and which are measured: the schedule, the warm-up (by time, by
//! count, or until the interval sink settles) and the run's length, with the counters every
//! worker shares (one atomic each, touched once per operation).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::config::{EngineConfig, Warmup};
use super::schedule::Schedule;

/// A time not known yet (or never: a run without a schedule has no end time).
pub const UNKNOWN: u64 = u64::MAX;

/// What the workers share: one counter each, touched once per operation.
pub struct Counters {
    /// The next operation index to take.
    pub next: AtomicU64,
    /// Measured operations taken (for an operation count without a schedule).
    pub measured_taken: AtomicU64,
    /// Operations sent.
    pub sent: AtomicU64,
    /// End of warm-up, ns after the anchor (set when known, for a count warm-up flat out).
    pub warmup_end_ns: AtomicU64,
    /// End of the schedule, ns after the anchor (UNKNOWN until known, or when there is none).
    pub end_ns: AtomicU64,
    /// Operations from this index on are not taken (a count on a schedule; u64::MAX: none).
    pub limit: AtomicU64,
    /// How an automatic warm-up ended: 0 not yet, 1 settled, 2 its maximum.
    pub auto_end: AtomicU8,
}

impl Counters {
    fn at(t0: Instant, ns: u64) -> Option<Instant> {
        (ns != UNKNOWN).then(|| t0 + Duration::from_nanos(ns))
    }
}

pub fn ns_after(t0: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(t0).as_nanos()).unwrap_or(UNKNOWN - 1)
}

/// What decides which operations are due and which are measured: the schedule, the warm-up
/// and the length, read by every worker (each holds a clone; what changes lives in `Counters`).
#[derive(Clone)]
pub struct Due {
    pub t0: Instant,
    pub schedule: Schedule,
    /// Operations of a count warm-up.
    pub warmup_ops: u64,
    /// The measured window's length, for a run with a duration.
    pub duration: Option<Duration>,
    /// Measured operations, for a run with an operation count.
    pub ops: Option<u64>,
    /// Warm-up ends when the sink settles (or at its maximum): until then nothing is measured.
    pub auto: bool,
    pub interval: Duration,
    /// A trace played once: every operation of it is sent, however late.
    pub whole_trace: bool,
    /// How long the end waits for workers still busy (`EngineConfig::drain_timeout`).
    pub drain: Duration,
}

impl Due {
    pub fn warmup_end(&self, counters: &Counters) -> Option<Instant> {
        Counters::at(self.t0, counters.warmup_end_ns.load(Ordering::Relaxed))
    }

    pub fn end(&self, counters: &Counters) -> Option<Instant> {
        Counters::at(self.t0, counters.end_ns.load(Ordering::Relaxed))
    }

    /// Whether operation `i`, intended at `intended`, is measured (not warm-up); the first
    /// measured operation of a count warm-up without a schedule ends warm-up there.
    pub fn measured(&self, counters: &Counters, i: u64, intended: Instant) -> bool {
        if self.warmup_ops > 0 {
            if i < self.warmup_ops {
                return false;
            }
            if !self.schedule.is_open() && counters.warmup_end_ns.load(Ordering::Relaxed) == UNKNOWN {
                let at = ns_after(self.t0, intended);
                if counters
                    .warmup_end_ns
                    .compare_exchange(UNKNOWN, at, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                    && let Some(d) = self.duration
                {
                    let end = at.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(UNKNOWN - 1));
                    counters.end_ns.store(end.min(UNKNOWN - 1), Ordering::Relaxed);
                }
            }
            return true;
        }
        match self.warmup_end(counters) {
            Some(w) => intended >= w,
            None => !self.auto,
        }
    }

    /// Ends an automatic warm-up (if it has not ended yet) at the first interval boundary not
    /// before `not_before`; the measured window, or count, starts there. False if it had ended.
    pub fn end_warmup(&self, counters: &Counters, not_before: Instant, settled: bool) -> bool {
        let since = not_before.saturating_duration_since(self.t0).as_nanos();
        let interval_ns = self.interval.as_nanos().max(1);
        let at = self.t0
            + Duration::from_nanos(u64::try_from(since.div_ceil(interval_ns) * interval_ns).unwrap_or(UNKNOWN - 1));
        let ns = ns_after(self.t0, at);
        if counters
            .warmup_end_ns
            .compare_exchange(UNKNOWN, ns, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        if let Some(d) = self.duration {
            let end = ns.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(UNKNOWN - 1));
            counters.end_ns.store(end.min(UNKNOWN - 1), Ordering::Relaxed);
        }
        if let (Some(n), true) = (self.ops, self.schedule.is_open()) {
            counters
                .limit
                .store(self.schedule.due_before(at).saturating_add(n), Ordering::Relaxed);
        }
        counters.auto_end.store(if settled { 1 } else { 2 }, Ordering::Relaxed);
        true
    }

    /// What is due and measured under `cfg` on the schedule anchored at `t0`, and the counters
    /// the workers share.
    pub fn new(t0: Instant, cfg: &EngineConfig) -> (Due, Arc<Counters>) {
        // The shape starts with the measured window: a fixed warm-up runs at its first rate.
        let schedule = match cfg.schedule_shape() {
            Some(shape) => Schedule::shaped(t0, shape),
            None => Schedule::new(t0, cfg.rate),
        };
        let due = Due {
            t0,
            schedule: schedule.clone(),
            warmup_ops: match cfg.warmup {
                Warmup::Ops(n) => n,
                _ => 0,
            },
            duration: cfg.duration,
            ops: cfg.ops,
            auto: matches!(cfg.warmup, Warmup::Auto { .. }),
            interval: cfg.interval,
            whole_trace: schedule.shape.as_ref().is_some_and(|s| s.operations().is_some()),
            drain: cfg.drain_timeout,
        };
        let auto_max = cfg.warmup.auto_max();
        let warmup_end = match cfg.warmup {
            Warmup::None => Some(t0),
            Warmup::Time(d) => Some(t0 + d),
            Warmup::Ops(n) => schedule.intended(n),
            Warmup::Auto { .. } => None,
        };
        // The first measured operation, on a schedule (an automatic warm-up sets its limit when
        // it ends).
        let first_measured = match cfg.warmup {
            Warmup::None | Warmup::Auto { .. } => 0,
            Warmup::Time(d) => schedule.due_before(t0 + d),
            Warmup::Ops(n) => n,
        };
        // A run with a duration ends with its schedule; one counted in operations performs them
        // all (late if it must: each counts from its intended start) and ends with the last.
        let end = cfg.duration.and_then(|d| warmup_end.map(|w| w + d));
        let limit = match (cfg.duration, cfg.ops) {
            (None, Some(n)) if schedule.is_open() && auto_max.is_none() => first_measured + n,
            _ => u64::MAX,
        };
        // A trace's shape holds its own operations and no more.
        let limit = limit.min(schedule.shape.as_ref().and_then(|s| s.operations()).unwrap_or(u64::MAX));
        let counters = Arc::new(Counters {
            next: AtomicU64::new(0),
            measured_taken: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            warmup_end_ns: AtomicU64::new(warmup_end.map_or(UNKNOWN, |w| ns_after(t0, w))),
            end_ns: AtomicU64::new(end.map_or(UNKNOWN, |e| ns_after(t0, e))),
            limit: AtomicU64::new(limit),
            auto_end: Default::default(),
        });
        (due, counters)
    }
}
