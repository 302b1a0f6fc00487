//! The engine's clock: tokio's, read as a `std::time::Instant`. In a build for use it is the
//! monotonic clock itself; a test that starts tokio's clock paused (`start_paused = true`) runs
//! the schedule, the workers' sleeps and the intervals in virtual time, so what it asserts
//! about scheduling holds exactly, however loaded the machine is.

use std::time::Instant;

/// Now, on the runtime's clock (the monotonic clock unless a test paused it).
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
