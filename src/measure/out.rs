//! Where results go and what is recorded of how they were made: a default results directory
//! that no other run can share (two loaders started in the same second included), an explicit
//! one that is refused when it already holds results (unless `--force`), and the command line
//! with its secrets taken out.

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::engine::LoaderSlice;

/// What caplab writes into a results directory (`--force` removes these, and their temporary
/// files, nothing else).
const RESULT_FILES: &[&str] = &[
    super::result::RESULT_FILE,
    super::result::CAPACITY_FILE,
    super::result::HDR_LOG,
    super::result::CSV,
    "steps",
];

/// `caplab-results/<date>-<time>.<ms>-<name>[-loader-i-of-n]-<pid>`.
pub fn default_out(name: &str, loader: LoaderSlice) -> PathBuf {
    let stamp = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let stamp: String = stamp
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T' || *c == '.')
        .collect::<String>()
        .replace('T', "-");
    let slice = if loader.is_whole() {
        String::new()
    } else {
        format!("-loader-{}", loader.to_string().replace('/', "-of-"))
    };
    PathBuf::from("caplab-results").join(format!("{stamp}-{name}{slice}-{}", std::process::id()))
}

/// Checks an explicit results directory: one that holds an earlier run's results is refused,
/// unless `force`, which removes those results (and only them) first.
pub fn claim(dir: &Path, force: bool) -> Result<()> {
    let held: Vec<&str> = RESULT_FILES.iter().copied().filter(|f| dir.join(f).exists()).collect();
    if held.is_empty() {
        return Ok(());
    }
    if !force {
        bail!(
            "{} already holds results ({}): choose another --out, or pass --force to replace them",
            dir.display(),
            held.join(", ")
        );
    }
    let with_temporaries = RESULT_FILES
        .iter()
        .flat_map(|f| [dir.join(f), crate::files::temporary(&dir.join(f))]);
    for p in with_temporaries {
        let gone = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        if let Err(e) = gone
            && e.kind() != std::io::ErrorKind::NotFound
        {
            bail!("--force: cannot remove {}: {e}", p.display());
        }
    }
    Ok(())
}

/// Options whose values are secrets, never recorded.
const SECRET_OPTIONS: &[&str] = &[
    "--password",
    "--jmx-password",
    "--jmx-truststore-password",
    "--jmx-keystore-password",
];

/// This process's command line as results record it: secrets replaced by `***`.
pub fn command_line() -> Vec<String> {
    redact(std::env::args())
}

pub fn redact(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
            continue;
        }
        match SECRET_OPTIONS.iter().find(|o| a.starts_with(*o)) {
            Some(o) if a == *o => {
                hide_next = true;
                out.push(a);
            }
            Some(o) if a[o.len()..].starts_with('=') => out.push(format!("{o}=***")),
            _ => out.push(a),
        }
    }
    out
}

/// A `key=value` setting (a cassandra.yaml override, a JVM option) with its value hidden when
/// its key names a password or secret.
pub fn redact_setting(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    match s.split_once('=') {
        Some((key, _))
            if ["password", "secret"]
                .iter()
                .any(|w| key.to_ascii_lowercase().contains(w)) =>
        {
            format!("{key}=***")
        }
        _ if lower.contains("password=") => {
            let at = lower.find("password=").expect("found") + "password=".len();
            format!("{}***", &s[..at])
        }
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_recorded() {
        let args = [
            "caplab",
            "run",
            "--password",
            "hunter2",
            "--jmx-password=s3cret",
            "--user",
            "u",
            "--jmx-truststore",
            "t.p12",
            "--jmx-truststore-password",
            "changeit",
            "--jmx-keystore-password=k",
        ];
        let r = redact(args.iter().map(|s| s.to_string()));
        assert_eq!(
            r,
            [
                "caplab",
                "run",
                "--password",
                "***",
                "--jmx-password=***",
                "--user",
                "u",
                "--jmx-truststore",
                "t.p12",
                "--jmx-truststore-password",
                "***",
                "--jmx-keystore-password=***",
            ]
        );
        assert_eq!(
            redact_setting("client_encryption_options.keystore_password=caplab"),
            "client_encryption_options.keystore_password=***"
        );
        assert_eq!(
            redact_setting("-Dcom.sun.management.jmxremote.password=x"),
            "-Dcom.sun.management.jmxremote.password=***"
        );
        assert_eq!(redact_setting("memtable_flush_writers=8"), "memtable_flush_writers=8");
    }

    #[test]
    fn default_directories_differ_per_loader_and_process() {
        let a = default_out("insert", LoaderSlice::parse("1/2").unwrap());
        let b = default_out("insert", LoaderSlice::parse("2/2").unwrap());
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(name.contains("-insert-loader-1-of-2-"), "{name}");
        assert!(name.ends_with(&std::process::id().to_string()));
    }

    #[test]
    fn a_directory_with_results_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        claim(dir.path(), false).unwrap();
        std::fs::write(dir.path().join("result.json"), "{}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = claim(dir.path(), false).unwrap_err().to_string();
        assert!(
            err.contains("already holds results (result.json)") && err.contains("--force"),
            "{err}"
        );
        claim(dir.path(), true).unwrap();
        assert!(!dir.path().join("result.json").exists());
        assert!(
            dir.path().join("notes.txt").exists(),
            "--force removes caplab's files only"
        );
    }
}
