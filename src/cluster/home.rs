//! Where caplab keeps things on disk: node directories (data home) and downloaded
//! Cassandra jars (cache, shared by every data home).

use std::path::{Path, PathBuf};

/// The two roots caplab writes under.
#[derive(Debug, Clone)]
pub struct Home {
    /// Nodes, their configuration, data, logs and state files.
    pub data: PathBuf,
    /// Resolved Cassandra classpaths, one folder per version.
    pub cache: PathBuf,
}

impl Home {
    /// `CAPLAB_HOME` (default `$XDG_DATA_HOME/caplab` or `~/.local/share/caplab`) and
    /// `CAPLAB_CACHE` (default `$XDG_CACHE_HOME/caplab` or `~/.cache/caplab`).
    pub fn from_env() -> Home {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/tmp".into());
        let pick = |var: &str, xdg: &str, fallback: &str| -> PathBuf {
            if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                return PathBuf::from(v);
            }
            match std::env::var_os(xdg).filter(|v| !v.is_empty()) {
                Some(x) => PathBuf::from(x).join("caplab"),
                None => home.join(fallback).join("caplab"),
            }
        };
        Home::at(
            pick("CAPLAB_HOME", "XDG_DATA_HOME", ".local/share"),
            pick("CAPLAB_CACHE", "XDG_CACHE_HOME", ".cache"),
        )
    }

    /// A home with an explicit data directory and the environment's cache.
    pub fn with_data(data: impl AsRef<Path>) -> Home {
        Home::at(data.as_ref(), Home::from_env().cache)
    }

    /// The two roots, made absolute against the working directory: a node's JVM runs in its
    /// own directory, so a relative path (`--out results`, `CAPLAB_HOME=lab`) would name
    /// another place for it (its GC log could not be opened and the node never started).
    pub fn at(data: impl AsRef<Path>, cache: impl AsRef<Path>) -> Home {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        Home {
            data: absolute(data.as_ref()),
            cache: absolute(cache.as_ref()),
        }
    }

    pub fn nodes_dir(&self) -> PathBuf {
        self.data.join("nodes")
    }

    pub fn node_dir(&self, name: &str) -> PathBuf {
        self.nodes_dir().join(name)
    }

    pub fn cassandra_dir(&self, version: &str) -> PathBuf {
        self.cache.join("cassandra").join(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_home_is_made_absolute_against_the_working_directory() {
        let h = Home::at("results/home", "cache");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!((h.data, h.cache), (cwd.join("results/home"), cwd.join("cache")));
    }
}
