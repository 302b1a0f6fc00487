//! The load engine: an open-model rate schedule, a fixed set of worker tasks bounding the
//! operations in flight, and a collector that closes one measurement interval per second.
//!
//! Operation `i` is intended to start at `t0 + i / rate` (or where a rate shape's cumulative
//! count reaches `i`, `shape.rs`); its response time is measured from
//! that instant, so time spent waiting behind a stalled server is counted (no coordinated
//! omission). A free worker takes the next operation from a shared counter, so an operation is
//! late only when `C` are in flight (or the client itself is slow), never because one slow
//! operation holds a lane; each worker records into its own shard of the recorder. `acks`
//! keeps which operations the cluster acknowledged, for reading them back afterwards; `canary`
//! notes when the client itself stalled.

pub mod acks;
pub mod anchor;
pub mod canary;
pub mod clock;
pub mod config;
pub mod due;
pub mod intervals;
pub mod loader;
pub mod meeting;
pub mod notes;
pub mod run_end;
pub mod runner;
pub mod schedule;
pub mod shape;
pub mod stop;
#[cfg(test)]
pub mod testing;

use std::future::Future;

use uuid::Uuid;

use crate::metrics::ErrorKind;
pub use crate::metrics::ops::OpFacts;

pub use anchor::{Anchor, StartAt};
pub use config::{Asked, EngineConfig, TraceSample, Warmup};
pub use intervals::IntervalSink;
pub use loader::{LoaderSlice, Sliced};
pub use meeting::Meeting;
pub use run_end::{EndReason, RunEnd, Span};
pub use runner::run;
pub use schedule::Schedule;
pub use shape::Shape;
pub use stop::Stop;

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

    /// The operation type operation `i` runs (what `execute(_, i)` would report), for
    /// operations that are due but never sent.
    fn op_of(&self, i: u64) -> usize;

    fn execute<'a>(&'a self, worker: &'a mut Self::Worker, i: u64) -> impl Future<Output = Outcome> + Send + 'a;

    /// Whether `execute_traced` sends operations with the server's tracing on
    /// (`--trace-slow`); a run asking for traces of a workload that cannot is refused.
    fn traces(&self) -> bool {
        false
    }

    /// Executes operation `i` as `execute` does, with the server's tracing on, and gives the
    /// trace's session id (None when the server gave none). By default it is not traced.
    fn execute_traced<'a>(
        &'a self,
        worker: &'a mut Self::Worker,
        i: u64,
    ) -> impl Future<Output = (Outcome, Option<Uuid>)> + Send + 'a {
        async move { (self.execute(worker, i).await, None) }
    }

    /// The statements it sends, each once: what the operations file (`--ops-parquet`) names
    /// through `OpFacts::statement`.
    fn statements(&self) -> Vec<String> {
        Vec::new()
    }

    /// What the operations file says of operation `i` besides its timing. Asked only when a
    /// run writes one, once per operation: it must be as cheap as choosing the operation.
    fn facts(&self, i: u64) -> OpFacts {
        OpFacts {
            index: i,
            ..OpFacts::default()
        }
    }
}
