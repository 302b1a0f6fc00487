//! One history record: what identifies the series a result belongs to (the workload and its
//! options, the target's version, JDK, GC, heap and settings, the node count, the client host's
//! class), the user's labels, and the key figures, read from a run's result.json (a merged
//! one too) or a capacity search's capacity.json.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::capacity::CapacityResult;
use crate::measure::RunResult;
use crate::measure::result::{CAPACITY_FILE, RESULT_FILE};

/// What makes two results comparable over time: everything here is the same for every record
/// of a series. Labels (a commit, a build) are not: they say which run is which.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesKey {
    /// `run` or `capacity`.
    pub kind: String,
    pub workload: String,
    /// The workload's options as result.json records them (E1's, or the profile's definition).
    pub workload_options: serde_json::Value,
    /// Operations per second asked (0: flat out; a capacity search: 0; a rate shape: its mean).
    pub rate: f64,
    /// The rate shape asked, if any (left out of the key's JSON without one, so the ids of
    /// series recorded before shapes existed stay the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_shape: Option<String>,
    pub concurrency: usize,
    /// The measured window (s) or operations, as asked (a capacity search: each step's).
    pub duration_s: Option<f64>,
    pub ops: Option<u64>,
    /// `1/1`, a loader's slice `i/n`, or `merged n`.
    pub loaders: String,
    pub consistency: String,
    /// The service level (capacity searches and runs judged against one).
    pub sla: Option<String>,
    /// The cluster's Cassandra release as it reported it (None: unknown).
    pub version: Option<String>,
    /// Nodes caplab ran: JDK major, collector, heap (bytes), cassandra.yaml settings and JVM
    /// options as asked. Empty for clusters caplab does not run.
    pub jdk: Option<u32>,
    pub gc: Option<String>,
    pub heap: Option<u64>,
    pub settings: Vec<String>,
    pub jvm_opts: Vec<String>,
    /// `c1` for nodes caplab ran with C1 alone (`--jit c1`: about two thirds of the throughput);
    /// left out of the key's JSON for the JIT as shipped, so earlier series keep their ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit: Option<String>,
    /// The version of the text values were written with, from 2 on (left out for version 1,
    /// whose values repeated past their 12th character: its series keep their ids, and a new
    /// run starts a series of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<u32>,
    /// The cluster's nodes (`Environment::nodes`).
    pub nodes: usize,
    /// The client host's class: cores, and memory rounded to whole GiB.
    pub client_cores: usize,
    pub client_ram_gib: u64,
}

impl SeriesKey {
    /// The series' id: a hash of the key's canonical JSON (16 hex digits; users may give any
    /// unique prefix).
    pub fn id(&self) -> String {
        format!("{:016x}", fnv1a(self.canonical().as_bytes()))
    }

    pub fn canonical(&self) -> String {
        serde_json::to_string(self).expect("a series key serialises")
    }

    /// A name for people: `insert flat out, Cassandra 5.0.9, JDK 17 g1 4G, 1 node, 2 cores`.
    pub fn name(&self) -> String {
        let rate = if self.kind == "capacity" {
            format!("capacity ({})", self.sla.as_deref().unwrap_or("no SLA"))
        } else if let Some(shape) = &self.rate_shape {
            format!("along {shape}")
        } else if self.rate > 0.0 {
            format!("at {} op/s", crate::console::group(self.rate))
        } else {
            "flat out".into()
        };
        let mut parts = vec![
            format!("{} {rate}", self.workload),
            format!("Cassandra {}", self.version.as_deref().unwrap_or("?")),
        ];
        if let (Some(j), Some(g), Some(h)) = (self.jdk, &self.gc, self.heap) {
            parts.push(format!("JDK {j} {g} {}", heap_text(h)));
        }
        if let Some(jit) = &self.jit {
            parts.push(format!("JIT {jit}"));
        }
        if !self.settings.is_empty() {
            parts.push(self.settings.join(" "));
        }
        if self.values.is_none() {
            parts.push("values v1".into());
        }
        parts.push(format!("{} node{}", self.nodes, if self.nodes == 1 { "" } else { "s" }));
        if self.loaders != "1/1" {
            parts.push(format!("loaders {}", self.loaders));
        }
        parts.push(format!("{} cores", self.client_cores));
        parts.join(", ")
    }
}

fn heap_text(bytes: u64) -> String {
    let gib = 1u64 << 30;
    if bytes.is_multiple_of(gib) {
        format!("{}G", bytes / gib)
    } else {
        format!("{}M", bytes >> 20)
    }
}

/// FNV-1a, 64 bits: a stable hash of the key's text (the same in every caplab version, which
/// std's hasher is not).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The figures kept per record (None: not measured there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub throughput: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub service_p99_ms: Option<f64>,
    pub errors: Option<u64>,
    pub server_cpu_us_per_op: Option<f64>,
    pub gc_pause_ms: Option<f64>,
    pub capacity: Option<f64>,
}

/// The figures' names, as the store's columns and `caplab history` call them.
pub const FIGURES: [&str; 10] = [
    "throughput",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "service_p99_ms",
    "errors",
    "server_cpu_us_per_op",
    "gc_pause_ms",
    "capacity",
];

impl Figures {
    /// In the order of `FIGURES`.
    pub fn values(&self) -> [Option<f64>; 10] {
        [
            self.throughput,
            self.p50_ms,
            self.p99_ms,
            self.p999_ms,
            self.max_ms,
            self.service_p99_ms,
            self.errors.map(|e| e as f64),
            self.server_cpu_us_per_op,
            self.gc_pause_ms,
            self.capacity,
        ]
    }

    pub fn from_values(v: [Option<f64>; 10]) -> Figures {
        Figures {
            throughput: v[0],
            p50_ms: v[1],
            p99_ms: v[2],
            p999_ms: v[3],
            max_ms: v[4],
            service_p99_ms: v[5],
            errors: v[6].map(|e| e as u64),
            server_cpu_us_per_op: v[7],
            gc_pause_ms: v[8],
            capacity: v[9],
        }
    }
}

/// The figures that carry an interval; the store keeps it in columns `<figure>_lo` and
/// `<figure>_hi`.
pub const WITH_INTERVAL: [&str; 5] = ["throughput", "p50_ms", "p99_ms", "p999_ms", "capacity"];

/// A record's intervals by figure (of `WITH_INTERVAL`): a run's own 95 % interval by sectioning
/// its window (`measure::sections`, `stats::sectioning`): how far the figure would move were the
/// same window measured again, the run-to-run spread of a series not included; for a capacity,
/// the search's bracket: the rate held to the lowest rate that failed above it.
pub type Intervals = BTreeMap<String, [f64; 2]>;

/// One result, as the history keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// What makes the same result the same when imported twice: its kind, start (ms), workload,
    /// loader and client host.
    pub result_key: String,
    pub series: SeriesKey,
    pub labels: BTreeMap<String, String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// completed, interrupted, failed (a search: the search's).
    pub status: String,
    pub caplab_version: String,
    /// The results directory, absolute.
    pub dir: PathBuf,
    /// The sitting it ran in (`sitting_of`): runs of one sitting share a level that moves from
    /// sitting to sitting, which change points take as a level of their own.
    pub sitting: String,
    /// The measured window's steady-state class (`flat`, `warm-up`, `slowdown`, `none`), `not
    /// steady` for an automatic warm-up that never settled, or None: not judged.
    pub steady: Option<String>,
    /// Whether the window was steady (None: not judged, as results written before verdicts).
    pub is_steady: Option<bool>,
    pub figures: Figures,
    pub intervals: Intervals,
    /// What else the run's machine did (None: not read, as in capacity searches and results
    /// from before it was).
    pub machine: Option<super::disturbed::MachineLoad>,
}

/// The record of the results in `dir`: a capacity search (capacity.json) or a run (result.json,
/// merged or not). `extra` labels are added to those the result carries (theirs win).
pub fn of_dir(dir: &Path, extra: &BTreeMap<String, String>) -> Result<Record> {
    let dir = std::path::absolute(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    let mut rec = if dir.join(CAPACITY_FILE).exists() {
        of_capacity(&dir, &CapacityResult::load(&dir)?)?
    } else if dir.join(RESULT_FILE).exists() {
        of_run(&dir, &RunResult::load(&dir)?)
    } else {
        anyhow::bail!(
            "{} holds no caplab results (no {RESULT_FILE} or {CAPACITY_FILE}): give a run's, a capacity search's, a merge's or an experiment's directory",
            dir.display()
        );
    };
    for (k, v) in extra {
        rec.labels.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if let Some(s) = rec.labels.get(SITTING_LABEL).filter(|s| !s.is_empty()) {
        rec.sitting = s.clone();
    }
    Ok(rec)
}

/// A run's record (`dir` absolute).
pub fn of_run(dir: &Path, r: &RunResult) -> Record {
    let t = r.summary.as_ref().map(|s| &s.total);
    let server = r.server.as_ref().filter(|s| s.not_collected.is_none());
    let cpu = server.map(|s| s.nodes.iter().map(|n| n.cpu_seconds).sum::<f64>());
    let figures = Figures {
        throughput: t.map(|t| t.op_rate),
        p50_ms: t.map(|t| t.response.median_ms),
        p99_ms: t.map(|t| t.response.p99_ms),
        p999_ms: t.map(|t| t.response.p999_ms),
        max_ms: t.map(|t| t.response.max_ms),
        service_p99_ms: t.map(|t| t.service.p99_ms),
        errors: t.map(|t| t.error_total),
        server_cpu_us_per_op: cpu
            .zip(t)
            .and_then(|(c, t)| (t.ops > 0).then(|| c * 1e6 / t.ops as f64)),
        gc_pause_ms: server.map(|s| s.gc_total_ms),
        capacity: None,
    };
    let (steady, is_steady) = match (&r.steady_state, &r.warmup) {
        (_, Some(w)) if w.settled == Some(false) => (Some("not settled".to_string()), Some(false)),
        (Some(s), _) => (
            Some(s.class.map_or("too short", |c| c.name()).to_string()),
            Some(s.steady),
        ),
        (None, _) => (None, None),
    };
    let loaders = match &r.merged {
        Some(m) => format!("merged {}", m.loaders.len()),
        None => r.config.engine.loader.clone(),
    };
    let series = series_of(r, "run", r.config.engine.rate, loaders.clone());
    let mut labels = r.labels.clone();
    if !r.faults.is_empty() {
        // Faults are a change made on purpose, not another configuration: they stay in the
        // series (a fault's added delay is how a known change is placed in one) and show as a
        // label wherever the record does.
        let text: Vec<&str> = r.faults.iter().map(|f| f.fault.as_str()).collect();
        labels.entry("faults".into()).or_insert_with(|| text.join("; "));
    }
    Record {
        result_key: result_key(
            "run",
            &r.started_at,
            &r.workload,
            &loaders,
            &r.config.client.hosts,
            &r.environment.client_host,
        ),
        series,
        labels,
        started_at: r.started_at.clone(),
        finished_at: r.finished_at.clone(),
        status: r.status.name().to_string(),
        caplab_version: r.caplab_version.clone(),
        dir: dir.to_path_buf(),
        sitting: sitting_of(
            &r.labels,
            &r.environment.client_host,
            &r.environment.boot_id,
            &r.started_at,
        ),
        steady,
        is_steady,
        intervals: run_intervals(dir, r, &figures),
        figures,
        machine: super::disturbed::MachineLoad::of(r),
    }
}

/// A run's 95 % intervals by sectioning its window; none where its interval log is gone or its
/// window is shorter than `SECTIONS` seconds (a record is kept without them).
fn run_intervals(dir: &Path, r: &RunResult, f: &Figures) -> Intervals {
    use crate::measure::sections::{self, SECTIONS, Section};
    let Ok(Some(parts)) = sections::of(dir, r, SECTIONS) else {
        return Intervals::new();
    };
    type Of = fn(&Section) -> f64;
    let figures: [(&str, Option<f64>, Of); 4] = [
        ("throughput", f.throughput, |s| s.ops_per_s),
        ("p50_ms", f.p50_ms, |s| s.p50_ms),
        ("p99_ms", f.p99_ms, |s| s.p99_ms),
        ("p999_ms", f.p999_ms, |s| s.p999_ms),
    ];
    figures
        .into_iter()
        .filter_map(|(name, overall, of)| {
            let values: Vec<f64> = parts.iter().map(of).collect();
            let (lo, hi) = crate::stats::sectioning(overall?, &values, 0.95)?;
            Some((name.to_string(), [lo.max(0.0), hi]))
        })
        .collect()
}

/// A capacity search's record: the capacity it holds (confirmed where it was confirmed), the
/// target and workload read from its first step's result.json.
fn of_capacity(dir: &Path, c: &CapacityResult) -> Result<Record> {
    let first = c
        .probe
        .iter()
        .chain(&c.steps)
        .next()
        .with_context(|| format!("{}: the capacity search ran no step", dir.display()))?;
    let step = RunResult::load(&dir.join(&first.dir))?;
    let mut series = series_of(&step, "capacity", 0.0, step.config.engine.loader.clone());
    series.duration_s = Some(c.measure_s);
    series.sla = Some(c.sla.text());
    let steps: Vec<_> = c.steps.iter().chain(&c.confirmation).collect();
    let judged: Vec<bool> = steps.iter().filter_map(|s| s.steady).collect();
    let is_steady = (!judged.is_empty()).then(|| judged.iter().all(|s| *s));
    let mut labels = c.labels.clone();
    if !c.faults.is_empty() {
        labels.entry("faults".into()).or_insert_with(|| c.faults.join("; "));
    }
    Ok(Record {
        result_key: result_key(
            "capacity",
            &c.started_at,
            &c.workload,
            &series.loaders,
            &step.config.client.hosts,
            &step.environment.client_host,
        ),
        series,
        labels,
        started_at: c.started_at.clone(),
        finished_at: None,
        status: c.status.name().to_string(),
        caplab_version: c.caplab_version.clone(),
        dir: dir.to_path_buf(),
        sitting: sitting_of(
            &c.labels,
            &step.environment.client_host,
            &step.environment.boot_id,
            &c.started_at,
        ),
        steady: is_steady.map(|s| if s { "every step flat" } else { "a step not steady" }.to_string()),
        is_steady,
        figures: Figures {
            throughput: Some(c.highest_achieved_rate),
            capacity: c.held(),
            ..Figures::default()
        },
        intervals: capacity_bracket(c),
        machine: None,
    })
}

/// The search's bracket around the capacity held: it to the lowest rate that failed above it
/// (none when no rate above failed: the capacity is only a lower bound).
fn capacity_bracket(c: &CapacityResult) -> Intervals {
    let Some(held) = c.held() else {
        return Intervals::new();
    };
    // A rate that failed its search step, or passed it and failed the confirmation.
    let failed = c.rates.iter().filter(|r| !r.pass).map(|r| r.rate);
    let unconfirmed = c.confirmation.iter().filter(|s| !s.pass).map(|s| s.rate);
    let failed_above = failed.chain(unconfirmed).filter(|r| *r > held).reduce(f64::min);
    failed_above
        .map(|hi| Intervals::from([("capacity".to_string(), [held, hi])]))
        .unwrap_or_default()
}

/// The label that names a result's sitting (`--label sitting=night-42`), where a job knows
/// better than the clock which runs were one sitting.
pub const SITTING_LABEL: &str = "sitting";

/// A result's sitting: its `sitting` label, or else the client host, the first 8 digits of its
/// boot id (where the result has one) and the UTC day it started: `vm-1 b9f200fb 2026-11-27`.
pub fn sitting_of(labels: &BTreeMap<String, String>, host: &str, boot_id: &str, started_at: &str) -> String {
    if let Some(s) = labels.get(SITTING_LABEL).filter(|s| !s.is_empty()) {
        return s.clone();
    }
    let day = started_at.get(..10).unwrap_or(started_at);
    let boot = boot_id.get(..8).unwrap_or(boot_id);
    [host, boot, day]
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sitting of a row recorded before sittings were kept: its host is the last word of its
/// result key.
pub fn sitting_of_key(labels: &BTreeMap<String, String>, result_key: &str, started_at: &str) -> String {
    let host = result_key.rsplit(' ').next().unwrap_or("");
    sitting_of(labels, host, "", started_at)
}

/// What makes a result one: its kind, start, workload, loaders, the cluster it measured (its
/// contact points: a duet's two runs start in the same second on one host, against two
/// clusters) and the client's host, last.
fn result_key(kind: &str, started_at: &str, workload: &str, loaders: &str, cluster: &[String], host: &str) -> String {
    format!("{kind} {started_at} {workload} {loaders} {} {host}", cluster.join(","))
}

fn series_of(r: &RunResult, kind: &str, rate: f64, loaders: String) -> SeriesKey {
    let node = r.environment.local_nodes.first().map(|n| &n.spec);
    let e = &r.config.engine;
    SeriesKey {
        kind: kind.into(),
        workload: r.workload.clone(),
        workload_options: serde_json::to_value(&r.config.workload).unwrap_or_default(),
        rate,
        rate_shape: e.rate_shape.clone(),
        concurrency: e.concurrency,
        duration_s: e.duration_s,
        ops: e.ops,
        loaders,
        // As result.json names it (`LocalOne`).
        consistency: format!("{:?}", r.config.client.consistency),
        sla: r.config.sla.as_ref().map(|s| s.text()),
        version: r
            .environment
            .cassandra_release_version
            .clone()
            .or_else(|| node.map(|n| n.version.clone())),
        jdk: node.map(|n| n.jdk.major),
        gc: node.map(|n| n.gc.to_string()),
        heap: node.map(|n| n.heap),
        settings: node.map(|n| n.overrides.clone()).unwrap_or_default(),
        jvm_opts: node.map(|n| n.jvm_opts.clone()).unwrap_or_default(),
        jit: node.filter(|n| !n.jit.is_tiered()).map(|n| n.jit.to_string()),
        values: (r.config.values > 1).then_some(r.config.values),
        nodes: r.environment.nodes(r.config.client.hosts.len()),
        client_cores: r.environment.cores,
        client_ram_gib: (r.environment.ram_bytes as f64 / (1u64 << 30) as f64).round() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_ids_are_stable_across_builds() {
        // FNV-1a's published test vectors: the id of a series never changes with caplab's
        // version or platform, so a history keeps its series.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn nodes_on_c1_alone_are_a_series_of_their_own_and_the_shipped_jit_keeps_old_ids() {
        let shipped: SeriesKey = serde_json::from_value(serde_json::json!({
            "kind": "run", "workload": "insert", "workload_options": {}, "rate": 1000.0,
            "concurrency": 256, "duration_s": 30.0, "ops": null, "loaders": "1/1",
            "consistency": "LocalOne", "sla": null, "version": "5.0.9", "jdk": 17, "gc": "g1",
            "heap": 1073741824u64, "settings": [], "jvm_opts": [], "nodes": 1,
            "client_cores": 2, "client_ram_gib": 24
        }))
        .unwrap();
        // A key recorded before the JIT was part of it reads back with the same canonical text.
        assert!(!shipped.canonical().contains("jit"), "{}", shipped.canonical());
        let c1 = SeriesKey {
            jit: Some("c1".into()),
            values: Some(crate::workload::values::TEXT_VERSION),
            ..shipped.clone()
        };
        assert_ne!(c1.id(), shipped.id());
        assert!(c1.name().contains("JDK 17 g1 1G, JIT c1, 1 node"), "{}", c1.name());
    }

    #[test]
    fn runs_of_the_second_text_start_a_series_and_the_first_keeps_its_id_and_says_so() {
        let old: SeriesKey = serde_json::from_value(serde_json::json!({
            "kind": "run", "workload": "insert", "workload_options": {}, "rate": 0.0,
            "concurrency": 256, "duration_s": 30.0, "ops": null, "loaders": "1/1",
            "consistency": "LocalOne", "sla": null, "version": "5.0.9", "jdk": null, "gc": null,
            "heap": null, "settings": [], "jvm_opts": [], "nodes": 1, "client_cores": 2,
            "client_ram_gib": 24
        }))
        .unwrap();
        assert!(!old.canonical().contains("values"), "{}", old.canonical());
        assert_eq!(
            old.name(),
            "insert flat out, Cassandra 5.0.9, values v1, 1 node, 2 cores"
        );
        let new = SeriesKey {
            values: Some(2),
            ..old.clone()
        };
        assert_ne!(new.id(), old.id());
        assert_eq!(new.name(), "insert flat out, Cassandra 5.0.9, 1 node, 2 cores");
    }

    #[test]
    fn a_sitting_is_the_label_or_the_host_boot_and_day() {
        let none = BTreeMap::new();
        let at = "2026-11-27T13:54:00.123Z";
        assert_eq!(
            sitting_of(&none, "vm-1", "b9f200fb-1941-4e53", at),
            "vm-1 b9f200fb 2026-11-27"
        );
        assert_eq!(sitting_of(&none, "vm-1", "", at), "vm-1 2026-11-27");
        let named = BTreeMap::from([("sitting".to_string(), "night-42".to_string())]);
        assert_eq!(sitting_of(&named, "vm-1", "b9f2", at), "night-42");
        let key = result_key("run", at, "insert", "merged 2", &["127.0.0.1:9042".into()], "vm-1");
        assert_eq!(sitting_of_key(&none, &key, at), "vm-1 2026-11-27");
    }
}
