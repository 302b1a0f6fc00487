//! What a step's server profile records (result.json `profile`): per node and event the
//! samples, the files written and the top frames, and the summary lines it prints.

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

use super::spec::ProfileEvent;
use super::stacks::FrameShare;

/// The flame graph of one slice.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SliceProfile {
    pub label: String,
    pub from_ms: u64,
    pub to_ms: u64,
    pub samples: u64,
    pub flame_graph: String,
}

/// One event's profile of one node over the measured window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventProfile {
    pub kind: ProfileEvent,
    pub interval: String,
    /// Samples in the measured window.
    pub samples: u64,
    /// Paths relative to the results directory.
    pub flame_graph: String,
    pub collapsed: String,
    pub heatmap: Option<String>,
    pub top_self: Vec<FrameShare>,
    pub top_total: Vec<FrameShare>,
    /// CPU and wall profiles of the first windows that failed the service level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<SliceProfile>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeProfile {
    pub node: String,
    pub pid: u32,
    pub events: Vec<EventProfile>,
    /// The whole recording (kept with `jfr`), relative to the results directory.
    pub jfr: Option<String>,
}

/// What was profiled in a step, and the result; in result.json as `profile`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileResult {
    /// `--server-profile` as understood, e.g. `cpu:10ms,alloc:512k`.
    pub spec: String,
    pub async_profiler: String,
    /// The CPU sampler used: `perf_events`, `ctimer` or `itimer` (none without `cpu`).
    pub cpu_sampler: Option<String>,
    /// Why the sampler is not perf events, when it is not by choice.
    pub note: Option<String>,
    /// Epoch milliseconds: the recording ran from..to; the profiles cover the window only.
    pub recording_from_ms: u64,
    pub recording_to_ms: u64,
    #[serde(rename = "window_from_ms")]
    pub measured_from_ms: u64,
    #[serde(rename = "window_to_ms")]
    pub measured_to_ms: u64,
    pub nodes: Vec<NodeProfile>,
    /// What went wrong with a node's profile (the run's results stand regardless).
    pub errors: Vec<String>,
}

/// `from to to` (epoch ms) for people, in UTC seconds.
pub fn window_text((from, to): (u64, u64)) -> String {
    let t = |ms: u64| humantime::format_rfc3339_seconds(SystemTime::UNIX_EPOCH + Duration::from_millis(ms)).to_string();
    format!("{} to {}", t(from), t(to))
}

impl ProfileResult {
    /// The profiled window for people, e.g. `2026-11-23T18:51:08Z to 2026-11-23T18:51:13Z`.
    pub fn window(&self) -> String {
        window_text((self.measured_from_ms, self.measured_to_ms))
    }

    /// The summary's lines: per node and event, samples and the top frames.
    pub fn render(&self) -> String {
        let sampler = self
            .cpu_sampler
            .as_ref()
            .map(|c| format!("; CPU sampler {c}"))
            .unwrap_or_default();
        let mut s = format!(
            "Server profile (async-profiler {}, {}{sampler}), measured window only:\n",
            self.async_profiler, self.spec
        );
        if let Some(n) = &self.note {
            s.push_str(&format!("  note: {n}\n"));
        }
        for n in &self.nodes {
            for e in &n.events {
                s.push_str(&format!(
                    "  {} {}: {} samples, flame graph {}\n",
                    n.node,
                    e.kind.name(),
                    crate::console::group(e.samples as f64),
                    e.flame_graph
                ));
                let rows = |label: &str, frames: &[FrameShare], own: bool, s: &mut String| {
                    s.push_str(&format!("    {label}\n"));
                    for f in frames.iter().take(5) {
                        let share = if own { f.self_share } else { f.total_share };
                        s.push_str(&format!("      {:>5.1}%  {}\n", 100.0 * share, short(&f.frame)));
                    }
                };
                rows("top by self time", &e.top_self, true, &mut s);
                rows("Cassandra code by total time", &e.top_total, false, &mut s);
                for sl in &e.slices {
                    s.push_str(&format!(
                        "    {}: {} samples, flame graph {}\n",
                        sl.label,
                        crate::console::group(sl.samples as f64),
                        sl.flame_graph
                    ));
                }
            }
            if let Some(j) = &n.jfr {
                s.push_str(&format!("  {} recording {j}\n", n.node));
            }
        }
        for e in &self.errors {
            s.push_str(&format!("  not profiled: {e}\n"));
        }
        s.trim_end().to_string()
    }
}

/// A frame for a terminal line: at most 110 characters, the end kept (the method).
pub fn short(frame: &str) -> String {
    let n = frame.chars().count();
    if n <= 110 {
        frame.to_string()
    } else {
        format!("…{}", frame.chars().skip(n - 109).collect::<String>())
    }
}
