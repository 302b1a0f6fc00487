//! Measurements: one measured step (`step`: warm-up, measured window, every interval fanned
//! out to the `sinks`, a typed `result`), or a capacity search made of steps (`capacity`). The
//! workload is chosen and prepared here (`workload`), on a target reached here (`target`);
//! `signal` turns Ctrl-C, SIGTERM and SIGHUP into a clean stop; `out` names results directories
//! and keeps secrets out of what is recorded. The command line only builds the settings and
//! prints what comes back; an experiment runs the same pieces once per variant.

pub mod capacity;
pub mod commands;
pub mod options;
pub mod out;
pub mod result;
pub mod signal;
pub mod sinks;
pub mod step;
pub mod target;
pub mod workload;

pub use capacity::{Capacity, CapacityReport, Pricing};
pub use result::{RunResult, RunStatus};
pub use sinks::Show;
pub use step::{Load, Step};
pub use target::{JmxOptions, Site, Target};
pub use workload::{Choice, Prepared, WorkloadOptions};
