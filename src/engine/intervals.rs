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

use super::IntervalSink;
use crate::metrics::recorder::{ShardSets, merge, shard_sets};
use crate::metrics::{Interval, OpStats};

/// One interval's shards, as swapped out of the recorder, and its place in time.
pub struct Batch {
    pub shards: ShardSets,
    pub start: Duration,
    pub length: Duration,
    pub warmup: bool,
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

impl<S: IntervalSink + Send + 'static> IntervalThread<S> {
    pub fn spawn(sink: S, shards: usize, op_types: usize) -> IntervalThread<S> {
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
                let mut interval = Interval {
                    start: Duration::ZERO,
                    length: Duration::ZERO,
                    warmup: true,
                    ops: (0..op_types).map(|_| OpStats::default()).collect(),
                };
                let mut totals: Vec<OpStats> = (0..op_types).map(|_| OpStats::default()).collect();
                let mut error = None;
                for mut batch in rx {
                    merge(&mut batch.shards, &mut interval.ops);
                    let _ = spare_tx.send(batch.shards);
                    interval.start = batch.start;
                    interval.length = batch.length;
                    interval.warmup = batch.warmup;
                    for (t, o) in totals.iter_mut().zip(&interval.ops) {
                        t.add(o);
                    }
                    if let Err(e) = sink.interval(&interval)
                        && error.is_none()
                    {
                        let e = format!("{e:#}");
                        let _ = error_tx.send(e.clone());
                        error = Some(e);
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
