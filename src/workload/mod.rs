//! Workloads: schemas, statements and deterministic value generation. Operation `i` always
//! produces the same keys and values, so reruns are comparable and reads find what writes
//! wrote.

pub mod ann;
pub mod bank;
pub mod builtin;
pub mod cells;
pub mod compaction;
pub mod e1;
pub mod generate;
pub mod profile;
pub mod profile_workload;
pub mod replay;
pub mod schema;
pub mod spread;
pub mod stress;
pub mod values;
pub mod vector;
