//! Steady state: when a run's automatic warm-up may end (`settle`: the client's series has no
//! trend and bounded variation, and the server's JIT has gone quiet), and whether a measured
//! window was steady (`verdict`: changepoints found by `pelt` in its per-second throughput,
//! p50 and p99, classed flat, warm-up, slowdown or no steady state; throughput decides flat out,
//! throughput and p50 at a fixed rate). Comparisons keep every window after a settled warm-up;
//! the class serves their steady-only check.

pub mod pelt;
pub mod settle;
pub mod verdict;

pub use settle::{Check, Sample, Settle};
pub use verdict::{Class, Load, SecondFigures, SteadyState, judge};
