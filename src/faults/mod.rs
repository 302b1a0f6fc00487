//! Faults on a schedule during a measured step (`--fault 'pause node1 at 5s for 3s'`): the
//! schedule as written and checked (`spec`), applied to the nodes caplab runs here and always
//! undone (`inject`), and what each fault cost, judged on the measured seconds: detection,
//! recovery, failures and availability during and after it (`impact`).
//!
//! Network faults (a proxy between the client and a node) are not here yet.

pub mod impact;
pub mod inject;
pub mod proxy;
pub mod spec;

pub use impact::{FaultRecord, Tally, mixed_versions};
pub use inject::{Injector, UndoFaults};
pub use spec::FaultSpec;
