//! Resolving jars from Maven Central into cached folders with the machine's `mvn`:
//! `org.apache.cassandra:cassandra-all:<version>` with its dependencies, and tools such as
//! async-profiler.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::home::Home;

/// Marker written once a folder's jars are all in place.
const COMPLETE: &str = ".complete";

/// One Maven artifact: `group:artifact:version`.
#[derive(Debug, Clone, Copy)]
pub struct Artifact<'a> {
    pub group: &'a str,
    pub artifact: &'a str,
    pub version: &'a str,
}

/// The folder of jars for `version`, resolving it first if it is not cached yet.
/// `say` receives one-line progress messages for the user.
pub fn resolve(home: &Home, version: &str, say: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    validate_version(version)?;
    let dir = home.cassandra_dir(version);
    let cassandra = Artifact {
        group: "org.apache.cassandra",
        artifact: "cassandra-all",
        version,
    };
    let what = format!("cassandra-all {version} and its dependencies");
    fetch(
        &dir,
        &[cassandra],
        true,
        &what,
        &|output, log| explain_failure(version, output, log),
        say,
    )
}

/// What to tell a user when Maven could not download `what` (its output, its log file).
pub fn explain_other(what: &str, output: &str, log: &Path) -> String {
    let first = output
        .lines()
        .find(|l| l.starts_with("[ERROR]"))
        .unwrap_or("no [ERROR] line");
    format!(
        "Maven could not download {what}: {first}. If the machine has no network, run once on one that has \
         and copy ~/.m2. Maven's log: {}",
        log.display()
    )
}

/// `dir/lib`, holding `artifacts` (with their runtime dependencies if `transitive`) from Maven
/// Central, downloaded with the machine's `mvn` the first time and cached after. When Maven
/// fails, `explain` turns its output and log path into the error.
pub fn fetch(
    dir: &Path,
    artifacts: &[Artifact],
    transitive: bool,
    what: &str,
    explain: &dyn Fn(&str, &Path) -> String,
    say: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    let lib = dir.join("lib");
    if lib.join(COMPLETE).exists() {
        return Ok(lib);
    }
    which_mvn()?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    say(&format!(
        "Resolving {what} from Maven Central into {} (first use only)",
        lib.display()
    ));
    let pom = dir.join("pom.xml");
    std::fs::write(&pom, pom_xml(artifacts))?;
    let partial = dir.join(format!("lib.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let log_path = dir.join("mvn.log");
    let log = std::fs::File::create(&log_path)?;
    let status = Command::new("mvn")
        // -U: a version missing on an earlier try may have been published since.
        .args(["-B", "-U", "-f"])
        .arg(&pom)
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", partial.display()))
        .arg("-DincludeScope=runtime")
        .arg(format!("-DexcludeTransitive={}", !transitive))
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .context("cannot run mvn")?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&partial);
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        bail!("{}", explain(&output, &log_path));
    }
    let jars = count_jars(&partial)?;
    if jars == 0 {
        bail!(
            "mvn finished but copied no jars into {}; see {}",
            partial.display(),
            log_path.display()
        );
    }
    std::fs::write(partial.join(COMPLETE), format!("{jars} jars\n"))?;
    // Another process may have finished the same folder meanwhile: theirs is as good.
    if std::fs::rename(&partial, &lib).is_err() && lib.join(COMPLETE).exists() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    if !lib.join(COMPLETE).exists() {
        bail!("could not move resolved jars into {}", lib.display());
    }
    say(&format!("Resolved {jars} jars for {what}"));
    Ok(lib)
}

/// Versions become file names and XML text: keep them to what Maven versions look like.
pub fn validate_version(version: &str) -> Result<()> {
    let ok = !version.is_empty()
        && version.chars().next().is_some_and(|c| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !ok {
        bail!(
            "'{version}' is not a Cassandra version: use a cassandra-all version published on Maven Central, such as 5.0.9 or 6.0-alpha2"
        );
    }
    Ok(())
}

fn which_mvn() -> Result<()> {
    match Command::new("mvn").arg("-v").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!(
            "Maven (mvn) is needed to download Cassandra's jars the first time a version is used, \
             and it was not found on PATH: install it (Debian/Ubuntu: apt-get install maven) and try again"
        ),
    }
}

fn pom_xml(artifacts: &[Artifact]) -> String {
    let deps: String = artifacts
        .iter()
        .map(|a| {
            format!(
                "    <dependency>\n      <groupId>{}</groupId>\n      <artifactId>{}</artifactId>\n      <version>{}</version>\n    </dependency>\n",
                a.group, a.artifact, a.version
            )
        })
        .collect();
    format!(
        r#"<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>caplab</groupId>
  <artifactId>classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}  </dependencies>
</project>
"#
    )
}

fn count_jars(dir: &Path) -> Result<usize> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jar"))
        .count())
}

/// Turns Maven's output into one paragraph that names the fix.
pub fn explain_failure(version: &str, mvn_output: &str, log: &Path) -> String {
    let artifact = format!("org.apache.cassandra:cassandra-all:jar:{version}");
    let missing = mvn_output
        .lines()
        .any(|l| l.contains(&artifact) && (l.contains("Could not find artifact") || l.contains("was not found in")));
    if missing {
        return format!(
            "Cassandra {version} is not published on Maven Central as org.apache.cassandra:cassandra-all: \
             check the version (for example 5.0.9 or 6.0-alpha2). Maven's log: {}",
            log.display()
        );
    }
    let offline = [
        "UnknownHostException",
        "Could not transfer",
        "Connection refused",
        "Network is unreachable",
        "timed out",
    ];
    if offline.iter().any(|m| mvn_output.contains(m)) {
        return format!(
            "Maven Central could not be reached to download Cassandra {version}: check the network or the \
             proxy/mirror in ~/.m2/settings.xml, or run once on a machine that can reach it and copy ~/.m2. \
             Maven's log: {}",
            log.display()
        );
    }
    let first_error = mvn_output
        .lines()
        .find(|l| l.starts_with("[ERROR]"))
        .unwrap_or("no [ERROR] line");
    format!(
        "Maven could not resolve Cassandra {version}: {first_error}. Maven's log: {}",
        log.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_versions_that_are_not_maven_versions() {
        assert!(validate_version("5.0.9").is_ok());
        assert!(validate_version("6.0-alpha2").is_ok());
        for bad in ["", "latest", "5.0.9/../x", "5 0", "<x>"] {
            assert!(validate_version(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn explains_unpublished_and_unreachable() {
        let log = Path::new("/x/mvn.log");
        let missing =
            "[ERROR] Failed ... Could not find artifact org.apache.cassandra:cassandra-all:jar:0.0.1 in central";
        assert!(explain_failure("0.0.1", missing, log).contains("not published"));
        // Maven words it differently once the miss is cached in ~/.m2.
        let cached = "[ERROR] Failed: org.apache.cassandra:cassandra-all:jar:0.0.1 was not found in https://x during a previous attempt.";
        assert!(explain_failure("0.0.1", cached, log).contains("not published"));
        let offline = "[ERROR] Could not transfer artifact ... java.net.UnknownHostException: repo";
        assert!(explain_failure("5.0.9", offline, log).contains("could not be reached"));
        assert!(explain_failure("5.0.9", "[ERROR] boom", log).contains("[ERROR] boom"));
    }
}
