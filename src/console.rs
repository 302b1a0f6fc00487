//! What every folder may use to talk to the user: progress lines on stderr (stdout is kept for
//! results) and numbers written the way the summaries write them (`group`, kept with the
//! statistics in crates/stats, which write numbers too).

pub use caplab_stats::format::group;

/// Progress for the user goes to stderr, so stdout stays for results.
pub fn say(msg: &str) {
    eprintln!("{msg}");
}
