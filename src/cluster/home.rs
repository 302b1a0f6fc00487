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
        Home {
            data: pick("CAPLAB_HOME", "XDG_DATA_HOME", ".local/share"),
            cache: pick("CAPLAB_CACHE", "XDG_CACHE_HOME", ".cache"),
        }
    }

    /// A home with an explicit data directory and the environment's cache.
    pub fn with_data(data: impl AsRef<Path>) -> Home {
        Home {
            data: data.as_ref().to_path_buf(),
            ..Home::from_env()
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
