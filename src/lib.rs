//! caplab: a performance lab for Apache Cassandra.
//!
//! Data flows one way: a workload (`workload`) is driven by the engine (`engine`) over a CQL
//! session (`client`), measurements are recorded and written (`metrics`), and the command
//! line (`cli`) wires them together. `sla` judges results against service levels and searches
//! for capacity; `telemetry` reads what the server did meanwhile; `cluster` provisions the
//! nodes being measured.

pub mod cli;
pub mod client;
pub mod cluster;
pub mod engine;
pub mod metrics;
pub mod sla;
pub mod telemetry;
pub mod workload;
