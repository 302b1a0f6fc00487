//! How the client generates load, whatever a step's rate and length: concurrency, threads,
//! when to give up on a failing cluster and how long to drain, turned into engine settings.

use std::time::Duration;

use crate::engine::{EngineConfig, Warmup};

/// How the client generates load, whatever a step's rate and length.
#[derive(Debug, Clone)]
pub struct Load {
    /// Operations in flight at most.
    pub concurrency: usize,
    /// Client runtime threads.
    pub threads: u32,
    /// End a step when nothing has succeeded (and something failed) for this long.
    pub give_up_after: Duration,
    /// The client's request timeout: operations in flight at the end get this long (and a
    /// little more) to finish, at most `drain`.
    pub request_timeout: Duration,
    /// The longest operations in flight get to finish at the end or a stop (`--drain`).
    pub drain: Duration,
}

impl Load {
    /// The engine's settings for a step at `rate` (0: flat out) for `duration` or `ops`.
    pub fn engine(&self, rate: f64, duration: Option<Duration>, ops: Option<u64>, warmup: Warmup) -> EngineConfig {
        EngineConfig {
            rate,
            shape: None,
            concurrency: self.concurrency,
            duration,
            ops,
            warmup,
            interval: Duration::from_secs(1),
            give_up_after: self.give_up_after,
            drain_timeout: (self.request_timeout + Duration::from_secs(2)).min(self.drain),
            // One client thread has no one to contend with for a shard; several get a few
            // shards each, so workers on different threads rarely share one.
            shards: if self.threads <= 1 {
                1
            } else {
                4 * self.threads as usize
            },
            ops_file: None,
            trace: None,
        }
    }
}
