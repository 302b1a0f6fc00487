//! Workloads: schemas, statements and deterministic value generation. Operation `i` always
//! produces the same keys and values, so reruns are comparable and reads find what writes
//! wrote.

pub mod e1;
pub mod values;
