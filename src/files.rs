//! Writing a file whole: to a temporary file beside it, then renamed over it, so that a reader
//! (a report, a resumed experiment, `caplab node status`) never sees half of one, and a failed
//! write leaves the previous file as it was. Any folder may use it.

use anyhow::{Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// `path` with `.tmp` after its name: `result.json` → `result.json.tmp`.
pub fn temporary(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `bytes` to `path` atomically (see the module's comment).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temporary(path);
    let written = std::fs::write(&tmp, bytes)
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display())));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `value` to `path` as pretty JSON, atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    write_atomic(path, &serde_json::to_vec_pretty(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_is_left() {
        let dir = std::env::temp_dir().join(format!("caplab-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("result.json");
        assert_eq!(temporary(&path), dir.join("result.json.tmp"));
        write_json(&path, &[1, 2]).unwrap();
        write_atomic(&path, b"[3]").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[3]");
        assert!(!temporary(&path).exists());
        // A failed write (into a directory that is not there) names the file and leaves nothing.
        let err = write_atomic(&dir.join("gone/x.json"), b"x").unwrap_err();
        assert!(format!("{err:#}").contains("gone/x.json.tmp"), "{err:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
