//! caplab: a performance lab for Apache Cassandra.
//!
//! The binary in `main.rs` is only a command line over these modules, so that tests and
//! other tools can drive each stage directly.

pub mod cli;
pub mod cluster;
