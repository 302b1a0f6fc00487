//! Server profiling: async-profiler attached to each local node for exactly the measured
//! window of a step. The agent records JFR from just before the window (started over HotSpot's
//! attach socket, in milliseconds, see `attach`) until the step ends; the recording is then cut
//! to the window (`--from/--to`) and converted per node and event into async-profiler's flame
//! graph, collapsed stacks and (CPU, wall) heatmap, and read into the top frames that result.json
//! keeps and the summary prints. Experiments compare profiles frame by frame (`stacks`).
//!
//! Only nodes caplab runs on this machine can be profiled (the agent is loaded into their
//! JVMs); for others the error says how to attach it by hand.

pub mod attach;
pub mod result;
pub mod spec;
pub mod stacks;
pub mod tools;

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::cluster::node::NodeState;
use crate::telemetry::gclog::epoch_ms;
use result::window_text;
pub use result::{EventProfile, NodeProfile, ProfileResult, SliceProfile, short};
pub use spec::{ProfileEvent, ProfileSpec, Sampler};
pub use stacks::{FrameChange, FrameShare, Stacks};
pub use tools::Tools;

/// Where a step's profiles go, inside its results directory.
pub const DIR: &str = "profile";
/// Frames listed per event in result.json and the summary.
const TOP: usize = 10;

/// A part of the measured window profiled on its own (a window that failed the service level).
#[derive(Debug, Clone)]
pub struct Slice {
    pub label: String,
    pub from: SystemTime,
    pub to: SystemTime,
}

/// Failed windows given flame graphs of their own, at most (the first ones).
const SLICES: usize = 3;

/// Ready to profile steps: the tools fetched and the CPU sampler chosen.
#[derive(Debug, Clone)]
pub struct Profiler {
    pub spec: ProfileSpec,
    pub tools: Tools,
    /// async-profiler's name of the CPU sampler (`cpu`: perf events).
    cpu_engine: &'static str,
    /// What result.json calls it; None without a CPU event.
    cpu_sampler: Option<String>,
    note: Option<String>,
}

/// A recording under way on a step's nodes.
pub struct Recording {
    dir: PathBuf,
    nodes: Vec<Recorded>,
    from: SystemTime,
    errors: Vec<String>,
    agent: PathBuf,
    stopped: bool,
}

impl Drop for Recording {
    /// A step that ends in an error never reaches `finish`: the nodes must not go on
    /// recording (the next step's start would be refused, and the file would grow).
    fn drop(&mut self) {
        if !self.stopped {
            for r in &self.nodes {
                let _ = attach::load_agent(r.pid, &self.agent, "stop");
            }
        }
    }
}

struct Recorded {
    name: String,
    pid: u32,
    java: PathBuf,
    jfr: PathBuf,
    log: PathBuf,
}

/// The error for a cluster caplab does not run here.
pub fn not_local(hosts: &[String]) -> anyhow::Error {
    anyhow::anyhow!(
        "--server-profile loads async-profiler into the nodes' JVMs, so it needs nodes caplab runs on this machine \
         ('caplab node start', then run without --hosts or with their addresses); {} {} not such nodes. On a remote \
         node attach it by hand during the measured window: fetch tools.profiler:async-profiler:{} from Maven Central, \
         take linux-x64/libasyncProfiler.so out of the jar, and start Cassandra with \
         -agentpath:/path/libasyncProfiler.so=start,event=cpu,file=/tmp/profile.html (or use the asprof launcher of \
         async-profiler's release archive: asprof -e cpu -d 60 -f /tmp/profile.html <pid>; jcmd's JVMTI.agent_load \
         cannot pass async-profiler's options)",
        hosts.join(","),
        if hosts.len() == 1 { "is" } else { "are" },
        tools::ASYNC_PROFILER
    )
}

impl Profiler {
    /// Checks the nodes can be profiled, fetches the tools, and picks the CPU sampler.
    pub fn new(
        home: &crate::cluster::Home,
        spec: ProfileSpec,
        nodes: &[NodeState],
        hosts: &[String],
        say: &mut dyn FnMut(&str),
    ) -> Result<Profiler> {
        if nodes.is_empty() {
            return Err(not_local(hosts));
        }
        for n in nodes {
            let java = &n.spec.jdk.java;
            // The JDK's `release` file names its VM; OpenJ9 speaks another attach protocol.
            let release = java
                .parent()
                .and_then(Path::parent)
                .map(|home| std::fs::read_to_string(home.join("release")).unwrap_or_default())
                .unwrap_or_default();
            if n.spec.jdk.major < 8 || release.to_ascii_lowercase().contains("openj9") {
                bail!(
                    "{} runs on JDK {} ({}), which caplab cannot profile: it attaches async-profiler the HotSpot \
                     way (OpenJDK, Temurin, Zulu, Corretto; JDK 8 or newer). Start the node with such a JDK \
                     (caplab node start --java …) or drop --server-profile",
                    n.name,
                    n.spec.jdk.version,
                    java.display()
                );
            }
        }
        let tools = Tools::get(home, say)?;
        let (cpu_engine, note) = match spec.sampler {
            Sampler::Itimer => ("itimer", None),
            Sampler::Ctimer => ("ctimer", None),
            Sampler::Cpu if !spec.events.iter().any(|e| e.kind == ProfileEvent::Cpu) => ("cpu", None),
            Sampler::Cpu => match tools::perf_events() {
                Ok(()) => ("cpu", None),
                Err(why) => {
                    say(&format!("Server profile: {why}"));
                    ("ctimer", Some(why))
                }
            },
        };
        let cpu_sampler = spec.events.iter().any(|e| e.kind == ProfileEvent::Cpu).then(|| {
            match cpu_engine {
                "cpu" => "perf_events",
                other => other,
            }
            .to_string()
        });
        Ok(Profiler {
            spec,
            tools,
            cpu_engine,
            cpu_sampler,
            note,
        })
    }

    /// Starts recording on `nodes` into `out`/profile. A node that cannot be attached is
    /// noted in the report, not fatal: the run is measured either way.
    pub fn start(&self, out: &Path, nodes: &[NodeState]) -> Result<Recording> {
        let dir = out.join(DIR);
        std::fs::create_dir_all(&dir)?;
        let from = SystemTime::now();
        let mut rec = Recording {
            dir: dir.clone(),
            nodes: Vec::new(),
            from,
            errors: Vec::new(),
            agent: self.tools.agent.clone(),
            stopped: false,
        };
        for n in nodes {
            let Some(pid) = n.pid else {
                rec.errors.push(format!("{}: not running, not profiled", n.name));
                continue;
            };
            let node_dir = dir.join(&n.name);
            std::fs::create_dir_all(&node_dir)?;
            let r = Recorded {
                name: n.name.clone(),
                pid,
                java: n.spec.jdk.java.clone(),
                jfr: node_dir.join("recording.jfr"),
                log: node_dir.join("async-profiler.log"),
            };
            let options = self.spec.agent_start(self.cpu_engine, &r.jfr, &r.log);
            // A profiler left running (a caplab killed mid-step) refuses to start: stop it and
            // try once more.
            let started = self.agent(&r, &options).or_else(|_| {
                let _ = attach::load_agent(pid, &self.tools.agent, "stop");
                self.agent(&r, &options)
            });
            match started {
                Ok(()) => rec.nodes.push(r),
                Err(e) => rec.errors.push(format!("{}: {e:#}", n.name)),
            }
        }
        Ok(rec)
    }

    fn agent(&self, r: &Recorded, options: &str) -> Result<()> {
        let code = attach::load_agent(r.pid, &self.tools.agent, options)?;
        if code != 0 {
            let log = std::fs::read_to_string(&r.log).unwrap_or_default();
            bail!(
                "async-profiler refused '{options}' (code {code}): {}",
                log.lines()
                    .filter(|l| l.contains("[ERROR]"))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        Ok(())
    }

    /// Stops the recording and turns the window `from..to` of it into the step's profiles.
    /// `slices` (windows that failed the service level) get CPU and wall flame graphs of their own.
    pub fn finish(
        &self,
        mut rec: Recording,
        window: Option<(SystemTime, SystemTime)>,
        slices: &[Slice],
    ) -> ProfileResult {
        for r in &rec.nodes {
            if let Err(e) = self.agent(r, &format!("stop,log={}", r.log.display())) {
                rec.errors.push(format!("{}: stopping the profiler: {e:#}", r.name));
            }
        }
        rec.stopped = true;
        let to = SystemTime::now();
        let (wf, wt) = window.unwrap_or((to, to));
        let mut report = ProfileResult {
            spec: self.spec.text(),
            async_profiler: self.tools.version.clone(),
            cpu_sampler: self.cpu_sampler.clone(),
            note: self.note.clone(),
            recording_from_ms: epoch_ms(rec.from),
            recording_to_ms: epoch_ms(to),
            measured_from_ms: epoch_ms(wf),
            measured_to_ms: epoch_ms(wt),
            nodes: Vec::new(),
            errors: std::mem::take(&mut rec.errors),
        };
        if window.is_none() {
            report
                .errors
                .push("nothing was measured, so nothing was profiled".into());
        }
        for r in &rec.nodes {
            let mut node = NodeProfile {
                node: r.name.clone(),
                pid: r.pid,
                events: Vec::new(),
                jfr: None,
            };
            if window.is_some() {
                for e in &self.spec.events {
                    match self.convert(&rec.dir, r, e, &report, slices) {
                        Ok(p) => node.events.push(p),
                        Err(err) => report.errors.push(format!("{} {}: {err:#}", r.name, e.kind.name())),
                    }
                }
            }
            if self.spec.keep_jfr {
                node.jfr = Some(relative(&rec.dir, &r.jfr));
            } else {
                let _ = std::fs::remove_file(&r.jfr);
            }
            report.nodes.push(node);
        }
        report
    }

    fn convert(
        &self,
        dir: &Path,
        r: &Recorded,
        e: &spec::Event,
        report: &ProfileResult,
        slices: &[Slice],
    ) -> Result<EventProfile> {
        let name = e.kind.name();
        let node_dir = r.jfr.parent().expect("in the node's folder");
        let title = |what: &str| format!("{} {name} ({} every {}), {what}", r.name, e.kind.unit(), e.interval);
        let window = (report.measured_from_ms, report.measured_to_ms);
        let (stacks, html) = self.flame_graph(
            r,
            e.kind,
            window,
            name,
            &title(&format!("measured window {}", window_text(window))),
        )?;
        // Heatmaps and failed windows are about time: CPU and wall samples only.
        let (mut heatmap, mut sliced) = (None, Vec::new());
        if matches!(e.kind, ProfileEvent::Cpu | ProfileEvent::Wall) {
            let file = node_dir.join(format!("{name}-heatmap.html"));
            self.tools
                .convert(&r.java, &slice_args(r, e.kind, window, "heatmap", &file))?;
            heatmap = Some(relative(dir, &file));
            for s in slices.iter().take(SLICES) {
                let span = (epoch_ms(s.from), epoch_ms(s.to));
                let stem = format!("{name}-{}", s.label);
                let (st, file) = self.flame_graph(
                    r,
                    e.kind,
                    span,
                    &stem,
                    &title(&format!("{} {}", s.label, window_text(span))),
                )?;
                sliced.push(SliceProfile {
                    label: s.label.clone(),
                    from_ms: span.0,
                    to_ms: span.1,
                    samples: st.samples,
                    flame_graph: relative(dir, &file),
                });
            }
        }
        Ok(EventProfile {
            kind: e.kind,
            interval: e.interval.clone(),
            samples: stacks.samples,
            flame_graph: relative(dir, &html),
            collapsed: relative(dir, &html.with_extension("collapsed")),
            heatmap,
            top_self: stacks.top_self(TOP),
            top_total: stacks.top_total(TOP),
            slices: sliced,
        })
    }

    /// `<stem>.collapsed` and `<stem>.html` of `kind`'s samples in `span` (epoch ms).
    fn flame_graph(
        &self,
        r: &Recorded,
        kind: ProfileEvent,
        span: (u64, u64),
        stem: &str,
        title: &str,
    ) -> Result<(Stacks, PathBuf)> {
        let node_dir = r.jfr.parent().expect("in the node's folder");
        let collapsed = node_dir.join(format!("{stem}.collapsed"));
        let html = node_dir.join(format!("{stem}.html"));
        let mut args = vec!["--norm".to_string(), "--dot".to_string()];
        args.extend(slice_args(r, kind, span, "collapsed", &collapsed));
        self.tools.convert(&r.java, &args)?;
        let stacks = Stacks::of(&std::fs::read_to_string(&collapsed)?);
        self.tools.convert(
            &r.java,
            &[
                "--title".into(),
                title.to_string(),
                "-o".into(),
                "html".into(),
                collapsed.display().to_string(),
                html.display().to_string(),
            ],
        )?;
        Ok((stacks, html))
    }
}

/// The converter's arguments for `kind`'s samples in `span` (epoch ms) of the recording.
fn slice_args(r: &Recorded, kind: ProfileEvent, (from, to): (u64, u64), format: &str, out: &Path) -> Vec<String> {
    vec![
        format!("--{}", kind.name()),
        "--from".into(),
        from.to_string(),
        "--to".into(),
        to.to_string(),
        "-o".into(),
        format.into(),
        r.jfr.display().to_string(),
        out.display().to_string(),
    ]
}

/// `file` relative to the results directory (`dir` is its `profile/` folder).
fn relative(dir: &Path, file: &Path) -> String {
    let base = dir.parent().unwrap_or(dir);
    file.strip_prefix(base).unwrap_or(file).display().to_string()
}
