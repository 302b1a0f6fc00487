//! What a step's result says to people: the end-of-step text (summary, steadiness, merged
//! loaders, faults, server, profile, service level, validation, files not written), the one-line
//! description of the load, and why a step ended early or has no server facts.

use std::path::Path;

use super::result::{MergeRecord, RunResult, WarmupRecord};
use crate::console::group;
use crate::engine::{EndReason, EngineConfig, Warmup};

impl RunResult {
    /// The end-of-step text: the summary, the server's lines, the service level's verdict,
    /// and the files that could not be written.
    pub fn render(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.summary {
            let mut text = s.render();
            if self.retries > 0 {
                text.push_str(&format!(
                    "Retries (--retries)           : {:>12}\n",
                    crate::console::group(self.retries as f64)
                ));
            }
            parts.push(text);
        }
        if !self.shape_parts.is_empty() {
            let mut text = super::phases::render(&self.shape_parts);
            if let Some(k) = &self.knee {
                text.push_str(&k.render());
            }
            parts.push(text);
        }
        let steadiness: Vec<String> = [
            self.warmup.as_ref().map(WarmupRecord::render),
            self.steady_state.as_ref().map(|s| s.render()),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !steadiness.is_empty() {
            parts.push(steadiness.join("\n"));
        }
        if let Some(m) = &self.merged {
            parts.push(render_merge(m));
        }
        if !self.faults.is_empty() {
            let mut text: Vec<String> = self.faults.iter().map(crate::faults::FaultRecord::render).collect();
            if let Some(a) = self.availability {
                text.push(format!("Availability (measured window)  : {:.3} %", a * 100.0));
            }
            let env = &self.environment;
            let nodes: Vec<(String, String)> = env
                .local_nodes
                .iter()
                .map(|n| (n.name.clone(), n.spec.version.clone()))
                .collect();
            let start = env.cassandra_release_version.as_deref();
            text.extend(crate::faults::mixed_versions(&self.faults, start, &nodes));
            parts.push(text.join("\n"));
        }
        if let Some(s) = &self.server {
            parts.push(s.render());
        }
        if let Some(s) = &self.slow {
            parts.push(s.render());
        }
        if let Some(c) = &self.client {
            parts.push(c.render());
        }
        if let Some(t) = &self.traces {
            parts.push(t.render());
        }
        if let Some(p) = &self.server_profile {
            parts.push(p.render());
        }
        if let Some(v) = &self.sla {
            parts.push(v.render());
        }
        if let Some(v) = &self.validation {
            parts.push(format!("Validation (read back)        : {}", v.line()));
        }
        if let Some(b) = &self.bank {
            parts.push(format!("Bank invariant                : {}", b.line()));
            for x in b.audit_examples.iter().chain(&b.examples).take(5) {
                parts.push(format!(
                    "  branch {} held {} ({})",
                    x.branch,
                    group(x.total as f64),
                    if x.at_s > 0.0 {
                        format!("an audit at {:.1} s", x.at_s)
                    } else {
                        "after the run".into()
                    }
                ));
            }
        }
        for r in &self.recall {
            parts.push(format!("Recall (ANN sample)           : {}", r.line()));
        }
        for f in &self.incomplete {
            parts.push(format!("INCOMPLETE: {}: {}", f.file, f.reason));
        }
        parts.join("\n")
    }
}

/// A merged result's loaders, and the seconds not all of them reported.
fn render_merge(m: &MergeRecord) -> String {
    let mut text = format!("Loaders merged                : {}\n", m.loaders.len());
    for l in &m.loaders {
        text.push_str(&format!(
            "  {:<6} {:<12} {:>10} ops  {:>4} s reported ({:.0}–{:.0} s)  {}  {}\n",
            l.slice,
            l.status.name(),
            group(l.ops as f64),
            l.intervals,
            l.from_s,
            l.to_s,
            l.host,
            l.dir
        ));
    }
    for p in &m.partial {
        text.push_str(&format!(
            "PARTIAL {:.0}–{:.0} s: not reported by loader {} (their operations are missing from those seconds)\n",
            p.from_s,
            p.to_s,
            p.missing.join(", ")
        ));
    }
    text.trim_end().to_string()
}

/// The load a step puts on, in words: `at 5,000 op/s for 60s after 15s warm-up, 256 in flight`.
/// `Running insert as loader 1/3 against … at 3,000 op/s …; results in DIR`.
pub fn running(name: &str, loader: &crate::engine::LoaderSlice, site: &str, c: &EngineConfig, out: &Path) -> String {
    let as_loader = if loader.is_whole() {
        String::new()
    } else {
        format!(" as loader {loader}")
    };
    format!(
        "Running {name}{as_loader} against {site} {}; results in {}",
        describe_load(c),
        out.display()
    )
}

pub fn describe_load(c: &EngineConfig) -> String {
    let rate = if let Some(shape) = &c.shape {
        format!("along {} (mean {} op/s)", shape.text, group(c.rate))
    } else if c.rate > 0.0 {
        format!("at {} op/s", group(c.rate))
    } else {
        "flat out".into()
    };
    let length = match (c.duration, c.ops) {
        (Some(d), _) => format!("for {}", humantime::format_duration(d)),
        (None, Some(n)) => format!("for {} ops", group(n as f64)),
        _ => String::new(),
    };
    let warm = match c.warmup {
        Warmup::None => String::new(),
        Warmup::Time(d) => format!(" after {} warm-up", humantime::format_duration(d)),
        Warmup::Ops(n) => format!(" after {} warm-up ops", group(n as f64)),
        Warmup::Auto { max } => format!(
            " after a warm-up that ends when it settles (at most {})",
            humantime::format_duration(max)
        ),
    };
    format!("{rate} {length}{warm}, {} in flight", c.concurrency)
}

/// Why a step ended early, for people (None when it completed or was interrupted).
pub fn end_reason(reason: &EndReason, ecfg: &EngineConfig, out: &Path) -> Option<String> {
    match reason {
        EndReason::Completed | EndReason::Interrupted => None,
        EndReason::ClusterLost { last_errors } => Some(format!(
            "the cluster stopped answering: no operation succeeded for {}s (last second: {last_errors}); \
             the run was stopped and everything measured until then is in {}",
            ecfg.give_up_after.as_secs(),
            out.display()
        )),
        EndReason::OutputFailed(e) => Some(format!("results could not be written: {e}")),
    }
}

/// Why the server's figures were not read from the target's nodes.
pub fn not_local(no_jmx: bool) -> &'static str {
    if no_jmx {
        "no node caplab runs on this machine is watched (a remote cluster, or --server-facts cql/none): \
         server GC and CPU are read from local nodes' GC logs and /proc; give --jmx HOST:PORT to read GC from \
         Cassandra over JMX"
    } else {
        "no node caplab runs on this machine is watched (a remote cluster, or --server-facts cql/none): CPU, \
         RSS and the GC log are read for local nodes only; GC over JMX is below"
    }
}
