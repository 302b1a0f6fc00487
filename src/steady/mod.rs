//! Steady state: when a run's automatic warm-up may end (`settle`: the client's series has no
//! trend and bounded variation, and the server's JIT has gone quiet), and whether a measured
//! window was steady (`verdict`: changepoints found by `pelt` in its per-second throughput,
//! p50 and p99, classed flat, warm-up, slowdown or no steady state). Comparisons use only
//! steady windows unless told otherwise.

pub mod pelt;
pub mod settle;
pub mod verdict;

pub use settle::{Check, Sample, Settle};
pub use verdict::{Class, Second, SteadyState, judge};
