//! What result.json's `server` holds: each second's server and client figures, the measured
//! window's facts per node and together (GC, CPU, flushes, compaction), and what a run says
//! when it could not read them. `Watch` (in this folder's module) fills them.

use serde::{Deserialize, Serialize};

use super::flush::FlushStats;
use super::gclog::GcStats;
use super::{jmx, pools, total};

/// Flush-writer CPU seconds per flushed operation, in µs; None when nothing was flushed.
pub(super) fn us_per_flushed_op(cpu_seconds: f64, ops: u64) -> Option<f64> {
    (ops > 0).then(|| cpu_seconds * 1e6 / ops as f64)
}

/// One interval's server and client figures.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerSecond {
    /// Epoch milliseconds at the end of the interval.
    pub at_ms: u64,
    pub length_s: f64,
    pub gc_pause_ms: f64,
    pub gc_pauses: usize,
    pub server_cpu_cores: f64,
    pub flush_cpu_cores: f64,
    /// The JIT compiler threads' CPU (what an automatic warm-up waits to fall).
    #[serde(default)]
    pub jit_cpu_cores: f64,
    pub server_rss_mb: f64,
    pub client_cpu_cores: f64,
    /// How long the client's runtime stalled in it (`engine::canary`), ms.
    #[serde(default)]
    pub client_stall_ms: f64,
    /// Operations the client sent (and saw end) in it per CPU-second it used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ops_per_cpu_s: Option<f64>,
    /// Operations a free worker sent more than 10 ms late in it: the client did not keep its
    /// schedule.
    #[serde(default)]
    pub client_late_ops: u64,
    /// The run's cores in it (`machine`): every process's CPU, what neither caplab nor its nodes
    /// used, and what the hypervisor stole, in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_cpu_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_cores: Option<f64>,
    /// Whether it lies in the measured window.
    pub measured: bool,
    /// Over JMX (`jmx_watch`), when it is read: the heap in use, the compactions the nodes
    /// estimate they still have to do, what compaction wrote, and SSTables touched per read,
    /// all nodes together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_used_mb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_compactions: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_mb_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sstables_per_read: Option<f64>,
}

/// What the client did in an interval, for its second of the timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientSecond {
    /// Operations sent that ended in it.
    pub sent: u64,
    /// Of them, those a free worker sent more than 10 ms late.
    pub late: u64,
}

/// Something that happened to a node while a run went on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeEvent {
    pub node: String,
    /// Epoch milliseconds of the interval end when it was seen.
    pub at_ms: u64,
    /// `exited`: its process was gone.
    pub event: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeFacts {
    pub name: String,
    pub pid: u32,
    pub gc: GcStats,
    pub cpu_seconds: f64,
    pub cpu_user_seconds: f64,
    pub cpu_system_seconds: f64,
    pub cpu_cores: f64,
    pub rss_max_mb: f64,
    pub flushes: FlushStats,
    pub flush_cpu_seconds: f64,
    /// Flush writer CPU per memtable operation flushed (E4's "CPU per partition").
    pub flush_cpu_us_per_op: Option<f64>,
    pub flushed_mb_per_s: f64,
}

/// `server` in result.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerFacts {
    /// Why server facts are missing, when they are.
    pub not_collected: Option<String>,
    pub sources: serde_json::Value,
    /// The measured span, epoch milliseconds, and its length (`window_…` in result.json, from
    /// before "window" meant the service level's only).
    #[serde(rename = "window_from_ms")]
    pub measured_from_ms: u64,
    #[serde(rename = "window_to_ms")]
    pub measured_to_ms: u64,
    #[serde(rename = "window_s")]
    pub measured_s: f64,
    pub nodes: Vec<NodeFacts>,
    pub gc_count: usize,
    pub gc_total_ms: f64,
    pub gc_mean_ms: f64,
    pub gc_stddev_ms: f64,
    pub gc_max_ms: f64,
    pub gc_reclaimed_mb: f64,
    pub allocation_stalls: usize,
    pub allocation_stall_max_ms: f64,
    pub server_cpu_cores: f64,
    pub client_cpu_cores: f64,
    pub timeline: Vec<ServerSecond>,
    /// Nodes that exited while the run went on.
    #[serde(default)]
    pub events: Vec<NodeEvent>,
    /// GCInspector readings over JMX (`--jmx`), covering the whole run.
    pub jmx: Vec<jmx::JmxGc>,
    /// Every node's thread pools over CQL, each second of the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pools: Option<pools::PoolFacts>,
    /// Compaction over the measured window, from the seconds read over JMX.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionFacts>,
    /// What else the run's cores did over the measured window (None in results from before it
    /// was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<super::machine::MachineFacts>,
}

/// Compaction over the measured window, all nodes together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionFacts {
    /// Seconds read over JMX.
    pub seconds: usize,
    pub pending_max: f64,
    pub pending_mean: f64,
    /// What the compactions that ended in the window read, in MiB on disk (Cassandra's
    /// CompressedBytesCompacted; uncompressed BytesCompacted before 5.0), and per second.
    pub compacted_mb: f64,
    pub compacted_mb_per_s: f64,
    /// MiB compacted per MiB the memtables flushed (nodes caplab runs: their system.log says
    /// what was flushed): what compaction rewrote of what was written, a write amplification.
    /// None under 1 MiB flushed: a ratio to almost nothing (a 25 s window of the bank flushed a
    /// few KiB of system tables and read 46 "per MiB flushed") says nothing.
    pub compacted_per_flushed: Option<f64>,
    /// SSTables touched per read: the mean of the seconds that had reads.
    pub sstables_per_read: Option<f64>,
}

impl CompactionFacts {
    /// From the measured seconds that carry compaction figures; None when none does.
    pub fn of(timeline: &[ServerSecond], flushed_mb: Option<f64>) -> Option<CompactionFacts> {
        let read: Vec<&ServerSecond> = timeline
            .iter()
            .filter(|s| s.measured && s.pending_compactions.is_some())
            .collect();
        if read.is_empty() {
            return None;
        }
        let pending: Vec<f64> = read.iter().filter_map(|s| s.pending_compactions).collect();
        let compacted_mb = total(read.iter().map(|s| s.compaction_mb_per_s.unwrap_or(0.0) * s.length_s));
        let length = total(read.iter().map(|s| s.length_s)).max(1e-9);
        let per_read: Vec<f64> = read.iter().filter_map(|s| s.sstables_per_read).collect();
        Some(CompactionFacts {
            seconds: read.len(),
            pending_max: pending.iter().copied().fold(0.0, f64::max),
            pending_mean: total(pending.iter().copied()) / pending.len() as f64,
            compacted_mb,
            compacted_mb_per_s: compacted_mb / length,
            compacted_per_flushed: flushed_mb.filter(|mb| *mb >= 1.0).map(|mb| compacted_mb / mb),
            sstables_per_read: (!per_read.is_empty()).then(|| total(per_read.iter().copied()) / per_read.len() as f64),
        })
    }
}

impl ServerFacts {
    /// The flush writers' CPU per memtable operation they flushed, all nodes together (E4's
    /// "CPU per flushed partition": an insert writes one partition); None without flushes.
    pub fn flush_cpu_us_per_flushed_op(&self) -> Option<f64> {
        us_per_flushed_op(
            total(self.nodes.iter().map(|n| n.flush_cpu_seconds)),
            self.nodes.iter().map(|n| n.flushes.ops).sum(),
        )
    }

    /// A remote cluster's window from its JMX seconds (`Watch::remote`): pauses and their time
    /// are counted per second, so a single pause's length (max, deviation) is GCInspector's, in
    /// `jmx`.
    pub(super) fn sum_jmx_seconds(&mut self) {
        let measured: Vec<&ServerSecond> = self.timeline.iter().filter(|s| s.measured).collect();
        let length = total(measured.iter().map(|s| s.length_s));
        self.gc_count = measured.iter().map(|s| s.gc_pauses).sum();
        self.gc_total_ms = total(measured.iter().map(|s| s.gc_pause_ms));
        self.gc_mean_ms = if self.gc_count > 0 {
            self.gc_total_ms / self.gc_count as f64
        } else {
            0.0
        };
        self.server_cpu_cores = if length > 0.0 {
            total(measured.iter().map(|s| s.server_cpu_cores * s.length_s)) / length
        } else {
            0.0
        };
        self.sources = serde_json::json!({
            "gc": "java.lang:type=GarbageCollector CollectionCount and CollectionTime over JMX, once a second (pauses only: not ZGC's or Shenandoah's concurrent Cycles)",
            "cpu": "java.lang:type=OperatingSystem ProcessCpuTime over JMX, once a second",
            "jit_cpu": "java.lang:type=Compilation TotalCompilationTime over JMX (the compilers' elapsed time)",
            "heap": "java.lang:type=Memory HeapMemoryUsage.used over JMX",
            "compaction": "org.apache.cassandra.metrics:type=Compaction PendingTasks and CompressedBytesCompacted (the size on disk of what compactions read, counted as each ends; uncompressed BytesCompacted before 5.0), type=Table SSTablesPerReadHistogram (all tables) over JMX",
            "client_cpu": "/proc/self/stat utime+stime of caplab",
        });
    }

    /// For runs against nodes caplab does not run here.
    pub fn not_collected(why: &str) -> ServerFacts {
        ServerFacts {
            not_collected: Some(why.to_string()),
            sources: serde_json::Value::Null,
            measured_from_ms: 0,
            measured_to_ms: 0,
            measured_s: 0.0,
            nodes: Vec::new(),
            gc_count: 0,
            gc_total_ms: 0.0,
            gc_mean_ms: 0.0,
            gc_stddev_ms: 0.0,
            gc_max_ms: 0.0,
            gc_reclaimed_mb: 0.0,
            allocation_stalls: 0,
            allocation_stall_max_ms: 0.0,
            server_cpu_cores: 0.0,
            client_cpu_cores: 0.0,
            timeline: Vec::new(),
            events: Vec::new(),
            jmx: Vec::new(),
            pools: None,
            compaction: None,
            machine: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, flushed_ops: u64, flush_cpu_seconds: f64) -> NodeFacts {
        NodeFacts {
            name: name.into(),
            pid: 1,
            gc: GcStats::default(),
            cpu_seconds: 10.0,
            cpu_user_seconds: 9.0,
            cpu_system_seconds: 1.0,
            cpu_cores: 1.0,
            rss_max_mb: 100.0,
            flushes: FlushStats {
                count: usize::from(flushed_ops > 0),
                ops: flushed_ops,
                ..FlushStats::default()
            },
            flush_cpu_seconds,
            flush_cpu_us_per_op: None,
            flushed_mb_per_s: 0.0,
        }
    }

    #[test]
    fn flush_cost_is_the_writers_cpu_per_operation_they_flushed_on_every_node() {
        let mut s = ServerFacts::not_collected("test");
        s.not_collected = None;
        s.measured_s = 60.0;
        assert_eq!(s.flush_cpu_us_per_flushed_op(), None, "no nodes, no flushes");
        // A replica's flush counts its own operations: 3 s of CPU over 1.5M flushed ops is 2 µs,
        // whatever the client sent. A node that flushed nothing adds no cost and no operations.
        s.nodes = vec![
            node("node1", 1_000_000, 2.0),
            node("node2", 500_000, 1.0),
            node("node3", 0, 0.0),
        ];
        assert!((s.flush_cpu_us_per_flushed_op().unwrap() - 2.0).abs() < 1e-9);
        assert!(
            s.render().contains("2.00 µs flush CPU per flushed op"),
            "{}",
            s.render()
        );
        s.nodes = vec![node("node1", 0, 0.4)];
        assert_eq!(
            s.flush_cpu_us_per_flushed_op(),
            None,
            "CPU with no completed flush is no figure"
        );
    }

    fn second(measured: bool, pending: Option<f64>, mb_per_s: f64, per_read: Option<f64>) -> ServerSecond {
        ServerSecond {
            length_s: 1.0,
            measured,
            gc_pauses: 1,
            gc_pause_ms: 10.0,
            server_cpu_cores: 1.5,
            pending_compactions: pending,
            compaction_mb_per_s: pending.map(|_| mb_per_s),
            sstables_per_read: per_read,
            ..ServerSecond::default()
        }
    }

    #[test]
    fn a_window_s_compaction_is_its_measured_seconds_read_over_jmx() {
        let timeline = [
            // Warm-up, and a measured second before the reader's first reading: left out.
            second(false, Some(9.0), 50.0, Some(5.0)),
            second(true, None, 0.0, None),
            second(true, Some(2.0), 4.0, Some(1.0)),
            second(true, Some(4.0), 0.0, None),
            second(true, Some(0.0), 2.0, Some(2.0)),
        ];
        let c = CompactionFacts::of(&timeline, Some(3.0)).unwrap();
        assert_eq!((c.seconds, c.pending_max, c.pending_mean), (3, 4.0, 2.0));
        assert_eq!((c.compacted_mb, c.compacted_mb_per_s), (6.0, 2.0));
        assert_eq!(c.compacted_per_flushed, Some(2.0), "6 MiB compacted of 3 flushed");
        assert_eq!(c.sstables_per_read, Some(1.5), "the seconds with reads");
        for flushed in [0.0, 0.02] {
            let c = CompactionFacts::of(&timeline, Some(flushed)).unwrap();
            assert_eq!(c.compacted_per_flushed, None, "{flushed} MiB flushed");
        }
        assert_eq!(CompactionFacts::of(&timeline[..2], None), None, "nothing read");
    }

    #[test]
    fn a_remote_window_counts_its_pauses_and_cpu_from_its_seconds() {
        let mut s = ServerFacts::not_collected("test");
        s.not_collected = None;
        s.timeline = vec![
            second(false, None, 0.0, None),
            second(true, None, 0.0, None),
            second(true, None, 0.0, None),
        ];
        s.timeline[2].gc_pauses = 3;
        s.timeline[2].gc_pause_ms = 30.0;
        s.timeline[2].server_cpu_cores = 0.5;
        s.sum_jmx_seconds();
        assert_eq!(
            (s.gc_count, s.gc_total_ms, s.gc_mean_ms),
            (4, 40.0, 10.0),
            "the measured seconds only"
        );
        assert!((s.server_cpu_cores - 1.0).abs() < 1e-9, "{}", s.server_cpu_cores);
        assert!(s.sources["cpu"].as_str().unwrap().contains("JMX"));
        assert!(
            s.render()
                .contains("Max GC pause                  : per second over JMX"),
            "{}",
            s.render()
        );
    }
}
