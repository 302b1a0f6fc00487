//! Built-in workloads: profiles shipped as YAML files in `workloads/`, compiled into the binary.
//! E1's `insert` and `batch` are also profiles (so users can copy them), but run by a
//! hand-written writer for the write path's speed. The bank (`bank-accord`, `bank-paxos`) is
//! not a profile: its transfers read before they write and its audits check an invariant
//! (`workload::bank`); `workloads/bank-*.cql` shows its statements.

use anyhow::{Result, bail};

use super::bank::Txn;
use super::profile::Profile;

#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    /// The profile text.
    pub yaml: &'static str,
    /// What runs it.
    pub runner: Runner,
}

/// What runs a built-in workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// The profile engine.
    Profile,
    /// E1's hand-written writer.
    E1,
    /// The bank's transfers and audits, with `yaml` its statements (CQL) and this description.
    Bank(Txn, &'static str),
}

const fn shipped(name: &'static str, yaml: &'static str) -> Builtin {
    Builtin {
        name,
        yaml,
        runner: Runner::Profile,
    }
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "insert",
        yaml: include_str!("../../workloads/insert.yaml"),
        runner: Runner::E1,
    },
    Builtin {
        name: "batch",
        yaml: include_str!("../../workloads/batch.yaml"),
        runner: Runner::E1,
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
    shipped("accord-kv", include_str!("../../workloads/accord-kv.yaml")),
    Builtin {
        name: "bank-accord",
        yaml: include_str!("../../workloads/bank-accord.cql"),
        runner: Runner::Bank(
            Txn::Accord,
            "Accord transactions (6.0): transfers between accounts in two partitions, audits of each branch's total at SERIAL, the invariant checked after the run",
        ),
    },
    Builtin {
        name: "bank-paxos",
        yaml: include_str!("../../workloads/bank-paxos.cql"),
        runner: Runner::Bank(
            Txn::Paxos,
            "Lightweight transactions: the same transfers as a SERIAL read and a conditional batch on the branch's partition; contended ones counted apart",
        ),
    },
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
        match self.runner {
            Runner::Bank(_, text) => text.to_string(),
            _ => self.profile().ok().and_then(|p| p.description).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses_and_is_described() {
        for b in BUILTINS.iter().filter(|b| !matches!(b.runner, Runner::Bank(..))) {
            let p = b.profile().unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert_eq!(p.name.as_deref(), Some(b.name));
            assert!(!b.describe().is_empty(), "{} has no description", b.name);
        }
        assert!(find("nope").unwrap_err().to_string().contains("keyvalue"));
        assert!(find("bank-paxos").unwrap().describe().contains("conditional batch"));
    }
}
