//! Provisioning local Cassandra nodes: resolving jars from Maven Central (or a user's build:
//! jars.rs), choosing a JDK,
//! writing cassandra.yaml and the JVM command line, starting, watching and stopping the
//! processes, and the state files that later stages (runs, telemetry) read.

pub mod home;
pub mod jars;
pub mod java;
pub mod jvm;
pub mod local;
pub mod maven;
pub mod node;
pub mod nodetool;
pub mod options;
pub mod ring;
pub mod yaml;

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

pub use home::Home;
pub use java::Jdk;
pub use jvm::{Gc, Jit};

/// What the user asked for: every node of the local cluster runs with this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSpec {
    pub version: String,
    /// Cassandra's jars from this folder (a user's build) instead of Maven Central's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jars: Option<std::path::PathBuf>,
    pub jdk: Jdk,
    pub gc: Gc,
    /// How the JVM compiles (C1 then C2 as shipped, unless C1 only was asked).
    #[serde(default, skip_serializing_if = "Jit::is_tiered")]
    pub jit: Jit,
    /// Heap per node, bytes.
    pub heap: u64,
    pub jvm_opts: Vec<String>,
    /// cassandra.yaml overrides as `key=value`, applied in order.
    pub overrides: Vec<String>,
    pub nodes: u32,
    /// Address of node1; node i listens on this address plus i-1.
    pub address: Ipv4Addr,
    /// JMX port of node1; node i uses this port plus i-1 (JMX binds to 127.0.0.1 only).
    pub jmx_port: u16,
    pub cluster_name: String,
    /// The cores the nodes run on (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// The nodes' timer slack in nanoseconds (Linux's default, 50 µs, when `None`): how late
    /// the kernel may wake their sleeping threads, so how often Cassandra's idle request
    /// workers, which sleep 10 µs to 1 ms at a time while they wait for work, wake up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_ns: Option<u64>,
}

/// How a timer slack reads: `1ms`, or `the kernel's` when none was set.
pub fn slack(ns: Option<u64>) -> String {
    ns.map_or("the kernel's".to_string(), |n| {
        humantime::format_duration(std::time::Duration::from_nanos(n)).to_string()
    })
}

pub const NATIVE_PORT: u16 = 9042;
pub const STORAGE_PORT: u16 = 7000;

impl ClusterSpec {
    pub fn node_name(index: u32) -> String {
        format!("node{index}")
    }

    pub fn node_address(&self, index: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.address) + index - 1)
    }

    pub fn node_jmx_port(&self, index: u32) -> u16 {
        self.jmx_port + (index - 1) as u16
    }

    /// What the nodes run, as each start says it: `Cassandra 5.0.9 on JDK 17.0.15 (path), g1 GC,
    /// heap 1G`, then the JIT, cores and timer slack when they are not the defaults.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "Cassandra {} on JDK {} ({}), {} GC, heap {}",
            self.version,
            self.jdk.version,
            self.jdk.java.display(),
            self.gc,
            jvm::heap_flag_value(self.heap)
        );
        if !self.jit.is_tiered() {
            text += &format!(", JIT {}", self.jit);
        }
        if !self.cpus.is_empty() {
            text += &format!(", on cores {}", crate::cpus::describe(&self.cpus));
        }
        if let Some(n) = self.timer_slack_ns {
            text += &format!(", timer slack {}", slack(Some(n)));
        }
        text
    }

    /// Lines saying how `self` differs from `other`, for "running with a different
    /// configuration" errors.
    pub fn differences(&self, other: &ClusterSpec) -> Vec<String> {
        let mut d = Vec::new();
        let mut cmp = |what: &str, a: String, b: String| {
            if a != b {
                d.push(format!("{what}: {a} (running) vs {b} (asked)"));
            }
        };
        cmp("version", self.version.clone(), other.version.clone());
        let jars = |s: &ClusterSpec| {
            s.jars
                .as_ref()
                .map_or("Maven Central's".to_string(), |j| j.display().to_string())
        };
        cmp("jars", jars(self), jars(other));
        cmp(
            "java",
            self.jdk.java.display().to_string(),
            other.jdk.java.display().to_string(),
        );
        cmp("gc", self.gc.to_string(), other.gc.to_string());
        cmp("jit", self.jit.to_string(), other.jit.to_string());
        cmp(
            "heap",
            jvm::heap_flag_value(self.heap),
            jvm::heap_flag_value(other.heap),
        );
        cmp(
            "jvm options",
            format!("{:?}", self.jvm_opts),
            format!("{:?}", other.jvm_opts),
        );
        cmp(
            "overrides",
            format!("{:?}", self.overrides),
            format!("{:?}", other.overrides),
        );
        cmp("nodes", self.nodes.to_string(), other.nodes.to_string());
        cmp("address", self.address.to_string(), other.address.to_string());
        cmp("jmx port", self.jmx_port.to_string(), other.jmx_port.to_string());
        cmp("cluster name", self.cluster_name.clone(), other.cluster_name.clone());
        cmp(
            "cpus",
            crate::cpus::describe(&self.cpus),
            crate::cpus::describe(&other.cpus),
        );
        cmp("timer slack", slack(self.timer_slack_ns), slack(other.timer_slack_ns));
        d
    }
}
