//! Where a run keeps its operations' fates (`acks.bin`, written by `--validate`) and which of
//! them a read-back samples: shared by E1's read-back and the counters' and claims'.

use anyhow::{Context, Result, bail};
use std::path::Path;

use crate::engine::acks::Acks;

/// The file the operations' fates are kept in.
pub const ACKS_FILE: &str = "acks.bin";

/// Whether operation `i` is in the sample of `fraction` (a hash of `i`: the same operations
/// every time).
pub fn sampled(i: u64, fraction: f64) -> bool {
    fraction >= 1.0 || (crate::workload::values::mix(i ^ 0x5bd1_e995) as f64) < fraction * u64::MAX as f64
}

/// Saves the operations' fates beside the results.
pub fn save_acks(dir: &Path, acks: &Acks) -> Result<()> {
    crate::files::write_atomic(&dir.join(ACKS_FILE), &acks.to_bytes())
}

/// The fates a run saved in `dir`.
pub fn load_acks(dir: &Path) -> Result<Acks> {
    let path = dir.join(ACKS_FILE);
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "{} has no {ACKS_FILE}: only a run made with --validate keeps which writes were acknowledged",
            dir.display()
        )
    })?;
    match Acks::from_bytes(&bytes) {
        Some(a) => Ok(a),
        None => bail!("{} is not a file caplab wrote (cut short?)", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fraction_samples_about_that_share_the_same_way_each_time() {
        let n = 100_000u64;
        let picked = (0..n).filter(|i| sampled(*i, 0.1)).count() as f64 / n as f64;
        assert!((0.097..0.103).contains(&picked), "{picked}");
        assert!((0..n).all(|i| sampled(i, 1.0)));
        assert_eq!(
            (0..1000).filter(|i| sampled(*i, 0.1)).collect::<Vec<_>>(),
            (0..1000).filter(|i| sampled(*i, 0.1)).collect::<Vec<_>>()
        );
    }
}
