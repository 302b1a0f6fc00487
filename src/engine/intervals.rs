//! The interval thread: where each interval's measurements are merged and handed to the sink
//! (interval log, CSV, telemetry, progress, service-level judge), on an OS thread of its own.
//! The engine's collector only swaps the recorder's shards out once per interval, a few
//! microseconds, so the once-a-second work never holds up the runtime that sends operations
//! (on one client thread it would: merging and writing took ~3 ms a second, and the operations
//! due meanwhile went out that much late).

use anyhow::Result;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::oneshot;

use crate::metrics::recorder::{ShardSets, merge, shard_sets};
use crate::metrics::{Interval, OpStats};

/// Receives each closed interval (warm-up ones too, flagged) as the run goes on, on the
/// engine's interval thread.
pub trait IntervalSink {
    fn interval(&mut self, interval: &Interval) -> Result<()>;

    /// During an automatic warm-up, asked after each warm-up interval: whether what it has
    /// seen has settled, so the measured window may begin, and when. A sink that does not judge
    /// never settles (warm-up then lasts its maximum).
    fn settled(&mut self) -> Settled {
        Settled::Not
    }
}

/// Whether an automatic warm-up may end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    Not,
    /// At the next interval boundary.
    Now,
    /// At this boundary, after the anchor (loaders that agreed on when to start measuring).
    At(Duration),
}

/// One interval's shards, as swapped out of the recorder, and its place in time.
pub struct Batch {
    pub shards: ShardSets,
    pub start: Duration,
    pub length: Duration,
    pub warmup: bool,
    /// It ends where warm-up ends (a timed warm-up of whole intervals): measured operations in
    /// it are there only because the tick that closed it came a little late.
    pub ends_warmup: bool,
    /// Operations sent so far this run, read as the interval closed.
    pub sent: u64,
}

/// What the thread hands back at the end.
pub struct Finished<S> {
    pub sink: S,
    /// Every interval's operations, summed.
    pub totals: Vec<OpStats>,
    /// The sink's first error, if it failed.
    pub error: Option<String>,
}

pub struct IntervalThread<S> {
    batches: Option<mpsc::Sender<Batch>>,
    /// Emptied shard sets coming back for reuse.
    spares: mpsc::Receiver<ShardSets>,
    errors: mpsc::Receiver<String>,
    finished: oneshot::Receiver<Finished<S>>,
    shards: usize,
    op_types: usize,
}

/// Called once, from the interval thread, when the sink says an automatic warm-up has settled:
/// with when the measured span starts (after the anchor), or None for the next boundary.
pub type OnSettled = Box<dyn FnOnce(Option<Duration>) + Send>;

/// Called from the interval thread after each interval, with the measured window's totals so
/// far and the interval's own figures (what the slow operations' thresholds follow).
pub type OnTotals = Box<dyn FnMut(&[OpStats], &[OpStats]) + Send>;

impl<S: IntervalSink + Send + 'static> IntervalThread<S> {
    /// With `on_settled`, the sink is asked after every warm-up interval whether warm-up may
    /// end (`IntervalSink::settled`), until it says so.
    pub fn spawn(
        sink: S,
        shards: usize,
        op_types: usize,
        on_settled: Option<OnSettled>,
        mut on_totals: Option<OnTotals>,
    ) -> IntervalThread<S> {
        let (batches, rx) = mpsc::channel::<Batch>();
        let (spare_tx, spares) = mpsc::channel();
        // The first interval's swap finds a set ready: nothing is allocated on the runtime's
        // thread once the schedule has started.
        let _ = spare_tx.send(shard_sets(shards, op_types));
        let (error_tx, errors) = mpsc::channel();
        let (done_tx, finished) = oneshot::channel();
        std::thread::Builder::new()
            .name("caplab-intervals".into())
            .spawn(move || {
                let mut sink = sink;
                let mut on_settled = on_settled;
                let mut interval = Interval {
                    start: Duration::ZERO,
                    length: Duration::ZERO,
                    warmup: true,
                    ops: (0..op_types).map(|_| OpStats::default()).collect(),
                    sent: 0,
                };
                let mut totals: Vec<OpStats> = (0..op_types).map(|_| OpStats::default()).collect();
                // Measured operations completed between the end of warm-up and the late tick
                // that closed the last warm-up interval: moved to the first measured interval,
                // so the window holds exactly its intervals (made only then: 1 MB a type).
                let mut carried: Option<Vec<OpStats>> = None;
                let mut error = None;
                for mut batch in rx {
                    merge(&mut batch.shards, &mut interval.ops);
                    let _ = spare_tx.send(batch.shards);
                    if !batch.warmup
                        && let Some(carried) = carried.take()
                    {
                        for (o, c) in interval.ops.iter_mut().zip(&carried) {
                            o.add(c);
                        }
                    }
                    if batch.warmup && batch.ends_warmup && interval.has_measured() {
                        let mut moved: Vec<OpStats> = (0..op_types).map(|_| OpStats::default()).collect();
                        for (o, c) in interval.ops.iter_mut().zip(moved.iter_mut()) {
                            let warm = o.warmup_ops;
                            c.add(o);
                            c.warmup_ops = 0;
                            o.reset();
                            o.warmup_ops = warm;
                        }
                        carried = Some(moved);
                    }
                    interval.start = batch.start;
                    interval.length = batch.length;
                    interval.warmup = batch.warmup;
                    interval.sent = batch.sent;
                    for (t, o) in totals.iter_mut().zip(&interval.ops) {
                        t.add(o);
                    }
                    if let Some(f) = on_totals.as_mut() {
                        f(&totals, &interval.ops);
                    }
                    if let Err(e) = sink.interval(&interval)
                        && error.is_none()
                    {
                        let e = format!("{e:#}");
                        let _ = error_tx.send(e.clone());
                        error = Some(e);
                    }
                    if batch.warmup && on_settled.is_some() {
                        let at = match sink.settled() {
                            Settled::Not => None,
                            Settled::Now => Some(None),
                            Settled::At(d) => Some(Some(d)),
                        };
                        if let (Some(at), Some(settle)) = (at, on_settled.take_if(|_| at.is_some())) {
                            settle(at);
                        }
                    }
                }
                if let Some(carried) = carried {
                    // No measured interval followed: the operations still count in the totals.
                    for (t, c) in totals.iter_mut().zip(&carried) {
                        t.add(c);
                    }
                }
                let _ = done_tx.send(Finished { sink, totals, error });
            })
            .expect("cannot start the interval thread");
        IntervalThread {
            batches: Some(batches),
            spares,
            errors,
            finished,
            shards,
            op_types,
        }
    }

    /// Empty shard sets to swap into the recorder: ones the thread has finished with, or new
    /// ones (only while the first intervals are in flight).
    pub fn spare(&self) -> ShardSets {
        self.spares
            .try_recv()
            .unwrap_or_else(|_| shard_sets(self.shards, self.op_types))
    }

    pub fn send(&self, batch: Batch) {
        if let Some(b) = &self.batches {
            let _ = b.send(batch);
        }
    }

    /// The sink's error, once it has failed.
    pub fn failed(&self) -> Option<String> {
        self.errors.try_recv().ok()
    }

    /// Waits for the thread to hand over everything sent so far.
    pub async fn finish(mut self) -> Result<Finished<S>> {
        self.batches = None;
        self.finished
            .await
            .map_err(|_| anyhow::anyhow!("the interval thread ended without its results"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (warm-up?, measured successes, warm-up operations) of each interval the sink saw.
    struct Seen(Vec<(bool, u64, u64)>);
    impl IntervalSink for Seen {
        fn interval(&mut self, i: &Interval) -> Result<()> {
            self.0.push((i.warmup, i.ops[0].ok, i.ops[0].warmup_ops));
            Ok(())
        }
    }

    fn batch(second: u64, warmup: bool, ends_warmup: bool, ok: u64, warm: u64) -> Batch {
        let mut shards = shard_sets(1, 1);
        shards[0][0].ok = ok;
        for _ in 0..ok {
            shards[0][0].response.record(1_000_000).unwrap();
        }
        shards[0][0].warmup_ops = warm;
        Batch {
            shards,
            start: Duration::from_secs(second),
            length: Duration::from_secs(1),
            warmup,
            ends_warmup,
            sent: 0,
        }
    }

    #[tokio::test]
    async fn measured_operations_a_late_tick_left_in_warm_up_move_to_the_first_measured_interval() {
        let thread = IntervalThread::spawn(Seen(Vec::new()), 1, 1, None, None);
        thread.send(batch(0, true, false, 0, 1000));
        // The tick closing warm-up came late: one measured operation is in the warm-up interval.
        thread.send(batch(1, true, true, 1, 999));
        thread.send(batch(2, false, false, 999, 0));
        let done = thread.finish().await.unwrap();
        assert_eq!(done.sink.0, [(true, 0, 1000), (true, 0, 999), (false, 1000, 0)]);
        assert_eq!(done.totals[0].ok, 1000);
        assert_eq!(done.totals[0].response.len(), 1000);
        assert_eq!(done.totals[0].warmup_ops, 1999);

        // A warm-up that does not end on an interval's end keeps its measured part where it is.
        let thread = IntervalThread::spawn(Seen(Vec::new()), 1, 1, None, None);
        thread.send(batch(0, true, false, 400, 600));
        thread.send(batch(1, false, false, 1000, 0));
        let done = thread.finish().await.unwrap();
        assert_eq!(done.sink.0, [(true, 400, 600), (false, 1000, 0)]);
    }
}
