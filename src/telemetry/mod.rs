//! Server-side facts for exactly the measured window: each local node's GC (from its unified
//! GC log), CPU and resident memory (from /proc), memtable flushes (from system.log) and the
//! flush writers' CPU, plus caplab's own CPU. Sampled once per interval, when the engine
//! closes one, so a latency spike in the per-second output sits beside the pause and the CPU
//! of the same second.
//!
//! GC logs, /proc and flushes are read for nodes caplab runs on this machine only. For other
//! clusters `--jmx` reads GCInspector before and after the run (`jmx`) and, once a second
//! through it, GC pauses, CPU, heap, the JIT and compactions (`jmx_watch`), which are then the
//! run's server timeline; without it the report says once that they were not collected, and
//! why. On nodes caplab runs, the same watch adds the compaction figures when the run's tables
//! compact. Every cluster's thread pools and dropped messages are read over CQL (`pools`).
//! `render` says it all in lines for people.

mod facts;
pub mod flush;
pub mod gclog;
pub mod jmx;
pub mod jmx_watch;
pub mod machine;
pub mod pools;
mod render;

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::SystemTime;

use crate::cluster::node::{Liveness, NodeState};
use crate::procfs::{self, NamedThreads, ProcSample};
use gclog::{GcStats, epoch_ms};
use jmx_watch::JmxSecond;

use facts::us_per_flushed_op;
pub use facts::{ClientSecond, CompactionFacts, NodeEvent, NodeFacts, ServerFacts, ServerSecond};

/// Sum of floats that is 0.0, not -0.0, when there are none (std's f64 sum starts at -0.0).
pub(crate) fn total(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |a, b| a + b)
}

/// Thread names (truncated to 15 characters) of Cassandra's memtable flush writers.
const FLUSH_THREADS: &[&str] = &["PerDiskMemtable", "MemtableFlushWr"];

/// Thread names of HotSpot's JIT compilers (C1, C2, and Graal's through JVMCI).
const JIT_THREADS: &[&str] = &["C1 CompilerThre", "C2 CompilerThre", "JVMCI CompilerT"];

struct NodeWatch {
    name: String,
    pid: u32,
    gc_log: PathBuf,
    system_log: PathBuf,
    gc_offset: u64,
    gc_partial: String,
    last: ProcSample,
    flush_threads: NamedThreads,
    last_flush_ticks: u64,
    jit_threads: NamedThreads,
    last_jit_ticks: u64,
    rss_max: u64,
    /// Whether its process has been seen gone.
    exited: bool,
    /// CPU ticks of the process (user, system), and of its flush writers, in measured intervals.
    measured_ticks: u64,
    measured_user_ticks: u64,
    measured_system_ticks: u64,
    measured_flush_ticks: u64,
}

/// Watches the local nodes (and this process) while a run goes on, or, for a cluster caplab
/// does not run, keeps what JMX says of it (`remote`).
pub struct Watch {
    nodes: Vec<NodeWatch>,
    remote: bool,
    events: Vec<NodeEvent>,
    client_last: ProcSample,
    tck: f64,
    timeline: Vec<ServerSecond>,
    machine: machine::MachineWatch,
}

impl Watch {
    /// Watches the running ones of `nodes`; None when there are none to watch.
    pub fn new(nodes: &[NodeState]) -> Option<Watch> {
        let watched: Vec<NodeWatch> = nodes
            .iter()
            .filter(|n| n.liveness() == Liveness::Running)
            .filter_map(|n| {
                let pid = n.pid?;
                let last = procfs::sample(pid)?;
                let mut flush_threads = NamedThreads::new(pid, FLUSH_THREADS);
                let last_flush_ticks = flush_threads.ticks();
                let mut jit_threads = NamedThreads::new(pid, JIT_THREADS);
                let last_jit_ticks = jit_threads.ticks();
                Some(NodeWatch {
                    name: n.name.clone(),
                    pid,
                    gc_offset: std::fs::metadata(&n.gc_log).map(|m| m.len()).unwrap_or(0),
                    gc_log: n.gc_log.clone(),
                    system_log: n.system_log.clone(),
                    gc_partial: String::new(),
                    last,
                    flush_threads,
                    last_flush_ticks,
                    jit_threads,
                    last_jit_ticks,
                    rss_max: last.rss_bytes,
                    exited: false,
                    measured_ticks: 0,
                    measured_user_ticks: 0,
                    measured_system_ticks: 0,
                    measured_flush_ticks: 0,
                })
            })
            .collect();
        if watched.is_empty() {
            return None;
        }
        let pids: Vec<u32> = watched.iter().map(|n| n.pid).collect();
        Some(Watch {
            machine: machine::MachineWatch::new(&pids),
            nodes: watched,
            remote: false,
            client_last: procfs::sample(std::process::id()).unwrap_or_default(),
            tck: procfs::ticks_per_second(),
            timeline: Vec::new(),
            events: Vec::new(),
        })
    }

    /// A cluster caplab does not run: its seconds are what JMX reads of it.
    pub fn remote() -> Watch {
        Watch {
            machine: machine::MachineWatch::new(&[]),
            nodes: Vec::new(),
            remote: true,
            client_last: procfs::sample(std::process::id()).unwrap_or_default(),
            tck: procfs::ticks_per_second(),
            timeline: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Samples at the end of an interval of `length_s` seconds, with what JMX read over it
    /// (`jmx`) and what the client did in it (`client`). A remote cluster's second without a
    /// JMX reading is no second of its timeline.
    pub fn tick(
        &mut self,
        now: SystemTime,
        length_s: f64,
        measured: bool,
        jmx: Option<&JmxSecond>,
        client: ClientSecond,
    ) -> Option<&ServerSecond> {
        if self.remote && jmx.is_none() {
            return None;
        }
        let secs = length_s.max(1e-3);
        let mut s = ServerSecond {
            at_ms: epoch_ms(now),
            length_s,
            measured,
            ..Default::default()
        };
        for n in &mut self.nodes {
            if !n.exited && matches!(procfs::state(n.pid), None | Some('Z' | 'X')) {
                n.exited = true;
                crate::console::say(&format!(
                    "server: {} (pid {}) has exited; see {}",
                    n.name,
                    n.pid,
                    n.system_log.display()
                ));
                self.events.push(NodeEvent {
                    node: n.name.clone(),
                    at_ms: s.at_ms,
                    event: "exited".into(),
                });
            }
            if let Some(p) = procfs::sample(n.pid) {
                let ticks = p.cpu_ticks().saturating_sub(n.last.cpu_ticks());
                s.server_cpu_cores += ticks as f64 / self.tck / secs;
                s.server_rss_mb += p.rss_bytes as f64 / 1_048_576.0;
                n.rss_max = n.rss_max.max(p.rss_bytes);
                if measured {
                    n.measured_ticks += ticks;
                    n.measured_user_ticks += p.user_ticks.saturating_sub(n.last.user_ticks);
                    n.measured_system_ticks += p.system_ticks.saturating_sub(n.last.system_ticks);
                }
                n.last = p;
            }
            let flush = n.flush_threads.ticks();
            let ticks = flush - n.last_flush_ticks;
            s.flush_cpu_cores += ticks as f64 / self.tck / secs;
            n.last_flush_ticks = flush;
            if measured {
                n.measured_flush_ticks += ticks;
            }
            let jit = n.jit_threads.ticks();
            s.jit_cpu_cores += (jit - n.last_jit_ticks) as f64 / self.tck / secs;
            n.last_jit_ticks = jit;
            let gc = n.read_new_gc();
            s.gc_pause_ms += gc.pause_total_ms;
            s.gc_pauses += gc.pause_count;
        }
        if let Some(j) = jmx {
            // Rates over what the readings cover: more than the interval when one came late.
            let span = j.length_s.max(1e-3);
            if self.remote {
                s.gc_pause_ms = j.gc_ms;
                s.gc_pauses = j.gc_pauses as usize;
                s.server_cpu_cores = j.cpu_s / span;
                s.jit_cpu_cores = j.jit_s / span;
            }
            s.heap_used_mb = Some(j.heap_used_mb);
            s.pending_compactions = j.pending_compactions;
            s.compaction_mb_per_s = j.compacted_mb.map(|mb| mb / span);
            s.sstables_per_read = j.sstables_per_read;
        }
        if let Some(c) = procfs::sample(std::process::id()) {
            s.client_cpu_cores = c.cpu_ticks().saturating_sub(self.client_last.cpu_ticks()) as f64 / self.tck / secs;
            self.client_last = c;
            let cpu_s = s.client_cpu_cores * secs;
            s.client_ops_per_cpu_s = (cpu_s > 0.0).then(|| client.sent as f64 / cpu_s);
        }
        s.client_late_ops = client.late;
        let pids: Vec<u32> = self.nodes.iter().map(|n| n.pid).collect();
        let m = self.machine.tick(secs, &pids);
        // A remote cluster's CPU is another machine's.
        let local_server = if self.remote { 0.0 } else { s.server_cpu_cores };
        s.busy_cores = Some(m.busy);
        s.steal_cores = Some(m.steal);
        s.other_cpu_cores = Some((m.busy - local_server - s.client_cpu_cores - m.helpers).max(0.0));
        self.timeline.push(s);
        self.timeline.last()
    }

    /// The report for the measured window `[from, to)`.
    pub fn report(self, from: SystemTime, to: SystemTime) -> ServerFacts {
        if self.remote && !self.timeline.iter().any(|s| s.measured) {
            return ServerFacts::not_collected(
                "no second of the measured window was read over JMX (the note above says why)",
            );
        }
        let measured_s = to.duration_since(from).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let measured: Vec<&ServerSecond> = self.timeline.iter().filter(|s| s.measured).collect();
        let (from_ms, to_ms) = (epoch_ms(from), epoch_ms(to));
        let mut nodes = Vec::new();
        for n in &self.nodes {
            let gc = gclog::read_window(&n.gc_log, from, to).unwrap_or_default();
            let flushes = std::fs::read_to_string(&n.system_log)
                .map(|t| flush::parse_window(&t, from_ms, to_ms))
                .unwrap_or_default();
            let cpu_seconds = n.measured_ticks as f64 / self.tck;
            let flush_cpu_seconds = n.measured_flush_ticks as f64 / self.tck;
            nodes.push(NodeFacts {
                name: n.name.clone(),
                pid: n.pid,
                cpu_seconds,
                cpu_user_seconds: n.measured_user_ticks as f64 / self.tck,
                cpu_system_seconds: n.measured_system_ticks as f64 / self.tck,
                cpu_cores: if measured_s > 0.0 {
                    cpu_seconds / measured_s
                } else {
                    0.0
                },
                rss_max_mb: n.rss_max as f64 / 1_048_576.0,
                flush_cpu_us_per_op: us_per_flushed_op(flush_cpu_seconds, flushes.ops),
                flushed_mb_per_s: if measured_s > 0.0 {
                    flushes.written_mb / measured_s
                } else {
                    0.0
                },
                flush_cpu_seconds,
                flushes,
                gc,
            });
        }
        let pauses: Vec<f64> = nodes.iter().flat_map(|n| n.gc.pauses.iter().map(|p| p.ms)).collect();
        let gc_count = pauses.len();
        let gc_total_ms = total(pauses.iter().copied());
        let gc_mean_ms = if gc_count > 0 {
            gc_total_ms / gc_count as f64
        } else {
            0.0
        };
        let gc_stddev_ms = if gc_count > 0 {
            (pauses.iter().map(|p| (p - gc_mean_ms).powi(2)).sum::<f64>() / gc_count as f64).sqrt()
        } else {
            0.0
        };
        let server_cpu = total(nodes.iter().map(|n| n.cpu_seconds));
        let client_cpu = total(measured.iter().map(|s| s.client_cpu_cores * s.length_s));
        let remote = self.remote;
        let (cores, shared) = self.machine.cores();
        let seconds: Vec<(f64, f64, f64, f64)> = measured
            .iter()
            .filter_map(|s| Some((s.length_s, s.busy_cores?, s.other_cpu_cores?, s.steal_cores?)))
            .collect();
        let machine = machine::MachineFacts::of(cores, shared, &seconds);
        let flushed_mb = (!remote).then(|| total(nodes.iter().map(|n| n.flushes.written_mb)));
        let compaction = CompactionFacts::of(&self.timeline, flushed_mb);
        let mut facts = ServerFacts {
            not_collected: None,
            sources: serde_json::json!({
                "gc": "each node's unified GC log (-Xlog:gc*), lines inside the measured window",
                "cpu": "/proc/<pid>/stat utime+stime of each node process, sampled at every interval",
                "rss": "/proc/<pid>/stat rss",
                "flushes": "each node's system.log: 'Writing Memtable-…' and 'Completed flushing …' by writer thread",
                "flush_cpu": "/proc/<pid>/task/*/stat of the threads named PerDiskMemtableFlushWriter/MemtableFlushWriter",
                "jit_cpu": "/proc/<pid>/task/*/stat of the JIT compiler threads (C1/C2 CompilerThread, JVMCI CompilerThread)",
                "client_cpu": "/proc/self/stat utime+stime of caplab",
                "machine": "/proc/stat of the cores caplab and the nodes may run on (/proc/<pid>/status Cpus_allowed_list): busy and steal ticks; other = busy less the nodes, caplab and the processes caplab started",
                "compaction": "over JMX once a second when the run's tables compact: org.apache.cassandra.metrics:type=Compaction PendingTasks and CompressedBytesCompacted (the size on disk of what compactions read, counted as each ends; uncompressed BytesCompacted before 5.0), type=Table SSTablesPerReadHistogram (all tables), java.lang:type=Memory heap used",
            }),
            measured_from_ms: from_ms,
            measured_to_ms: to_ms,
            measured_s,
            gc_count,
            gc_total_ms,
            gc_mean_ms,
            gc_stddev_ms,
            gc_max_ms: pauses.iter().copied().fold(0.0, f64::max),
            gc_reclaimed_mb: total(nodes.iter().map(|n| n.gc.reclaimed_mb)),
            allocation_stalls: nodes.iter().map(|n| n.gc.allocation_stalls).sum(),
            allocation_stall_max_ms: nodes.iter().map(|n| n.gc.allocation_stall_max_ms).fold(0.0, f64::max),
            server_cpu_cores: if measured_s > 0.0 { server_cpu / measured_s } else { 0.0 },
            client_cpu_cores: if measured_s > 0.0 { client_cpu / measured_s } else { 0.0 },
            nodes,
            timeline: self.timeline,
            events: self.events,
            jmx: Vec::new(),
            pools: None,
            compaction,
            machine,
        };
        if remote {
            facts.sum_jmx_seconds();
        }
        facts
    }
}

impl NodeWatch {
    /// GC lines appended since the last call.
    fn read_new_gc(&mut self) -> GcStats {
        let Ok(mut f) = std::fs::File::open(&self.gc_log) else {
            return GcStats::default();
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.gc_offset {
            // The log rotated: start over in the new file.
            self.gc_offset = 0;
            self.gc_partial.clear();
        }
        let mut text = std::mem::take(&mut self.gc_partial);
        if f.seek(SeekFrom::Start(self.gc_offset)).is_ok() {
            let mut buf = String::new();
            if f.read_to_string(&mut buf).is_ok() {
                self.gc_offset += buf.len() as u64;
                text.push_str(&buf);
            }
        }
        // Keep an unfinished last line for next time.
        if let Some(end) = text.rfind('\n') {
            self.gc_partial = text[end + 1..].to_string();
            text.truncate(end + 1);
        } else {
            self.gc_partial = text;
            return GcStats::default();
        }
        gclog::parse_window(&text, 0, u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_cluster_s_seconds_are_what_jmx_read_of_them() {
        let mut w = Watch::remote();
        let now = SystemTime::now();
        let client = ClientSecond { sent: 2000, late: 3 };
        assert!(w.tick(now, 1.0, false, None, client).is_none(), "no reading, no second");
        let j = JmxSecond {
            length_s: 2.0,
            jit_s: 0.1,
            cpu_s: 3.0,
            gc_pauses: 2.0,
            gc_ms: 25.0,
            heap_used_mb: 700.0,
            pending_compactions: Some(1.0),
            compacted_mb: Some(4.0),
            sstables_per_read: None,
        };
        let s = w.tick(now, 2.0, true, Some(&j), client).unwrap().clone();
        assert_eq!(
            (s.server_cpu_cores, s.jit_cpu_cores),
            (1.5, 0.05),
            "per second of what the readings cover"
        );
        assert_eq!((s.gc_pauses, s.gc_pause_ms), (2, 25.0));
        assert_eq!(s.client_late_ops, 3, "the client's own second");
        assert_eq!(
            (
                s.heap_used_mb,
                s.pending_compactions,
                s.compaction_mb_per_s,
                s.sstables_per_read
            ),
            (Some(700.0), Some(1.0), Some(2.0), None)
        );
        let facts = w.report(now, now + std::time::Duration::from_secs(2));
        assert_eq!((facts.gc_count, facts.timeline.len()), (2, 1), "{facts:?}");
        assert_eq!(facts.compaction.unwrap().compacted_mb, 4.0);
    }
}
