//! Measurements: latency histograms recorded by the engine's workers without contention,
//! merged once per interval, and written as an HdrHistogram interval log, a per-second CSV
//! and the run summary.

pub mod csv;
pub mod hdrlog;
pub mod recorder;
pub mod summary;

pub use recorder::{ErrorKind, Interval, OpStats, Recorder};
