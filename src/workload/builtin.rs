//! Built-in workloads: E1's `insert` and `batch` (hand-written for the write path's speed) and
//! profiles shipped as YAML files in `workloads/`, compiled into the binary.

use anyhow::{Result, bail};

use super::profile::Profile;

#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
    /// The profile text, for built-ins that are profiles.
    pub yaml: Option<&'static str>,
}

/// A profile shipped in `workloads/` (its description is the profile's own).
const fn shipped(name: &'static str, yaml: &'static str) -> Builtin {
    Builtin {
        name,
        description: "",
        yaml: Some(yaml),
    }
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "insert",
        description: "E1: one prepared INSERT per operation (pk text 15, ck text 10, five text values of 10)",
        yaml: None,
    },
    Builtin {
        name: "batch",
        description: "E1: UNLOGGED batches of --batch-size rows of one partition",
        yaml: None,
    },
    shipped("keyvalue", include_str!("../../workloads/keyvalue.yaml")),
    shipped("timeseries", include_str!("../../workloads/timeseries.yaml")),
    shipped("mixed", include_str!("../../workloads/mixed.yaml")),
    shipped("wide-read", include_str!("../../workloads/wide-read.yaml")),
    shipped("udt", include_str!("../../workloads/udt.yaml")),
    shipped("tombstones", include_str!("../../workloads/tombstones.yaml")),
];

pub fn find(name: &str) -> Result<&'static Builtin> {
    match BUILTINS.iter().find(|b| b.name == name) {
        Some(b) => Ok(b),
        None => bail!(
            "no built-in workload '{name}': choose one of {} ('caplab workloads' describes them), or pass --profile FILE",
            BUILTINS.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl Builtin {
    pub fn profile(&self) -> Option<Result<Profile>> {
        self.yaml
            .map(|y| Profile::parse(y, &format!("workloads/{}.yaml", self.name)))
    }

    /// The one-line description (a profile's own, for profiles).
    pub fn describe(&self) -> String {
        match self.profile() {
            Some(Ok(p)) => p.description.unwrap_or_default(),
            _ => self.description.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses_and_is_described() {
        for b in BUILTINS {
            if let Some(p) = b.profile() {
                let p = p.unwrap_or_else(|e| panic!("{}: {e}", b.name));
                assert_eq!(p.name.as_deref(), Some(b.name));
            }
            assert!(!b.describe().is_empty(), "{} has no description", b.name);
        }
        assert!(find("nope").unwrap_err().to_string().contains("keyvalue"));
    }
}
