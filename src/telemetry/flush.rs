//! Memtable flushes from a node's system.log: for each flush in a window, the table, its
//! reason, the memtable's operations and serialized size (`Writing Memtable-…`), the size of
//! the sstable written and how long the flush writer took (`Completed flushing …`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flush {
    pub table: String,
    /// Epoch milliseconds when the writer finished.
    pub at_ms: u64,
    pub ops: u64,
    pub serialized_mb: f64,
    pub written_mb: f64,
    pub ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlushStats {
    pub flushes: Vec<Flush>,
    pub count: usize,
    pub ops: u64,
    pub serialized_mb: f64,
    pub written_mb: f64,
    pub writer_ms: f64,
}

/// `2026-11-22 18:31:47,490` (the node's local time; caplab's nodes log in UTC) as epoch ms.
fn log_ms(line: &str) -> Option<u64> {
    // "INFO  [Thread] 2026-11-22 18:31:47,490 File.java:1 - message"
    let after = line.split_once("] ")?.1;
    let stamp = after.get(..23)?;
    let iso = format!("{}T{}.{}+0000", &stamp[..10], &stamp[11..19], &stamp[20..23]);
    super::gclog::wall_ms(&iso)
}

fn thread(line: &str) -> Option<&str> {
    let start = line.find('[')? + 1;
    let end = start + line[start..].find(']')?;
    Some(&line[start..end])
}

/// `53.669MiB`, `512.000KiB`, `0B` in MiB.
fn size_mb(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (n, unit) = s.split_at(split);
    let v: f64 = n.parse().ok()?;
    Some(match unit {
        "B" => v / 1_048_576.0,
        "KiB" => v / 1024.0,
        "MiB" => v,
        "GiB" => v * 1024.0,
        _ => return None,
    })
}

/// The flushes that completed in `[from_ms, to_ms)`.
pub fn parse_window(text: &str, from_ms: u64, to_ms: u64) -> FlushStats {
    // Per writer thread: the memtable being written, and when.
    let mut writing: Vec<(String, String, u64, u64, f64)> = Vec::new();
    let mut s = FlushStats::default();
    for line in text.lines() {
        if let Some(i) = line.find("Writing Memtable-") {
            let rest = &line[i + "Writing Memtable-".len()..];
            let (Some(at), Some(th)) = (log_ms(line), thread(line)) else {
                continue;
            };
            let table = rest.split('@').next().unwrap_or_default().to_string();
            let inner = rest.split_once('(').map(|x| x.1).unwrap_or_default();
            let mut parts = inner.split(", ");
            let serialized = parts
                .next()
                .and_then(|p| size_mb(p.trim_end_matches(" serialized bytes")))
                .unwrap_or(0.0);
            let ops = parts
                .next()
                .and_then(|p| p.trim_end_matches(" ops").parse().ok())
                .unwrap_or(0);
            writing.retain(|w| w.0 != th);
            writing.push((th.to_string(), table, at, ops, serialized));
        } else if let Some(i) = line.find("Completed flushing ") {
            let (Some(at), Some(th)) = (log_ms(line), thread(line)) else {
                continue;
            };
            let Some(pos) = writing.iter().position(|w| w.0 == th) else {
                continue;
            };
            let (_, table, began, ops, serialized) = writing.remove(pos);
            if at < from_ms || at >= to_ms {
                continue;
            }
            let rest = &line[i..];
            let written = rest
                .split_once(" (")
                .and_then(|(_, r)| r.split_once(')'))
                .and_then(|(size, _)| size_mb(size))
                .unwrap_or(0.0);
            s.flushes.push(Flush {
                table,
                at_ms: at,
                ops,
                serialized_mb: serialized,
                written_mb: written,
                ms: at.saturating_sub(began) as f64,
            });
        }
    }
    s.count = s.flushes.len();
    s.ops = s.flushes.iter().map(|f| f.ops).sum();
    s.serialized_mb = super::total(s.flushes.iter().map(|f| f.serialized_mb));
    s.written_mb = super::total(s.flushes.iter().map(|f| f.written_mb));
    s.writer_ms = super::total(s.flushes.iter().map(|f| f.ms));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_is_paired_by_its_writer_thread() {
        let log = "\
INFO  [StorageServiceShutdownHook] 2026-11-22 18:31:47,448 ColumnFamilyStore.java:1055 - Enqueuing flush of caplab.e1_insert, Reason: DRAIN, Usage: 329.021MiB (32%) on-heap, 0B (0%) off-heap
INFO  [PerDiskMemtableFlushWriter_0:4] 2026-11-22 18:31:47,490 Flushing.java:153 - Writing Memtable-e1_insert@42379006(53.669MiB serialized bytes, 1878309 ops, 329.021MiB (32%) on-heap, 0B (0%) off-heap), flushed range = [min(-9223372036854775808), max(9223372036854775807))
INFO  [PerDiskMemtableFlushWriter_0:5] 2026-11-22 18:31:47,500 Flushing.java:153 - Writing Memtable-peers@1(512.000KiB serialized bytes, 10 ops, 1MiB (0%) on-heap, 0B (0%) off-heap), flushed range = [min(-9223372036854775808), max(9223372036854775807))
INFO  [PerDiskMemtableFlushWriter_0:4] 2026-11-22 18:31:48,154 Flushing.java:179 - Completed flushing /d/caplab/e1_insert-fff/nb-1-big-Data.db (26.038MiB) for commitlog position CommitLogPosition(segmentId=1, position=2)
INFO  [PerDiskMemtableFlushWriter_0:5] 2026-11-22 18:31:49,000 Flushing.java:179 - Completed flushing /d/system/peers-1/nb-1-big-Data.db (0.100MiB) for commitlog position CommitLogPosition(segmentId=1, position=2)
";
        let s = parse_window(log, 0, u64::MAX);
        assert_eq!(s.count, 2);
        let f = &s.flushes[0];
        assert_eq!(
            (f.table.as_str(), f.ops, f.serialized_mb, f.written_mb, f.ms),
            ("e1_insert", 1_878_309, 53.669, 26.038, 664.0)
        );
        assert_eq!(s.flushes[1].serialized_mb, 0.5);
        // Only flushes that completed inside the window.
        let until = log_ms("INFO  [x] 2026-11-22 18:31:48,500 y").unwrap();
        assert_eq!(parse_window(log, 0, until).count, 1);
    }
}
