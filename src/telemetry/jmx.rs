//! GC figures from Cassandra's GCInspector over JMX (`nodetool gcstats`), for clusters whose
//! GC logs caplab cannot read. GCInspector reports since its previous reading: caplab reads
//! once before the run (to start the interval) and once after it, so the figures cover the
//! whole run, warm-up included, as the reported interval says.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::cluster::nodetool::{self, JmxTarget};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GcInspector {
    pub interval_ms: u64,
    pub max_ms: u64,
    pub total_ms: u64,
    pub stdev_ms: u64,
    /// Labelled "GC Reclaimed (MB)" by nodetool, but counted in bytes.
    pub reclaimed_bytes: u64,
    pub collections: u64,
    pub direct_memory_bytes: i64,
}

/// One endpoint's reading, or why there is none.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JmxGc {
    pub endpoint: String,
    pub gc: Option<GcInspector>,
    pub error: Option<String>,
}

/// The numbers row of `nodetool gcstats`.
pub fn parse_gcstats(text: &str) -> Option<GcInspector> {
    let row = text.lines().skip_while(|l| !l.contains("Interval (ms)")).nth(1)?;
    // An interval without collections has a NaN deviation.
    let n: Vec<f64> = row.split_whitespace().map(|v| v.parse().ok()).collect::<Option<_>>()?;
    let [interval, max, total, stdev, reclaimed, collections, direct] = n[..] else {
        return None;
    };
    let u = |v: f64| if v.is_finite() && v > 0.0 { v as u64 } else { 0 };
    Some(GcInspector {
        interval_ms: u(interval),
        max_ms: u(max),
        total_ms: u(total),
        stdev_ms: u(stdev),
        reclaimed_bytes: u(reclaimed),
        collections: u(collections),
        direct_memory_bytes: direct as i64,
    })
}

/// Reads GCInspector on each endpoint (which also starts its next interval).
pub fn read(targets: &[JmxTarget]) -> Vec<JmxGc> {
    targets
        .iter()
        .map(|t| {
            let endpoint = format!("{}:{}", t.host, t.port);
            match gcstats(t) {
                Ok(gc) => JmxGc {
                    endpoint,
                    gc: Some(gc),
                    error: None,
                },
                Err(e) => JmxGc {
                    endpoint,
                    gc: None,
                    error: Some(format!("{e:#}")),
                },
            }
        })
        .collect()
}

fn gcstats(t: &JmxTarget) -> Result<GcInspector> {
    let text = nodetool::run_on(t, &["gcstats"], Duration::from_secs(30))?;
    match parse_gcstats(&text) {
        Some(g) => Ok(g),
        None => bail!("nodetool gcstats printed no figures"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcstats_output_parses() {
        let out = "18:45:02.672 [main] DEBUG io.netty -- noise\n       Interval (ms) Max GC Elapsed (ms)Total GC Elapsed (ms)Stdev GC Elapsed (ms)   GC Reclaimed (MB)         Collections      Direct Memory Bytes\n              121014                  95                2249                  20         11861336896                  43                 63951421\n";
        let g = parse_gcstats(out).unwrap();
        assert_eq!(
            (g.interval_ms, g.max_ms, g.total_ms, g.collections),
            (121_014, 95, 2249, 43)
        );
        assert_eq!(g.reclaimed_bytes, 11_861_336_896);
        assert_eq!(parse_gcstats("nodetool: Failed to connect"), None);
        let idle = "Interval (ms) Max GC Elapsed (ms)Total GC Elapsed (ms)Stdev GC Elapsed (ms)   GC Reclaimed (MB)         Collections      Direct Memory Bytes\n  2231  0  0  NaN  0  0  63980455\n";
        assert_eq!(parse_gcstats(idle).unwrap().stdev_ms, 0);
    }
}
