//! Measured steps: one measured step (`step`: warm-up, measured window, every interval fanned
//! out to the `sinks`, a typed `result` and what it says to people, `render`, its window cut into
//! `sections` for the interval of its own figures), or a capacity
//! search made of steps (`capacity`, recorded in `capacity_report`); `load` is how the client
//! generates load, whatever a step's rate. The
//! workload is chosen and prepared here (`workload`), on a target reached here (`target`);
//! `signal` turns Ctrl-C, SIGTERM and SIGHUP into a clean stop; `out` names results directories
//! and keeps secrets out of what is recorded; `validate` reads back what the cluster
//! acknowledged (`--validate`; `validate_profile` for counter and claims workloads). The command line only builds the settings and
//! prints what comes back; an experiment runs the same pieces once per variant.

pub mod acks_file;
pub mod agree;
pub mod capacity;
pub mod capacity_report;
pub mod commands;
pub mod load;
pub mod options;
pub mod out;
pub mod render;
pub mod result;
pub mod sections;
pub mod signal;
pub mod sinks;
pub mod step;
pub mod target;
pub mod validate;
pub mod validate_profile;
pub mod validation;
pub mod workload;

pub use capacity::{Capacity, Pricing};
pub use capacity_report::{CapacityReport, SearchStep};
pub use load::Load;
pub use result::{RunResult, RunStatus};
pub use sinks::Show;
pub use step::Step;
pub use target::{JmxOptions, Site, Target};
pub use workload::{Choice, Prepared, WorkloadOptions};
