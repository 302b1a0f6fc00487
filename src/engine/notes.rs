//! Where each completed operation is noted, by the worker that ran it, each in the worker's own
//! shard: the recorder's histograms, the operations file (when the run writes one) and the slow
//! operations kept to be explained.

use std::sync::Arc;

use super::Workload;
use super::anchor::Anchor;
use super::config::EngineConfig;
use super::intervals::OnTotals;
use crate::metrics::Recorder;
use crate::metrics::ops::OpsLog;
use crate::metrics::recorder::Completion;
use crate::metrics::slow::SlowOps;

pub struct Notes {
    pub recorder: Recorder,
    pub ops: Option<OpsLog>,
    pub slow: Arc<SlowOps>,
}

impl Notes {
    /// The recorder and slow operations with `cfg.shards` shards, and the operations file when
    /// the run writes one (`EngineConfig::ops_file`; an error if it cannot be created).
    pub fn new<W: Workload>(workload: &W, cfg: &EngineConfig, anchor: &Anchor) -> (Notes, Result<(), String>) {
        let names = workload.op_names();
        let recorder = Recorder::new(cfg.shards, names.len());
        let slow = Arc::new(SlowOps::new(anchor.instant, recorder.shard_count(), names.len()));
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
        (Notes { recorder, ops, slow }, failed)
    }

    /// Notes operation `i` in shard `shard` (a worker always passes the same one).
    pub fn note<W: Workload>(&self, shard: usize, workload: &W, i: u64, c: &Completion) {
        self.recorder.record(shard, c);
        self.slow.offer(shard, c);
        if let Some(log) = &self.ops {
            log.record(shard, c, workload.facts(i));
        }
    }

    /// What the interval thread calls after each interval: the slow operations' thresholds
    /// follow the window's totals.
    pub fn on_totals(&self) -> OnTotals {
        let slow = self.slow.clone();
        Box::new(move |totals, interval| slow.follow(totals, interval))
    }
}
