//! What `--server-profile` asks for: `cpu`, `wall`, `alloc`, `lock` (each with an optional
//! interval after a colon, e.g. `cpu:1ms`, `alloc:256k`), `itimer`/`ctimer` to force a CPU
//! sampler, and `jfr` to keep the recording; comma-separated, several at once.

use serde::{Deserialize, Serialize};

/// One kind of sample async-profiler takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileEvent {
    Cpu,
    Wall,
    Alloc,
    Lock,
}

impl ProfileEvent {
    pub fn name(self) -> &'static str {
        match self {
            ProfileEvent::Cpu => "cpu",
            ProfileEvent::Wall => "wall",
            ProfileEvent::Alloc => "alloc",
            ProfileEvent::Lock => "lock",
        }
    }

    /// What one sample stands for, for people.
    pub fn unit(self) -> &'static str {
        match self {
            ProfileEvent::Cpu => "CPU samples",
            ProfileEvent::Wall => "wall-clock samples (all threads, running or not)",
            ProfileEvent::Alloc => "allocation samples",
            ProfileEvent::Lock => "lock contention samples",
        }
    }

    fn default_interval(self) -> &'static str {
        match self {
            ProfileEvent::Cpu => "10ms",
            ProfileEvent::Wall => "50ms",
            ProfileEvent::Alloc => "512k",
            ProfileEvent::Lock => "10us",
        }
    }
}

/// One event and its sampling interval, as async-profiler writes it (`10ms`, `512k`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub kind: ProfileEvent,
    pub interval: String,
}

/// The CPU sampler: async-profiler's `cpu` (perf_events, falling back to `ctimer` where perf
/// events are not permitted) or one forced by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sampler {
    Cpu,
    Itimer,
    Ctimer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileSpec {
    pub events: Vec<Event>,
    pub sampler: Sampler,
    /// Keep the JFR recording beside the flame graphs.
    pub keep_jfr: bool,
}

impl ProfileSpec {
    pub fn parse(s: &str) -> Result<ProfileSpec, String> {
        let mut spec = ProfileSpec {
            events: Vec::new(),
            sampler: Sampler::Cpu,
            keep_jfr: false,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, interval) = match part.split_once(':') {
                Some((n, i)) => (n.trim(), Some(i.trim())),
                None => (part, None),
            };
            let kind = match name {
                "cpu" => ProfileEvent::Cpu,
                "itimer" | "ctimer" => {
                    spec.sampler = if name == "itimer" {
                        Sampler::Itimer
                    } else {
                        Sampler::Ctimer
                    };
                    ProfileEvent::Cpu
                }
                "wall" => ProfileEvent::Wall,
                "alloc" => ProfileEvent::Alloc,
                "lock" => ProfileEvent::Lock,
                "jfr" if interval.is_none() => {
                    spec.keep_jfr = true;
                    continue;
                }
                _ => {
                    return Err(format!(
                        "'{part}' is not a server profile: use cpu, wall, alloc, lock (each with an optional \
                         interval, e.g. cpu:1ms, alloc:256k, lock:100us), itimer or ctimer (CPU without perf \
                         events), and jfr to keep the recording; comma-separated, e.g. cpu,alloc"
                    ));
                }
            };
            let interval = match interval {
                Some(i) => check_interval(kind, i)?,
                None => kind.default_interval().to_string(),
            };
            if spec.events.iter().any(|e| e.kind == kind) {
                return Err(format!("--server-profile names {} twice", kind.name()));
            }
            spec.events.push(Event { kind, interval });
        }
        if spec.events.is_empty() {
            return Err("--server-profile needs at least one of cpu, wall, alloc, lock".into());
        }
        Ok(spec)
    }

    /// The text it was parsed from, normalised (`cpu:10ms,alloc:512k,jfr`).
    pub fn text(&self) -> String {
        let mut parts: Vec<String> = self
            .events
            .iter()
            .map(|e| {
                let name = match (e.kind, self.sampler) {
                    (ProfileEvent::Cpu, Sampler::Itimer) => "itimer",
                    (ProfileEvent::Cpu, Sampler::Ctimer) => "ctimer",
                    (k, _) => k.name(),
                };
                format!("{name}:{}", e.interval)
            })
            .collect();
        if self.keep_jfr {
            parts.push("jfr".into());
        }
        parts.join(",")
    }

    /// async-profiler's options to start recording `file` (JFR) with these events; `cpu_engine`
    /// is the sampler to name for CPU (`cpu`, `ctimer` or `itimer`).
    pub fn agent_start(&self, cpu_engine: &str, file: &std::path::Path, log: &std::path::Path) -> String {
        let mut o = vec!["start".to_string()];
        for e in &self.events {
            o.push(match e.kind {
                ProfileEvent::Cpu => format!("event={cpu_engine},interval={}", e.interval),
                ProfileEvent::Wall => format!("wall={}", e.interval),
                ProfileEvent::Alloc => format!("alloc={}", e.interval),
                ProfileEvent::Lock => format!("lock={}", e.interval),
            });
        }
        o.push("jfr".into());
        o.push(format!("file={}", file.display()));
        o.push(format!("log={}", log.display()));
        o.join(",")
    }
}

/// A number with an optional unit, as async-profiler reads intervals (`1ms`, `100us`, `256k`).
fn check_interval(kind: ProfileEvent, i: &str) -> Result<String, String> {
    let digits = i.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &i[digits.len()..];
    let units: &[&str] = match kind {
        ProfileEvent::Alloc => &["", "b", "k", "kb", "m", "mb"],
        _ => &["ns", "us", "ms", "s"],
    };
    let ok = digits.parse::<u64>().is_ok_and(|n| n > 0) && units.contains(&unit.to_ascii_lowercase().as_str());
    if !ok {
        return Err(format!(
            "'{i}' is not an interval for {}: write {}",
            kind.name(),
            if kind == ProfileEvent::Alloc {
                "bytes, e.g. 512k or 1m"
            } else {
                "a time with its unit, e.g. 10ms, 100us"
            }
        ));
    }
    Ok(i.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_intervals_and_jfr_parse() {
        let s = ProfileSpec::parse("cpu:1ms, alloc ,jfr").unwrap();
        assert_eq!(s.text(), "cpu:1ms,alloc:512k,jfr");
        assert!(s.keep_jfr);
        assert_eq!(ProfileSpec::parse("cpu").unwrap().text(), "cpu:10ms");
        assert_eq!(ProfileSpec::parse("ctimer").unwrap().sampler, Sampler::Ctimer);
        assert_eq!(
            ProfileSpec::parse("lock:100us,wall").unwrap().text(),
            "lock:100us,wall:50ms"
        );
        let opts =
            ProfileSpec::parse("cpu,alloc:1m")
                .unwrap()
                .agent_start("cpu", "/r/p.jfr".as_ref(), "/r/log".as_ref());
        assert_eq!(
            opts,
            "start,event=cpu,interval=10ms,alloc=1m,jfr,file=/r/p.jfr,log=/r/log"
        );
    }

    #[test]
    fn mistakes_name_what_is_valid() {
        for (bad, says) in [
            ("heap", "not a server profile"),
            ("cpu:fast", "e.g. 10ms"),
            ("alloc:1ms", "e.g. 512k"),
            ("cpu,cpu:1ms", "twice"),
            ("jfr", "at least one"),
            ("cpu:0ms", "not an interval"),
        ] {
            let e = ProfileSpec::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
