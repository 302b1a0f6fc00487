//! What the server did, in lines for people (cassandra-stress's style), below a run's summary.

use super::{ServerFacts, pools, total};
use crate::console::group;

impl ServerFacts {
    /// Summary lines in cassandra-stress's style.
    pub fn render(&self) -> String {
        let jmx: Vec<String> = self
            .jmx
            .iter()
            .map(|j| match (&j.gc, &j.error) {
                (Some(g), _) => format!(
                    "GCInspector {:<17} : {:>12} collections, {} ms total, {} ms max, {:.3} GiB reclaimed over {:.1}s (whole run)",
                    j.endpoint,
                    g.collections,
                    g.total_ms,
                    g.max_ms,
                    g.reclaimed_bytes as f64 / (1u64 << 30) as f64,
                    g.interval_ms as f64 / 1e3
                ),
                (None, e) => format!(
                    "GCInspector {:<17} : not collected ({})",
                    j.endpoint,
                    e.as_deref().unwrap_or("no reading")
                ),
            })
            .collect();
        let pools = self.pools.as_ref().map(pools::PoolFacts::render);
        if let Some(why) = &self.not_collected {
            let mut out = format!("Server GC and CPU             : not collected ({why})");
            for line in jmx.into_iter().chain(pools) {
                out.push('\n');
                out.push_str(&line);
            }
            return out;
        }
        let per_pause = |v: f64| {
            if self.nodes.is_empty() {
                "per second over JMX".to_string()
            } else {
                format!("{v:>12.3} ms")
            }
        };
        let mut out = format!(
            "Total GC count                : {:>12}\n\
             Total GC memory               : {:>12}\n\
             Total GC time                 : {:>12}\n\
             Avg GC time                   : {:>12.3} ms\n\
             StdDev GC time                : {}\n\
             Max GC pause                  : {}\n\
             Allocation stalls             : {:>12}",
            self.gc_count,
            format!("{:.3} GiB", self.gc_reclaimed_mb / 1024.0),
            if self.gc_total_ms >= 1_000.0 {
                format!("{:.3} s", self.gc_total_ms / 1e3)
            } else {
                format!("{:.3} ms", self.gc_total_ms)
            },
            self.gc_mean_ms,
            per_pause(self.gc_stddev_ms),
            per_pause(self.gc_max_ms),
            if self.allocation_stalls > 0 {
                format!(
                    "{} (max {:.1} ms)",
                    self.allocation_stalls, self.allocation_stall_max_ms
                )
            } else {
                "0".into()
            },
        );
        out.push_str(&format!(
            "\nServer CPU                    : {:>12.2} cores\nClient CPU (caplab)           : {:>12.2} cores",
            self.server_cpu_cores, self.client_cpu_cores
        ));
        if let Some(m) = &self.machine {
            out.push('\n');
            out.push_str(&m.render());
        }
        let flushes: usize = self.nodes.iter().map(|n| n.flushes.count).sum();
        if flushes > 0 {
            let mb = total(self.nodes.iter().map(|n| n.flushes.written_mb));
            let ops: u64 = self.nodes.iter().map(|n| n.flushes.ops).sum();
            out.push_str(&format!(
                "\nMemtable flushes              : {:>12} ({} ops, {:.1} MiB written, {:.2} MiB/s, {:.2} µs flush CPU per flushed op)",
                flushes,
                group(ops as f64),
                mb,
                mb / self.measured_s.max(1e-9),
                self.flush_cpu_us_per_flushed_op().unwrap_or(0.0)
            ));
        }
        if let Some(c) = &self.compaction {
            out.push_str(&format!(
                "\nCompaction (JMX)              : {:>12} pending at most ({:.1} on average), {:.1} MiB compacted ({:.2} MiB/s{}), {}",
                format!("{:.0}", c.pending_max),
                c.pending_mean,
                c.compacted_mb,
                c.compacted_mb_per_s,
                c.compacted_per_flushed
                    .map_or(String::new(), |r| format!(", {r:.2} MiB per MiB flushed")),
                c.sstables_per_read
                    .map_or("no reads".into(), |r| format!("{r:.2} SSTables per read")),
            ));
        }
        for e in &self.events {
            out.push_str(&format!(
                "\nNode event                    : {} {} at {}",
                e.node,
                e.event,
                humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(e.at_ms))
            ));
        }
        for line in jmx.into_iter().chain(pools) {
            out.push('\n');
            out.push_str(&line);
        }
        out
    }
}
