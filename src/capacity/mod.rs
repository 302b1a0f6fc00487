//! The capacity search (`caplab capacity`): the highest rate at which a workload meets its
//! service level. A `plan` decides which rate and repeat to run next (an adaptive `search`
//! after a flat-out probe, or a sweep of fixed rates) from what the steps so far say; `run`
//! runs those steps (each a measured step of `measure`, judged by `sla`), confirms the capacity
//! found by holding it, prices it, and keeps everything in capacity.json (`result`, a `CapacityResult` as result.json is a `RunResult`); `command`
//! prepares a search from its `options` as `caplab run` prepares a run.

pub mod command;
pub mod options;
pub mod plan;
pub mod result;
pub mod run;
pub mod search;

pub use options::CapacityOptions;
pub use plan::{Plan, RateResult};
pub use result::{CapacityResult, SearchStep};
pub use run::{Capacity, Pricing};
pub use search::{Search, parse_rates};
