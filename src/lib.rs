//! caplab: a performance lab for Apache Cassandra.
//!
//! Data flows one way: a workload (`workload`) is driven by the engine (`engine`) over a CQL
//! session (`client`), measurements are recorded and written (`metrics`), and `measure` runs
//! one measured step with all of that attached and leaves a typed result on disk; `capacity`
//! searches for the highest rate that meets a service level, step by step; `readback` reads
//! back what a run's cluster acknowledged. `steady` decides when warm-up ends and whether a
//! measured window was steady; `sla` judges results against service levels; `telemetry` reads
//! what the server did meanwhile, and `server_profile` where its time went (async-profiler over
//! the measured window); `cluster` provisions the nodes being measured; `live` serves and pushes
//! a run's figures to Prometheus while it runs. `experiment` runs measurements per configuration
//! on fresh nodes and compares them with `stats`; `history` keeps every result's key figures in
//! a database, by series, for finding regressions over time, and decides what a nightly check
//! fails on; `report` turns any of those results on disk into an HTML page. The command line
//! (`cli`) only parses options into settings, calls, and prints. `console` (printing and number
//! formats), `cpus` (CPU placement), `files` (writing a file whole) and `procfs` (/proc) are
//! small helpers any folder may use.
//!
//! Layers, highest first: a folder imports only folders on lower lines, never one on its own
//! line or above (`scripts/check-layout.py` checks it in CI, and names the two files of any
//! import against it).
//!
//! ```text
//! cli
//! report
//! experiment merge
//! history
//! capacity
//! measure
//! server_profile readback
//! workload telemetry sla faults live capture
//! client engine cluster
//! metrics stats steady
//! console cpus files procfs
//! ```

pub mod capacity;
pub mod capture;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod console;
pub mod cpus;
pub mod engine;
pub mod experiment;
pub mod faults;
pub mod files;
pub mod history;
pub mod live;
pub mod measure;
pub mod merge;
pub mod metrics;
pub mod procfs;
pub mod readback;
pub mod report;
pub mod server_profile;
pub mod sla;
pub mod telemetry;
pub mod workload;

// The statistics and steady-state rules live in crates/stats (pure functions over numbers,
// optimised even in debug builds); caplab names them as its own bottom-layer modules.
pub use caplab_stats::{stats, steady};
