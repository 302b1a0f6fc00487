//! The JVM's unified GC log (`-Xlog:gc*:file=…:time,uptime,level,tags`), read for a window
//! of wall-clock time: pauses (G1, Parallel, ZGC with and without generations, Shenandoah),
//! concurrent cycles, allocation stalls, heap before and after collections.
//!
//! What counts as what:
//! - a pause is a `gc` line whose message names a `Pause …` and ends with its duration (G1 and
//!   Parallel `Pause Young/Full/Remark/Cleanup`, ZGC `Pause Mark Start/Mark End/Relocate Start`
//!   with or without a `Y:`/`y:`/`O:` generation, Shenandoah `Pause Init Mark/Final Mark/Init
//!   Update Refs/Final Update Refs/Degenerated GC/Full`); `gc,start` lines carry no duration and
//!   are not counted twice;
//! - a concurrent cycle is a GC id with concurrent work: G1's `Concurrent Mark/Undo Cycle`, a
//!   ZGC collection, a Shenandoah cycle;
//! - an allocation stall is ZGC's `Allocation Stall (thread) N ms` (or `Relocation Stall`),
//!   or Shenandoah's `Cancelling GC: Allocation Failure` (the cycle degenerates into a pause);
//! - heap before → after comes from each collection's summary (`A->B(C)` or `A(x%)->B(y%)`);
//! - a safepoint other than a collection's is a `safepoint` line (`-Xlog:safepoint`) whose VM
//!   operation names no collection (`Cleanup`, `ICBufferFull`, `HandshakeFallback`,
//!   `Deoptimize`, a thread dump…): every application thread stopped for its `Total`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One pause, for the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    /// Milliseconds since the Unix epoch, when the pause ended (the line's time).
    pub at_ms: u64,
    pub ms: f64,
    pub kind: String,
}

/// What the log says happened in a window.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GcStats {
    pub collector: Option<String>,
    pub pauses: Vec<Pause>,
    pub pause_count: usize,
    pub pause_total_ms: f64,
    pub pause_mean_ms: f64,
    pub pause_stddev_ms: f64,
    pub pause_max_ms: f64,
    pub concurrent_cycles: usize,
    pub allocation_stalls: usize,
    pub allocation_stall_total_ms: f64,
    pub allocation_stall_max_ms: f64,
    pub collections_with_heap: usize,
    pub heap_before_mean_mb: f64,
    pub heap_after_mean_mb: f64,
    pub heap_before_max_mb: f64,
    pub reclaimed_mb: f64,
    /// Safepoints other than collections': how many, their total and longest stop, and those
    /// of `SAFEPOINT_KEPT_MS` or more, for the timeline.
    #[serde(default)]
    pub safepoint_count: usize,
    #[serde(default)]
    pub safepoint_total_ms: f64,
    #[serde(default)]
    pub safepoint_max_ms: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub safepoints: Vec<Safepoint>,
}

/// Safepoints shorter than this are counted, not listed.
pub const SAFEPOINT_KEPT_MS: f64 = 1.0;

/// One safepoint other than a collection's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Safepoint {
    /// Milliseconds since the Unix epoch, when it ended (the line's time).
    pub at_ms: u64,
    pub ms: f64,
    /// The VM operation (`ICBufferFull`, `Deoptimize`…).
    pub operation: String,
}

/// `Safepoint "ICBufferFull", Time since last: …, Total: 153527 ns`: the operation and its
/// total stop in ms, unless the operation is a collection's (its pause is counted as one).
fn safepoint(msg: &str) -> Option<(&str, f64)> {
    let rest = msg.strip_prefix("Safepoint \"")?;
    let (operation, rest) = rest.split_once('"')?;
    let collection = operation.contains("Collect")
        || operation.contains("GC")
        || ["G1", "Z", "Shenandoah"].iter().any(|p| operation.starts_with(p));
    if collection {
        return None;
    }
    let total = rest.rsplit_once("Total: ")?.1.strip_suffix(" ns")?;
    Some((operation, total.trim().parse::<f64>().ok()? / 1e6))
}

/// A parsed log line's parts.
struct Line<'a> {
    at_ms: u64,
    tags: &'a str,
    msg: &'a str,
}

fn parse_line(line: &str) -> Option<Line<'_>> {
    // [time][uptime][level][tags] message
    let mut rest = line;
    let mut fields = Vec::with_capacity(4);
    while let Some(r) = rest.strip_prefix('[') {
        let end = r.find(']')?;
        fields.push(&r[..end]);
        rest = &r[end + 1..];
        if fields.len() == 4 {
            break;
        }
    }
    let at_ms = fields.iter().find_map(|f| wall_ms(f))?;
    let tags = fields.last()?.trim();
    Some(Line {
        at_ms,
        tags,
        msg: rest.trim(),
    })
}

/// `2026-11-22T18:25:03.293+0000` as milliseconds since the epoch.
pub(crate) fn wall_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 28 || b[4] != b'-' || b[10] != b'T' || b[19] != b'.' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, se, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    let sign = if b[23] == b'-' { -1 } else { 1 };
    let (oh, om) = (n(24..26)?, n(26..28)?);
    // Days from 1970-01-01 to y-mo-d (proleptic Gregorian).
    let (y2, m2) = if mo <= 2 { (y - 1, mo + 9) } else { (y, mo - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - sign * (oh * 3600 + om * 60);
    u64::try_from(secs * 1000 + ms).ok()
}

/// A trailing duration: `12.583ms` or `0.024s`.
fn trailing_ms(msg: &str) -> Option<f64> {
    let last = msg.rsplit(' ').next()?;
    if let Some(v) = last.strip_suffix("ms") {
        return v.parse().ok();
    }
    last.strip_suffix('s')?.parse::<f64>().ok().map(|s| s * 1e3)
}

/// The `GC(n)` id and the text after it.
fn gc_id(msg: &str) -> Option<(u64, &str)> {
    let r = msg.strip_prefix("GC(")?;
    let end = r.find(')')?;
    Some((r[..end].parse().ok()?, r[end + 1..].trim_start()))
}

/// `6M->3M(64M)` or `8M(12%)->8M(12%)`: heap before and after, in MiB.
fn heap_change(msg: &str) -> Option<(f64, f64)> {
    let word = msg.split(' ').find(|w| w.contains("->"))?;
    let (a, b) = word.split_once("->")?;
    Some((mib(a)?, mib(b)?))
}

fn mib(s: &str) -> Option<f64> {
    let s = s.split('(').next()?;
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit() && c != '.')?);
    let v: f64 = num.parse().ok()?;
    Some(match unit.chars().next()? {
        'B' => v / (1024.0 * 1024.0),
        'K' => v / 1024.0,
        'M' => v,
        'G' => v * 1024.0,
        _ => return None,
    })
}

/// Reads the window `[from, to)` of a GC log (and its rotated predecessors, `gc.log.0` …).
pub fn read_window(path: &Path, from: SystemTime, to: SystemTime) -> std::io::Result<GcStats> {
    let mut text = String::new();
    // Rotated files (-Xlog filecount) hold older lines: read them oldest first.
    let mut rotated: Vec<_> = (0..10)
        .map(|i| path.with_extension(format!("log.{i}")))
        .filter(|p| p.exists())
        .collect();
    rotated.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    for p in rotated {
        text.push_str(&std::fs::read_to_string(p)?);
    }
    text.push_str(&std::fs::read_to_string(path)?);
    Ok(parse_window(&text, epoch_ms(from), epoch_ms(to)))
}

pub fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis() as u64
}

/// Everything the log says between `from_ms` and `to_ms` (epoch milliseconds).
pub fn parse_window(text: &str, from_ms: u64, to_ms: u64) -> GcStats {
    let mut s = GcStats::default();
    let mut cycles = BTreeSet::new();
    let (mut before_sum, mut after_sum) = (0.0, 0.0);
    for raw in text.lines() {
        let Some(line) = parse_line(raw) else { continue };
        let tags: Vec<&str> = line.tags.split(',').map(str::trim).collect();
        if tags == ["safepoint"]
            && (from_ms..to_ms).contains(&line.at_ms)
            && let Some((operation, ms)) = safepoint(line.msg)
        {
            s.safepoint_count += 1;
            s.safepoint_total_ms += ms;
            s.safepoint_max_ms = s.safepoint_max_ms.max(ms);
            if ms >= SAFEPOINT_KEPT_MS {
                s.safepoints.push(Safepoint {
                    at_ms: line.at_ms,
                    ms,
                    operation: operation.to_string(),
                });
            }
        }
        if tags.first() != Some(&"gc") || tags.contains(&"safepoint") {
            continue;
        }
        if let Some(name) = line.msg.strip_prefix("Using ") {
            s.collector = Some(name.trim().to_string());
        }
        if line.at_ms < from_ms || line.at_ms >= to_ms {
            continue;
        }
        let is_start = tags.contains(&"start");
        // Allocation stalls (ZGC): no GC id.
        if line.msg.starts_with("Allocation Stall (") || line.msg.starts_with("Relocation Stall (") {
            if let Some(ms) = trailing_ms(line.msg) {
                s.allocation_stalls += 1;
                s.allocation_stall_total_ms += ms;
                s.allocation_stall_max_ms = s.allocation_stall_max_ms.max(ms);
            }
            continue;
        }
        if line.msg.starts_with("Cancelling GC: Allocation Failure") {
            s.allocation_stalls += 1;
            continue;
        }
        let Some((id, what)) = gc_id(line.msg) else { continue };
        // Generational ZGC names the generation: Y (young, in a major collection), y (young,
        // in a minor one), O (old).
        let what = ["Y: ", "y: ", "O: "]
            .iter()
            .find_map(|g| what.strip_prefix(g))
            .unwrap_or(what);
        if what.starts_with("Cancelling GC: Allocation Failure") {
            s.allocation_stalls += 1;
            continue;
        }
        if is_start {
            continue;
        }
        if what.starts_with("Pause ") {
            if let Some(ms) = trailing_ms(what) {
                // The words before the heap change and the duration.
                let kind = what
                    .split(' ')
                    .take_while(|w| !w.contains("->") && trailing_ms(w).is_none())
                    .collect::<Vec<_>>()
                    .join(" ");
                s.pauses.push(Pause {
                    at_ms: line.at_ms,
                    ms,
                    kind,
                });
            }
        } else if what.starts_with("Concurrent ")
            || what.starts_with("Garbage Collection (")
            || what.starts_with("Major Collection (")
            || what.starts_with("Minor Collection (")
        {
            cycles.insert(id);
        }
        // A collection's heap summary: G1/Parallel pauses, ZGC collections, Shenandoah
        // cleanups and full/degenerated pauses.
        if tags == ["gc"]
            && let Some((before, after)) = heap_change(what)
        {
            s.collections_with_heap += 1;
            before_sum += before;
            after_sum += after;
            s.heap_before_max_mb = s.heap_before_max_mb.max(before);
            s.reclaimed_mb += (before - after).max(0.0);
        }
    }
    let n = s.pauses.len();
    s.pause_count = n;
    s.pause_total_ms = super::total(s.pauses.iter().map(|p| p.ms));
    s.pause_max_ms = s.pauses.iter().map(|p| p.ms).fold(0.0, f64::max);
    if n > 0 {
        s.pause_mean_ms = s.pause_total_ms / n as f64;
        let var = s.pauses.iter().map(|p| (p.ms - s.pause_mean_ms).powi(2)).sum::<f64>() / n as f64;
        s.pause_stddev_ms = var.sqrt();
    }
    s.concurrent_cycles = cycles.len();
    if s.collections_with_heap > 0 {
        s.heap_before_mean_mb = before_sum / s.collections_with_heap as f64;
        s.heap_after_mean_mb = after_sum / s.collections_with_heap as f64;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_units_parse() {
        let l = parse_line("[2026-11-22T18:25:03.293+0000][27.725s][info][gc          ] GC(16) Pause Young (Normal) (G1 Evacuation Pause) 788M->376M(4096M) 60.950ms").unwrap();
        assert_eq!(l.at_ms, 1_795_371_903_293);
        assert_eq!(l.tags, "gc");
        assert_eq!(trailing_ms(l.msg), Some(60.95));
        assert_eq!(heap_change(l.msg), Some((788.0, 376.0)));
        assert_eq!(wall_ms("1970-01-01T01:00:00.000+0100"), Some(0));
        assert_eq!(
            trailing_ms("GC(0) Major Collection (Warmup) 8M(12%)->8M(12%) 0.024s"),
            Some(24.0)
        );
        assert_eq!(
            heap_change("GC(3) Garbage Collection (Warmup) 102M(10%)->48M(5%)"),
            Some((102.0, 48.0))
        );
        assert_eq!(mib("2G"), Some(2048.0));
        assert_eq!(mib("512K"), Some(0.5));
    }

    #[test]
    fn the_window_bounds_what_is_counted() {
        let log = "\
[2026-11-22T18:25:00.000+0000][1.0s][info][gc] Using G1
[2026-11-22T18:25:01.000+0000][2.0s][info][gc,start    ] GC(1) Pause Young (Normal) (G1 Evacuation Pause)
[2026-11-22T18:25:01.010+0000][2.0s][info][gc          ] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 100M->40M(256M) 10.000ms
[2026-11-22T18:25:02.000+0000][3.0s][info][gc          ] GC(2) Pause Young (Normal) (G1 Evacuation Pause) 120M->60M(256M) 30.000ms
[2026-11-22T18:25:02.500+0000][3.5s][info][safepoint   ] Safepoint \"G1CollectForAllocation\", Time since last: 1 ns, Reaching safepoint: 1 ns, Cleanup: 1 ns, At safepoint: 30000000 ns, Total: 30000000 ns
[2026-11-22T18:25:03.000+0000][4.0s][info][gc          ] GC(3) Concurrent Mark Cycle
[2026-11-22T18:25:03.100+0000][4.1s][info][gc          ] GC(3) Pause Remark 80M->80M(256M) 2.000ms
[2026-11-22T18:25:03.200+0000][4.2s][info][gc          ] GC(3) Concurrent Mark Cycle 200.000ms
[2026-11-22T18:25:09.000+0000][10.0s][info][gc          ] GC(4) Pause Young (Normal) (G1 Evacuation Pause) 100M->40M(256M) 99.000ms
";
        let from = wall_ms("2026-11-22T18:25:01.500+0000").unwrap();
        let to = wall_ms("2026-11-22T18:25:05.000+0000").unwrap();
        let s = parse_window(log, from, to);
        assert_eq!(
            s.collector.as_deref(),
            Some("G1"),
            "the collector is named even before the window"
        );
        assert_eq!(s.pause_count, 2, "{:?}", s.pauses);
        assert_eq!((s.pause_total_ms, s.pause_max_ms, s.pause_mean_ms), (32.0, 30.0, 16.0));
        assert_eq!(s.pause_stddev_ms, 14.0);
        assert_eq!(s.pauses[0].kind, "Pause Young (Normal) (G1 Evacuation Pause)");
        assert_eq!(s.pauses[1].kind, "Pause Remark");
        assert_eq!(s.concurrent_cycles, 1);
        assert_eq!(s.collections_with_heap, 2);
        assert_eq!((s.reclaimed_mb, s.heap_before_max_mb), (60.0, 120.0));
    }

    /// JDK 17's safepoint lines: collections' are not counted again, other operations are, and
    /// those of 1 ms or more are listed with when they ended.
    #[test]
    fn safepoints_other_than_collections_are_stops_of_their_own() {
        let log = "\
[2026-12-05T08:52:37.315+0000][188.536s][info][safepoint   ] Safepoint \"Cleanup\", Time since last: 1000182105 ns, Reaching safepoint: 18037 ns, Cleanup: 17395 ns, At safepoint: 4928 ns, Total: 40360 ns
[2026-12-05T08:52:37.853+0000][189.073s][info][safepoint   ] Safepoint \"ICBufferFull\", Time since last: 537031065 ns, Reaching safepoint: 10605 ns, Cleanup: 139227 ns, At safepoint: 3695 ns, Total: 2153527 ns
[2026-12-05T08:52:38.494+0000][190.585s][info][safepoint   ] Safepoint \"G1CollectForAllocation\", Time since last: 840501681 ns, Reaching safepoint: 8933 ns, Cleanup: 108521 ns, At safepoint: 51252054 ns, Total: 51369508 ns
[2026-12-05T08:52:38.600+0000][190.7s][info][safepoint   ] Safepoint \"CollectForMetadataAllocation\", Time since last: 1 ns, Reaching safepoint: 1 ns, Cleanup: 1 ns, At safepoint: 9000000 ns, Total: 9000000 ns
[2026-12-05T08:52:39.000+0000][191.0s][info][safepoint   ] Safepoint \"Deoptimize\", Time since last: 1 ns, Reaching safepoint: 1 ns, Cleanup: 1 ns, At safepoint: 9000000 ns, Total: 9000000 ns
";
        let from = wall_ms("2026-12-05T08:52:37.000+0000").unwrap();
        let to = wall_ms("2026-12-05T08:52:38.999+0000").unwrap();
        let s = parse_window(log, from, to);
        assert_eq!(s.pause_count, 0);
        assert_eq!(s.safepoint_count, 2);
        assert!(
            (s.safepoint_total_ms - 2.193887).abs() < 1e-9,
            "{}",
            s.safepoint_total_ms
        );
        assert_eq!(
            s.safepoints,
            vec![Safepoint {
                at_ms: wall_ms("2026-12-05T08:52:37.853+0000").unwrap(),
                ms: 2.153527,
                operation: "ICBufferFull".into()
            }]
        );
    }
}
