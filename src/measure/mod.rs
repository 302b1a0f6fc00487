//! Measured steps: one measured step (`step`: warm-up, measured window, every interval fanned
//! out to the `sinks`, a typed `result` and what it says to people, `render`, its window cut into
//! `sections` for the interval of its own figures, a rate shape's constant parts summarized in
//! `phases`); a capacity search is made of them one layer
//! up (`capacity`); `load` is how the client
//! generates load, whatever a step's rate. The
//! workload is chosen and prepared here (`workload`, from `workload_options`; a profile's
//! `populate` phase), on a target reached here (`target`);
//! `environment` is where a run ran (host, boot, the cluster's size);
//! `signal` turns Ctrl-C, SIGTERM and SIGHUP into a clean stop; `out` names results directories
//! and keeps secrets out of what is recorded; `validated` runs a step whose acknowledged writes
//! `readback` then reads back (`--validate`); `causes` (against the `evidence`) and `audit` say why the slow operations
//! were slow, and `traces` what the server's traces of them say (`--trace-slow`). The command line only builds the settings and
//! prints what comes back; an experiment runs the same pieces once per variant.

pub mod about;
pub mod agree;
pub mod audit;
pub mod causes;
pub mod commands;
pub mod environment;
pub mod evidence;
pub mod failing;
pub mod load;
pub mod options;
pub mod out;
pub mod phases;
pub mod populate;
pub mod rate;
pub mod render;
pub mod replay;
pub mod result;
pub mod sections;
pub mod signal;
pub mod sinks;
pub mod start;
pub mod step;
pub mod target;
pub mod traces;
pub mod validated;
pub mod workload;
pub mod workload_options;

pub use load::Load;
pub use result::{RunResult, RunStatus};
pub use sinks::Show;
pub use step::Step;
pub use target::{JmxOptions, Site, Target};
pub use workload::{Choice, Prepared};
pub use workload_options::WorkloadOptions;
