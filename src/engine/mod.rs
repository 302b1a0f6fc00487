//! The load engine: an open-model rate schedule, a fixed set of worker tasks bounding the
//! operations in flight, and a collector that closes one measurement interval per second.
//!
//! Operation `i` is intended to start at `t0 + i / rate`; its response time is measured from
//! that instant, so time spent waiting behind a stalled server is counted (no coordinated
//! omission). Worker `w` of `C` runs operations `w, w + C, w + 2C, …`, so workers share no
//! counter; each records into its own shard of the recorder.

pub mod loader;
pub mod runner;
pub mod schedule;
#[cfg(test)]
pub mod testing;

use std::future::Future;

use crate::metrics::ErrorKind;

pub use loader::{LoaderSlice, Sliced};
pub use runner::{EndReason, EngineConfig, IntervalSink, RunEnd, Warmup, run};
pub use schedule::Schedule;

/// What an operation did: its type (index into `Workload::op_names`), and the rows and
/// partitions it wrote or read, or the kind of error.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub op: usize,
    pub result: Result<(u64, u64), ErrorKind>,
}

/// A workload the engine can drive: it names its operation types and executes operation
/// `i` deterministically with a per-worker state (buffers reused across operations).
pub trait Workload: Send + Sync + 'static {
    type Worker: Send + 'static;

    fn op_names(&self) -> Vec<String>;

    fn worker(&self, id: usize) -> Self::Worker;

    fn execute<'a>(&'a self, worker: &'a mut Self::Worker, i: u64) -> impl Future<Output = Outcome> + Send + 'a;
}
