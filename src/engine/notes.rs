//! Where each completed operation is noted, by the worker that ran it, each in the worker's own
//! shard: the recorder's histograms, the operations file (when the run writes one), the slow
//! operations kept to be explained, and the slow traced ones kept with their trace's id.

use std::sync::Arc;

use super::Workload;
use super::anchor::Anchor;
use super::config::{EngineConfig, TraceSample};
use super::intervals::OnTotals;
use crate::metrics::Recorder;
use crate::metrics::ops::OpsLog;
use crate::metrics::recorder::Completion;
use crate::metrics::slow::SlowOps;

pub struct Notes {
    pub recorder: Recorder,
    pub ops: Option<OpsLog>,
    pub slow: Arc<SlowOps>,
    /// Which operations are sent traced, when the run asks and its workload can.
    trace: Option<TraceSample>,
}

impl Notes {
    /// The recorder and slow operations with `cfg.shards` shards, and the operations file when
    /// the run writes one (`EngineConfig::ops_file`; an error if it cannot be created).
    pub fn new<W: Workload>(workload: &W, cfg: &EngineConfig, anchor: &Anchor) -> (Notes, Result<(), String>) {
        let names = workload.op_names();
        let recorder = Recorder::new(cfg.shards, names.len());
        let trace = cfg.trace.filter(|_| workload.traces());
        let floor = trace.and_then(|t| t.threshold);
        let slow = Arc::new(SlowOps::new(anchor.instant, recorder.shard_count(), names.len()).traced_over(floor));
        let ops = cfg.ops_file.as_ref().map(|target| {
            OpsLog::create(
                target,
                anchor.instant,
                anchor.wall,
                names,
                workload.statements(),
                recorder.shard_count(),
            )
            .map_err(|e| format!("{e:#}"))
        });
        let (ops, failed) = match ops {
            Some(Ok(log)) => (Some(log), Ok(())),
            Some(Err(e)) => (None, Err(e)),
            None => (None, Ok(())),
        };
        (
            Notes {
                recorder,
                ops,
                slow,
                trace,
            },
            failed,
        )
    }

    /// Notes operation `i` in shard `shard` (a worker always passes the same one).
    pub fn note<W: Workload>(&self, shard: usize, workload: &W, i: u64, c: &Completion) {
        self.recorder.record(shard, c);
        self.slow.offer(shard, c);
        if let Some(log) = &self.ops {
            log.record(shard, c, workload.facts(i));
        }
    }

    /// Whether measured operation `i` is sent traced.
    #[inline]
    pub fn traces(&self, i: u64) -> bool {
        self.trace.is_some_and(|t| t.picks(i))
    }

    /// What the interval thread calls after each interval: the slow operations' thresholds
    /// follow the window's totals.
    pub fn on_totals(&self) -> OnTotals {
        let slow = self.slow.clone();
        Box::new(move |totals, interval| slow.follow(totals, interval))
    }
}
