//! Built-in workloads: profiles shipped as YAML files in `workloads/`, compiled into the binary.
//! E1's `insert` and `batch` are also profiles (so users can copy them), but run by a
//! hand-written writer for the write path's speed.

use anyhow::{Result, bail};

use super::profile::Profile;

#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    /// The profile text.
    pub yaml: &'static str,
    /// Run by E1's hand-written writer rather than the profile engine.
    pub e1: bool,
}

const fn shipped(name: &'static str, yaml: &'static str) -> Builtin {
    Builtin { name, yaml, e1: false }
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "insert",
        yaml: include_str!("../../workloads/insert.yaml"),
        e1: true,
    },
    Builtin {
        name: "batch",
        yaml: include_str!("../../workloads/batch.yaml"),
        e1: true,
    },
    shipped("keyvalue", include_str!("../../workloads/keyvalue.yaml")),
    shipped("timeseries", include_str!("../../workloads/timeseries.yaml")),
    shipped("mixed", include_str!("../../workloads/mixed.yaml")),
    shipped("wide-read", include_str!("../../workloads/wide-read.yaml")),
    shipped("udt", include_str!("../../workloads/udt.yaml")),
    shipped("tombstones", include_str!("../../workloads/tombstones.yaml")),
    shipped("lwt", include_str!("../../workloads/lwt.yaml")),
    shipped("counter", include_str!("../../workloads/counter.yaml")),
    shipped("sai", include_str!("../../workloads/sai.yaml")),
    shipped("vector", include_str!("../../workloads/vector.yaml")),
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
    pub fn profile(&self) -> Result<Profile> {
        Profile::parse(self.yaml, &format!("workloads/{}.yaml", self.name))
    }

    /// The profile's one-line description.
    pub fn describe(&self) -> String {
        self.profile().ok().and_then(|p| p.description).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses_and_is_described() {
        for b in BUILTINS {
            let p = b.profile().unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert_eq!(p.name.as_deref(), Some(b.name));
            assert!(!b.describe().is_empty(), "{} has no description", b.name);
        }
        assert!(find("nope").unwrap_err().to_string().contains("keyvalue"));
    }
}
