//! Where the history is: an SQLite file (the default, in caplab's home) or a PostgreSQL server
//! by URL, and how it is named in messages (a URL without its password).

use std::path::{Path, PathBuf};

/// Where the history is: `postgres://…` / `postgresql://…`, or an SQLite file.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    pub fn parse(text: &str) -> Location {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// `--history` as given (`FILE` or `URL`), or `history.db` in caplab's home `home`.
    pub fn resolve(text: Option<&str>, home: &Path) -> Location {
        match text.filter(|t| !t.is_empty()) {
            Some(t) => Location::parse(t),
            None => Location::Sqlite(home.join(super::DEFAULT_FILE)),
        }
    }

    /// For messages: the file, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => match (url.find("://"), url.rfind('@')) {
                (Some(s), Some(at)) if at > s => match url[s + 3..at].find(':') {
                    Some(c) => format!("{}:***{}", &url[..s + 3 + c], &url[at..]),
                    None => url.clone(),
                },
                _ => url.clone(),
            },
        }
    }
}
