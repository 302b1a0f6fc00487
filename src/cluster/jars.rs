//! Cassandra from jars a user has: a folder of jars (cassandra-all or apache-cassandra and its
//! dependencies), or a Cassandra source tree built with `ant jar` (`build/apache-cassandra-*.jar`,
//! `build/lib/jars/`, `lib/`), which is gathered into one folder of links under caplab's cache
//! each time a node starts from it (so a rebuild is what starts next).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

use super::ClusterSpec;
use super::home::Home;

/// The folder of jars `spec`'s nodes run with: its own jars', else Maven Central's for its
/// version (resolved the first time).
pub fn of_spec(home: &Home, spec: &ClusterSpec, say: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    match &spec.jars {
        Some(dir) => classpath(home, dir),
        None => super::maven::resolve(home, &spec.version, say),
    }
}

/// The folder of jars a node started from `dir` runs with.
pub fn classpath(home: &Home, dir: &Path) -> Result<PathBuf> {
    let dir = folder(dir)?;
    if jars_in(&dir)?.iter().any(|j| main_jar_version(j).is_some()) {
        return Ok(dir);
    }
    let mut jars = Vec::new();
    for sub in ["build", "build/lib/jars", "lib"] {
        let found = jars_in(&dir.join(sub)).unwrap_or_default();
        jars.extend(found.into_iter().filter(|j| !is_extra(j)));
    }
    if !jars.iter().any(|j| main_jar_version(j).is_some()) {
        bail!("{}", no_jars(&dir));
    }
    let gathered = home
        .cassandra_dir(&format!("built-{:016x}", fnv(dir.to_string_lossy().as_bytes())))
        .join("lib");
    let _ = std::fs::remove_dir_all(&gathered);
    std::fs::create_dir_all(&gathered).with_context(|| format!("cannot create {}", gathered.display()))?;
    for j in jars {
        let name = j.file_name().context("a jar with no name")?;
        // The first of a name wins: the build's own jars before the libraries'.
        let link = gathered.join(name);
        if !link.exists() {
            std::os::unix::fs::symlink(&j, &link).with_context(|| format!("cannot link {}", link.display()))?;
        }
    }
    Ok(gathered)
}

/// The Cassandra release the jars in `dir` are, from the main jar's name
/// (`apache-cassandra-5.0.9.jar`, `cassandra-all-5.1-SNAPSHOT.jar`).
pub fn version_of(dir: &Path) -> Result<String> {
    let dir = folder(dir)?;
    let mut jars = jars_in(&dir)?;
    for sub in ["build", "lib"] {
        jars.extend(jars_in(&dir.join(sub)).unwrap_or_default());
    }
    jars.iter().find_map(|j| main_jar_version(j)).with_context(|| {
        format!(
            "no apache-cassandra-VERSION.jar or cassandra-all-VERSION.jar in {} to tell the release from: say it with --version",
            dir.display()
        )
    })
}

/// `dir` as an absolute path, refused when it is no folder.
pub fn folder(dir: &Path) -> Result<PathBuf> {
    let abs = std::fs::canonicalize(dir).map_err(|_| anyhow::anyhow!("{}", no_jars(dir)))?;
    if !abs.is_dir() {
        bail!("{}", no_jars(dir));
    }
    Ok(abs)
}

fn no_jars(dir: &Path) -> String {
    format!(
        "--jars {}: no Cassandra jars there. Give a folder holding cassandra-all (or apache-cassandra) and its \
         dependencies, or a Cassandra source tree built with `ant jar` (build/apache-cassandra-*.jar and lib/)",
        dir.display()
    )
}

fn jars_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jar") && p.is_file())
        .collect();
    out.sort();
    Ok(out)
}

/// Test, source and documentation jars of a build, which a node does not run.
fn is_extra(jar: &Path) -> bool {
    let name = jar
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    ["-tests.jar", "-sources.jar", "-javadoc.jar", "-test.jar"]
        .iter()
        .any(|s| name.ends_with(s))
}

fn main_jar_version(jar: &Path) -> Option<String> {
    if is_extra(jar) {
        return None;
    }
    let name = jar.file_name()?.to_str()?.strip_suffix(".jar")?;
    let version = ["apache-cassandra-", "cassandra-all-"]
        .iter()
        .find_map(|p| name.strip_prefix(p))?;
    version
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| version.to_string())
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_the_main_jar_and_test_jars_are_left_out() {
        let v = |n: &str| main_jar_version(Path::new(n));
        assert_eq!(
            v("/b/apache-cassandra-5.1-SNAPSHOT.jar").as_deref(),
            Some("5.1-SNAPSHOT")
        );
        assert_eq!(v("/l/cassandra-all-5.0.9.jar").as_deref(), Some("5.0.9"));
        assert_eq!(v("/b/apache-cassandra-5.0.9-tests.jar"), None);
        assert_eq!(v("/b/apache-cassandra-thrift-1.jar"), None);
        assert_eq!(v("/l/guava-32.jar"), None);
    }

    #[test]
    fn a_source_tree_is_gathered_into_one_folder_and_a_wrong_folder_named() {
        let root = std::env::temp_dir().join(format!("caplab-jars-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (d, f) in [
            ("tree/build", "apache-cassandra-5.1-SNAPSHOT.jar"),
            ("tree/build", "apache-cassandra-5.1-SNAPSHOT-tests.jar"),
            ("tree/lib", "guava.jar"),
            ("tree/build/lib/jars", "junit.jar"),
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
            std::fs::write(root.join(d).join(f), b"jar").unwrap();
        }
        let home = Home {
            data: root.join("data"),
            cache: root.join("cache"),
        };
        let tree = root.join("tree");
        assert_eq!(version_of(&tree).unwrap(), "5.1-SNAPSHOT");
        let lib = classpath(&home, &tree).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&lib)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["apache-cassandra-5.1-SNAPSHOT.jar", "guava.jar", "junit.jar"]);
        assert!(lib.starts_with(root.join("cache")));
        // A folder of jars is used as it is.
        assert_eq!(classpath(&home, &lib).unwrap(), std::fs::canonicalize(&lib).unwrap());
        let e = classpath(&home, &root.join("data")).unwrap_err().to_string();
        assert!(e.contains("no Cassandra jars there") && e.contains("ant jar"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
