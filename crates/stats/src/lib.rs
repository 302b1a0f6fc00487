//! caplab's numbers: the statistics that compare configurations and find changes (`stats`), and
//! the steady-state rules that end a warm-up and judge a window (`steady`), with `format`'s one
//! way of writing a number. Pure functions over numbers: no I/O, no clock, nothing of caplab's
//! above them, which the compiler enforces by keeping them in a crate of their own. The crate is
//! built optimised even in debug builds (the workspace's Cargo.toml says why), and caplab
//! re-exports `stats` and `steady` under its own root, so `crate::stats::…` reads the same
//! everywhere.
//!
//! Layers, highest first (`scripts/check-layout.py` checks it, as for caplab's own src/):
//!
//! ```text
//! steady
//! stats format
//! ```

pub mod format;
pub mod stats;
pub mod steady;
