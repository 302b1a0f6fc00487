//! The slowest operations of a run, kept so that each can be explained (measure/causes.rs).
//!
//! Every measured operation slower than its type's running threshold is offered to its worker's
//! own shard (the same shard as the recorder's, so the lock is uncontended). A shard keeps what
//! it is offered in a buffer allocated once; when more is offered than it holds, it keeps a
//! uniform sample (reservoir sampling), and each kept operation stands for `offered / kept` of
//! them. The interval thread sets the thresholds after each interval from the second measured one
//! on: half the lower of the measured window's p99 so far and the lowest p99 of any measured
//! interval (none before), so that an operation over the final p99 was offered unless, when it
//! ended, every measured interval before it had a p99 over twice the window's: at least two.
//! (After one only, a first second holding a GC pause would set a threshold over the final p99
//! for the second after it.)

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use uuid::Uuid;

use super::OpStats;
use super::recorder::{Completion, ns_since, response_from};

/// Operations kept in all, across shards (about 72 bytes each).
pub const KEPT: usize = 1 << 16;

/// Slow traced operations kept in all, across shards: their traces are read after the window,
/// the slowest first.
pub const TRACED_KEPT: usize = 4096;

/// One slow operation: times in nanoseconds after the run's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowOp {
    pub op: u16,
    pub intended_ns: i64,
    /// Where its response time starts (the earlier of intended and sent).
    pub from_ns: i64,
    /// None for an operation never sent.
    pub sent_ns: Option<i64>,
    pub done_ns: i64,
    pub error: bool,
    /// A free worker held it before its intended start (any lateness of its send is the
    /// client's own).
    pub waited: bool,
    /// How many offered operations it stands for.
    pub weight: f64,
    /// The server's trace of it, for an operation sent traced (`--trace-slow`).
    pub trace: Option<Uuid>,
}

impl SlowOp {
    pub fn response_ns(&self) -> i64 {
        self.done_ns - self.from_ns
    }
}

struct Reservoir {
    kept: Vec<SlowOp>,
    offered: u64,
    /// xorshift64 state.
    rng: u64,
}

/// The slow operations of one run, on their way to being explained.
pub struct SlowOps {
    t0: Instant,
    /// Per operation type, ns: an operation is offered when its response time is over it.
    thresholds: Vec<AtomicU64>,
    /// Per operation type, ns: the lowest p99 of a measured interval so far.
    lowest: Vec<AtomicU64>,
    /// Per operation type: the measured intervals its `lowest` has seen.
    intervals: Vec<AtomicU32>,
    shards: Vec<Mutex<Reservoir>>,
    per_shard: usize,
    /// The slow operations sent traced, apart: a handful among many.
    traced: Vec<Mutex<Reservoir>>,
    traced_per_shard: usize,
    /// A traced operation is kept when its response time is over this (ns), or when None,
    /// over its type's threshold.
    traced_over: Option<u64>,
}

/// What the shards kept, and for how many operations they stand.
#[derive(Debug, Clone, Default)]
pub struct Kept {
    pub ops: Vec<SlowOp>,
    /// Operations offered, all shards.
    pub offered: u64,
}

impl SlowOps {
    pub fn new(t0: Instant, shards: usize, op_types: usize) -> SlowOps {
        let shards = shards.max(1);
        let per_shard = (KEPT / shards).max(64);
        let traced_per_shard = (TRACED_KEPT / shards).max(16);
        let reservoirs = |each: usize, salt: u64| -> Vec<Mutex<Reservoir>> {
            (0..shards)
                .map(|i| {
                    Mutex::new(Reservoir {
                        kept: Vec::with_capacity(each),
                        offered: 0,
                        rng: 0x9E37_79B9_7F4A_7C15 ^ (i as u64 + salt).wrapping_mul(0xBF58_476D_1CE4_E5B9),
                    })
                })
                .collect()
        };
        SlowOps {
            t0,
            thresholds: (0..op_types).map(|_| AtomicU64::new(0)).collect(),
            lowest: (0..op_types).map(|_| AtomicU64::new(u64::MAX)).collect(),
            intervals: (0..op_types).map(|_| AtomicU32::new(0)).collect(),
            shards: reservoirs(per_shard, 1),
            per_shard,
            traced: reservoirs(traced_per_shard, 1 + shards as u64),
            traced_per_shard,
            traced_over: None,
        }
    }

    /// Traced operations are kept when slower than `threshold` (`--trace-slow`'s), instead of
    /// their type's threshold.
    pub fn traced_over(mut self, threshold: Option<std::time::Duration>) -> SlowOps {
        self.traced_over = threshold.map(|t| t.as_nanos() as u64);
        self
    }

    fn ns(&self, at: Instant) -> i64 {
        ns_since(self.t0, at)
    }

    /// Offers one completed operation from shard `shard` (the caller, a worker, always passes
    /// the same one). Allocates nothing: the shard's buffer was allocated whole.
    pub fn offer(&self, shard: usize, c: &Completion) {
        if !c.measured {
            return;
        }
        let over = self.thresholds.get(c.op).map_or(0, |t| t.load(Ordering::Relaxed));
        if let Some(row) = self.row(c, over) {
            keep(&self.shards[shard % self.shards.len()], row, self.per_shard);
        }
    }

    /// Offers an operation sent traced, with its trace's id: kept apart (allocating nothing)
    /// when slower than `--trace-slow`'s threshold, or its type's.
    pub fn offer_traced(&self, shard: usize, c: &Completion, trace: Uuid) {
        if !c.measured {
            return;
        }
        let over = self
            .traced_over
            .unwrap_or_else(|| self.thresholds.get(c.op).map_or(0, |t| t.load(Ordering::Relaxed)));
        if let Some(row) = self.row(c, over) {
            let row = SlowOp {
                trace: Some(trace),
                ..row
            };
            keep(&self.traced[shard % self.traced.len()], row, self.traced_per_shard);
        }
    }

    /// Completion `c` as a slow operation, when its response time is over `over` ns.
    fn row(&self, c: &Completion, over: u64) -> Option<SlowOp> {
        let from = response_from(c);
        let response = c.done.saturating_duration_since(from).as_nanos() as u64;
        if response <= over {
            return None;
        }
        Some(SlowOp {
            op: c.op as u16,
            intended_ns: self.ns(c.intended),
            from_ns: self.ns(from),
            sent_ns: c.sent.map(|s| self.ns(s)),
            done_ns: self.ns(c.done),
            error: c.result.is_err(),
            waited: c.waited,
            weight: 1.0,
            trace: None,
        })
    }

    /// Sets each type's threshold, from its second measured interval on, to half the lower of
    /// its measured p99 so far and the lowest p99 of a measured interval (the interval thread,
    /// after each interval, with the window's totals and the interval's figures).
    pub fn follow(&self, totals: &[OpStats], interval: &[OpStats]) {
        for (t, ((o, i), (low, seen))) in self
            .thresholds
            .iter()
            .zip(totals.iter().zip(interval).zip(self.lowest.iter().zip(&self.intervals)))
        {
            if !i.response.is_empty() {
                low.fetch_min(i.response.value_at_quantile(0.99), Ordering::Relaxed);
                seen.fetch_add(1, Ordering::Relaxed);
            }
            if !o.response.is_empty() && seen.load(Ordering::Relaxed) >= 2 {
                let p99 = o.response.value_at_quantile(0.99).min(low.load(Ordering::Relaxed));
                t.store(p99 / 2, Ordering::Relaxed);
            }
        }
    }

    /// Everything kept, each operation weighted by what its shard was offered.
    pub fn take(&self) -> Kept {
        take(&self.shards)
    }

    /// The slow traced operations kept, weighted as `take`'s.
    pub fn take_traced(&self) -> Kept {
        take(&self.traced)
    }
}

/// Keeps `row` in `shard`, whose buffer holds `cap`: a uniform sample once it is full.
fn keep(shard: &Mutex<Reservoir>, row: SlowOp, cap: usize) {
    let mut r = shard.lock().unwrap_or_else(|p| p.into_inner());
    r.offered += 1;
    if r.kept.len() < cap {
        r.kept.push(row);
        return;
    }
    // Algorithm R: the n-th offered replaces a kept one with probability kept / n.
    r.rng ^= r.rng << 13;
    r.rng ^= r.rng >> 7;
    r.rng ^= r.rng << 17;
    let j = (r.rng % r.offered) as usize;
    if j < cap {
        r.kept[j] = row;
    }
}

/// What `shards` kept, each operation weighted by what its shard was offered; the shards are
/// left empty.
fn take(shards: &[Mutex<Reservoir>]) -> Kept {
    let mut kept = Kept::default();
    for shard in shards {
        let mut r = shard.lock().unwrap_or_else(|p| p.into_inner());
        let weight = r.offered as f64 / r.kept.len().max(1) as f64;
        kept.offered += r.offered;
        kept.ops.extend(r.kept.drain(..).map(|o| SlowOp { weight, ..o }));
        r.offered = 0;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ErrorKind;
    use std::time::Duration;

    fn op(t0: Instant, start_ms: u64, took_ms: u64) -> Completion {
        let intended = t0 + Duration::from_millis(start_ms);
        Completion {
            op: 0,
            intended,
            sent: Some(intended),
            done: intended + Duration::from_millis(took_ms),
            result: Ok((1, 1)),
            measured: true,
            waited: true,
        }
    }

    #[test]
    fn only_measured_operations_over_the_threshold_are_kept_with_their_times() {
        let t0 = Instant::now();
        let slow = SlowOps::new(t0, 2, 1);
        let mut totals = vec![OpStats::default()];
        // p99 40 ms, in two intervals alike: the threshold is 20 ms.
        for i in 0..100 {
            totals[0]
                .response
                .record(if i < 98 { 1_000_000 } else { 40_000_000 })
                .unwrap();
        }
        slow.follow(&totals, &totals);
        slow.follow(&totals, &totals);
        slow.offer(0, &op(t0, 10, 1));
        slow.offer(
            1,
            &Completion {
                measured: false,
                ..op(t0, 20, 30)
            },
        );
        slow.offer(1, &op(t0, 30, 30));
        let mut never = op(t0, 40, 25);
        never.sent = None;
        never.result = Err(ErrorKind::NotSent);
        slow.offer(0, &never);
        let kept = slow.take();
        assert_eq!(kept.offered, 2);
        let ms = |ns: i64| ns / 1_000_000;
        let got: Vec<_> = kept
            .ops
            .iter()
            .map(|o| (ms(o.from_ns), ms(o.response_ns()), o.error))
            .collect();
        assert_eq!(got, vec![(40, 25, true), (30, 30, false)]);
        assert!(kept.ops.iter().all(|o| o.weight == 1.0));
    }

    /// Traced operations are kept apart, with their trace, over `--trace-slow`'s threshold when
    /// it gives one (whatever the type's threshold), over the type's threshold when not.
    #[test]
    fn traced_operations_are_kept_apart_over_their_own_threshold() {
        let t0 = Instant::now();
        let id = Uuid::from_u128(42);
        let by_type = SlowOps::new(t0, 2, 1);
        let floor = SlowOps::new(t0, 2, 1).traced_over(Some(Duration::from_millis(5)));
        let mut totals = vec![OpStats::default()];
        for _ in 0..100 {
            totals[0].response.record(40_000_000).unwrap();
        }
        for s in [&by_type, &floor] {
            s.follow(&totals, &totals);
            s.follow(&totals, &totals);
            s.offer_traced(1, &op(t0, 0, 10), id);
            s.offer_traced(0, &op(t0, 5, 30), id);
        }
        let times = |k: Kept| -> Vec<(i64, Option<Uuid>)> {
            k.ops.iter().map(|o| (o.response_ns() / 1_000_000, o.trace)).collect()
        };
        assert_eq!(times(by_type.take_traced()), vec![(30, Some(id))], "over half of 40 ms");
        assert_eq!(
            times(floor.take_traced()),
            vec![(30, Some(id)), (10, Some(id))],
            "over 5 ms"
        );
        assert_eq!(by_type.take().offered, 0, "the slow operations' own reservoir is apart");
    }

    /// A window whose first second was slow (a GC pause in it): after it every operation is
    /// still offered, for the second after it may be the window's quiet level; from the second
    /// interval on, a quiet interval's lower p99 sets the threshold, so the operations over the
    /// final p99 of a window that settled are offered, and those well under it are not.
    #[test]
    fn a_slow_first_second_sets_no_threshold_and_a_quiet_one_does() {
        let t0 = Instant::now();
        let slow = SlowOps::new(t0, 1, 1);
        let mut slow_start = OpStats::default();
        let mut quiet = OpStats::default();
        for _ in 0..100 {
            slow_start.response.record(40_000_000).unwrap();
            quiet.response.record(4_000_000).unwrap();
        }
        slow.follow(std::slice::from_ref(&slow_start), std::slice::from_ref(&slow_start));
        slow.offer(0, &op(t0, 0, 3));
        assert_eq!(
            slow.take().offered,
            1,
            "no threshold after one interval (it would be 20 ms)"
        );
        slow.follow(std::slice::from_ref(&slow_start), std::slice::from_ref(&quiet));
        slow.offer(0, &op(t0, 0, 3));
        slow.offer(0, &op(t0, 0, 1));
        assert_eq!(
            slow.take().offered,
            1,
            "3 ms over half of the quiet interval's 4 ms, 1 ms not"
        );
    }

    /// More offered than a shard holds: it keeps a uniform sample, weighted to the offered
    /// count. Of 40,000 operations offered in order, half in the first 20 s, a uniform sample
    /// keeps half of its weight there (within 4 standard errors of a proportion of 1,024).
    #[test]
    fn a_full_shard_keeps_a_uniform_sample_weighted_to_what_it_was_offered() {
        let t0 = Instant::now();
        let slow = SlowOps::new(t0, KEPT / 1024, 1);
        for i in 0..40_000 {
            slow.offer(0, &op(t0, i, 5));
        }
        let kept = slow.take();
        assert_eq!((kept.ops.len(), kept.offered), (1024, 40_000));
        let weight: f64 = kept.ops.iter().map(|o| o.weight).sum();
        assert!((weight - 40_000.0).abs() < 1e-6, "{weight}");
        let early = kept.ops.iter().filter(|o| o.from_ns < 20_000_000_000).count() as f64 / 1024.0;
        assert!((early - 0.5).abs() < 4.0 * (0.25f64 / 1024.0).sqrt(), "{early}");
    }
}
