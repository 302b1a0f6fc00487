//! What every folder may use to talk to the user: progress lines on stderr (stdout is kept for
//! results), numbers written the way the summaries write them (`group`, kept with the
//! statistics in crates/stats, which write numbers too), and the known word nearest a mistyped
//! one, for errors that name the fix.

pub use caplab_stats::format::group;

/// Progress for the user goes to stderr, so stdout stays for results.
pub fn say(msg: &str) {
    eprintln!("{msg}");
}

/// The candidate most like `word` (Jaro similarity above 0.7, clap's own rule for flags), if
/// one is that close.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro(word, c), c))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// ", did you mean 'x'?" for a mistyped `word`, or nothing when no candidate is close.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(word, candidates)
        .map(|c| format!(": did you mean '{c}'?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_key_is_named_and_a_stranger_is_not() {
        let keys = ["duration", "concurrency", "rate", "warmup"];
        assert_eq!(nearest("duraton", keys), Some("duration"));
        assert_eq!(nearest("concurency", keys), Some("concurrency"));
        assert_eq!(nearest("zebra", keys), None);
        assert_eq!(did_you_mean("wramup", keys), ": did you mean 'warmup'?");
        assert_eq!(did_you_mean("zebra", keys), "");
    }
}
