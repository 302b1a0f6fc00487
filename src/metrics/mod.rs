//! Recording latency: histograms recorded by the engine's workers without contention,
//! merged once per interval, and written as an HdrHistogram interval log, a per-second CSV
//! and the run summary; every operation as Parquet when asked (ops/); the slowest operations
//! kept to be explained (slow.rs).

pub mod csv;
pub mod hdrlog;
pub mod ops;
pub mod recorder;
pub mod slow;
pub mod summary;

pub use recorder::{ErrorKind, Interval, OpStats, Recorder};

use std::io::{Seek, Write};

/// Appends `bytes` to `file` entirely or not at all: after a failed write (a full disk) the
/// file is cut back to where it was, so a reader never meets half a line.
pub fn write_whole(file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    let at = file.stream_position()?;
    if let Err(e) = file.write_all(bytes) {
        let _ = file.set_len(at);
        let _ = file.seek(std::io::SeekFrom::Start(at));
        return Err(e);
    }
    Ok(())
}
