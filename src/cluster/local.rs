//! The local cluster as a whole: start (reusing, refusing or restarting what runs), stop,
//! status and wipe, over the nodes under `<data home>/nodes/`.

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::node::{Liveness, NodeState, cql_ready, startup_failure};
use super::yaml::{BaseConfig, Override};
use super::{ClusterSpec, Home, NATIVE_PORT, STORAGE_PORT, jvm, maven, nodetool, ring, yaml};

/// How `start` treats nodes that already run.
#[derive(Debug, Clone, Copy, Default)]
pub struct StartOptions {
    /// Stop nodes running with another configuration and start them with this one.
    pub restart: bool,
    /// How long one node may take to accept CQL.
    pub timeout: Option<Duration>,
}

/// What `start` did.
#[derive(Debug)]
pub struct Started {
    pub nodes: Vec<NodeState>,
    /// True when every node was already running with this configuration.
    pub reused: bool,
}

/// Every node under the home, by index.
pub fn nodes(home: &Home) -> Result<Vec<NodeState>> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(home.nodes_dir()) else {
        return Ok(out);
    };
    for e in rd.filter_map(|e| e.ok()) {
        if let Some(s) = NodeState::load(&e.path())? {
            out.push(s);
        }
    }
    out.sort_by_key(|s| s.index);
    Ok(out)
}

/// Nodes by name (all when `names` is empty); an unknown name is an error.
pub fn select(home: &Home, names: &[String]) -> Result<Vec<NodeState>> {
    let all = nodes(home)?;
    if names.is_empty() {
        return Ok(all);
    }
    for n in names {
        if !all.iter().any(|s| &s.name == n) {
            let known: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            bail!(
                "no node named '{n}' under {} (nodes: {})",
                home.nodes_dir().display(),
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    Ok(all.into_iter().filter(|s| names.contains(&s.name)).collect())
}

/// Brings up the cluster `spec` describes and returns when every node accepts CQL.
pub fn start(home: &Home, spec: &ClusterSpec, opts: StartOptions, say: &mut dyn FnMut(&str)) -> Result<Started> {
    for o in &spec.overrides {
        Override::parse(o)?;
    }
    let existing = nodes(home)?;
    let running: Vec<&NodeState> = existing.iter().filter(|s| s.liveness() == Liveness::Running).collect();
    let mismatched: Vec<&NodeState> = running
        .iter()
        .copied()
        .filter(|s| &s.spec != spec || s.index > spec.nodes)
        .collect();
    if !mismatched.is_empty() {
        if !opts.restart {
            let diffs = mismatched[0].spec.differences(spec);
            bail!(
                "{} running with a different configuration ({}). Stop it first ('caplab node stop'), or pass --restart \
                 to restart with the new configuration (add --wipe to start from empty data)",
                names_of(&mismatched),
                if diffs.is_empty() {
                    "more nodes than asked for".to_string()
                } else {
                    diffs.join("; ")
                }
            );
        }
        for s in &mismatched {
            say(&format!("Restarting {} with the new configuration", s.name));
            stop_node(s, StopOptions::default(), say)?;
        }
    }
    let all_up = (1..=spec.nodes).all(|i| {
        running
            .iter()
            .any(|s| s.index == i && &s.spec == spec && s.liveness() == Liveness::Running)
    });
    if all_up && mismatched.is_empty() {
        let nodes = (1..=spec.nodes)
            .filter_map(|i| existing.iter().find(|s| s.index == i).cloned())
            .collect();
        return Ok(Started { nodes, reused: true });
    }

    let classpath = super::jars::of_spec(home, spec, say)?;
    // A cluster created by this start has no data to stream: its nodes join without
    // bootstrapping, which also avoids bootstrap's race with gossip on a loaded machine.
    let fresh = (1..=spec.nodes).all(|i| !home.node_dir(&ClusterSpec::node_name(i)).join("data").exists());
    let mut out = Vec::new();
    for i in 1..=spec.nodes {
        let dir = home.node_dir(&ClusterSpec::node_name(i));
        let prev = NodeState::load(&dir)?;
        if let Some(p) = prev
            .as_ref()
            .filter(|p| &p.spec == spec && p.liveness() == Liveness::Running)
        {
            out.push(p.clone());
            continue;
        }
        let timeout = opts.timeout.unwrap_or(Duration::from_secs(240));
        let log = dir.join("logs/system.log");
        let log_offset = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let state = match launch(spec, i, fresh, &dir, &classpath, timeout, say) {
            // A new cluster's first node on 6.0 writes its first metadata entry through Paxos
            // to itself, which times out when the machine is busy: on empty data, once more.
            Err(e) if fresh && i == 1 && super::node::first_metadata_write_timed_out(&log, log_offset) => {
                say(&format!(
                    "{} did not write its first cluster-metadata entry in time (Cassandra said: {}: \
                     a Paxos write to itself timed out, as on a busy machine); starting it again on \
                     empty data. The first try: {}",
                    ClusterSpec::node_name(i),
                    super::node::FIRST_METADATA_TIMED_OUT,
                    format!("{e:#}").lines().next().unwrap_or_default()
                ));
                std::fs::remove_dir_all(dir.join("data")).with_context(|| format!("cannot empty {}", dir.display()))?;
                launch(spec, i, fresh, &dir, &classpath, timeout, say)?
            }
            other => other?,
        };
        out.push(state);
    }
    ring::wait_for_ring(&out, fresh, Duration::from_secs(90), say)?;
    Ok(Started {
        nodes: out,
        reused: false,
    })
}

/// Starts node `index` of a cluster that runs, with `spec` (which may differ from the spec its
/// peers run with: another version, for a rolling upgrade) over the data it has; returns when
/// it accepts CQL.
pub fn start_one(home: &Home, spec: &ClusterSpec, index: u32, say: &mut dyn FnMut(&str)) -> Result<NodeState> {
    let classpath = super::jars::of_spec(home, spec, say)?;
    let dir = home.node_dir(&ClusterSpec::node_name(index));
    launch(spec, index, false, &dir, &classpath, Duration::from_secs(240), say)
}

/// The jars NodeTool runs from for a cluster of `version` (resolved from Maven Central once).
pub fn nodetool_classpath(home: &Home, version: &str, say: &mut dyn FnMut(&str)) -> Result<std::path::PathBuf> {
    maven::resolve(home, version, say)
}

fn names_of(nodes: &[&NodeState]) -> String {
    let names: Vec<&str> = nodes.iter().map(|s| s.name.as_str()).collect();
    if names.len() == 1 {
        format!("{} is", names[0])
    } else {
        format!("{} are", names.join(", "))
    }
}

/// Writes the node's configuration, starts its JVM in its own process group (so it
/// outlives caplab and ignores caplab's Ctrl-C) and waits until it serves CQL.
fn launch(
    spec: &ClusterSpec,
    index: u32,
    fresh_cluster: bool,
    dir: &Path,
    classpath: &Path,
    timeout: Duration,
    say: &mut dyn FnMut(&str),
) -> Result<NodeState> {
    let name = ClusterSpec::node_name(index);
    let address = spec.node_address(index);
    let jmx_port = spec.node_jmx_port(index);
    check_ports_free(&name, address, jmx_port)?;

    let conf_dir = dir.join("conf");
    let data_dir = dir.join("data");
    let log_dir = dir.join("logs");
    for d in [&conf_dir, &data_dir, &log_dir] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let seeds = format!("{}:{STORAGE_PORT}", spec.node_address(1));
    let base = yaml::base(&BaseConfig {
        cluster_name: &spec.cluster_name,
        address: &address.to_string(),
        seeds: &seeds,
        native_port: NATIVE_PORT,
        storage_port: STORAGE_PORT,
        auto_bootstrap: !fresh_cluster,
    });
    let overrides = spec
        .overrides
        .iter()
        .map(|o| Override::parse(o))
        .collect::<Result<Vec<_>>>()?;
    let text = yaml::render(base, &overrides, fresh_cluster.then_some((index, spec.nodes)))?;
    std::fs::write(conf_dir.join("cassandra.yaml"), text)?;
    std::fs::write(conf_dir.join("logback.xml"), jvm::LOGBACK_XML)?;

    let server = jvm::ServerJvm {
        heap: spec.heap,
        gc: spec.gc,
        jit: spec.jit,
        jdk_major: spec.jdk.major,
        jvm_opts: &spec.jvm_opts,
        conf_dir: &conf_dir,
        data_dir: &data_dir,
        log_dir: &log_dir,
        jmx_port,
        classpath,
    };
    let command = server.args()?;
    let console_log = log_dir.join("console.log");
    let console = std::fs::File::create(&console_log)?;
    let mut state = NodeState {
        name: name.clone(),
        index,
        spec: spec.clone(),
        address: address.to_string(),
        native_port: NATIVE_PORT,
        storage_port: STORAGE_PORT,
        jmx_port,
        pid: None,
        started_at: None,
        dir: dir.to_path_buf(),
        conf_dir: conf_dir.clone(),
        data_dir: data_dir.clone(),
        log_dir: log_dir.clone(),
        system_log: log_dir.join("system.log"),
        gc_log: server.gc_log(),
        console_log: console_log.clone(),
        classpath: classpath.to_path_buf(),
        command: command.clone(),
    };
    let log_offset = std::fs::metadata(&state.system_log).map(|m| m.len()).unwrap_or(0);
    say(&format!("Starting {name} on {address}: {}", spec.describe()));
    let mut cmd = Command::new(&spec.jdk.java);
    cmd.args(&command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(console.try_clone()?)
        .stderr(console)
        .process_group(0);
    confine(&mut cmd, &spec.cpus, spec.timer_slack_ns);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", spec.jdk.java.display()))?;
    state.pid = Some(child.id());
    state.started_at = Some(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    );
    state.save()?;

    let begin = Instant::now();
    let cql = state.cql_addr();
    loop {
        if let Some(status) = child.try_wait()? {
            state.pid = None;
            state.save()?;
            bail!(
                "{}",
                startup_failure(&state, log_offset, &format!("exited during startup ({status})"))
            );
        }
        if cql_ready(cql) {
            break;
        }
        if begin.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            state.pid = None;
            state.save()?;
            bail!(
                "{}",
                startup_failure(
                    &state,
                    log_offset,
                    &format!(
                        "did not accept CQL on {cql} within {}s and was killed",
                        timeout.as_secs()
                    )
                )
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    say(&format!(
        "{name} accepts CQL on {cql} after {:.1}s",
        begin.elapsed().as_secs_f64()
    ));
    Ok(state)
}

/// A start refused before any JVM ran, for a reason trying again does not change (a port
/// another process holds): an experiment that meets it stops rather than fail every step.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// How long a port is tried before a start is refused: a node stopped a moment ago can hold its
/// ports for a few seconds after caplab saw it exit (an experiment's next step was refused for its
/// JMX port: bench/results/seeds.md, "E2 on the AMD EPYC boot").
const PORT_WAIT: Duration = Duration::from_secs(10);

/// Refuses to start a node whose ports another process holds (still holds after `PORT_WAIT`).
fn check_ports_free(name: &str, address: Ipv4Addr, jmx_port: u16) -> Result<()> {
    let checks = [
        (SocketAddr::from((address, NATIVE_PORT)), "CQL"),
        (SocketAddr::from((address, STORAGE_PORT)), "storage"),
        (SocketAddr::from((Ipv4Addr::LOCALHOST, jmx_port)), "JMX"),
    ];
    let begin = Instant::now();
    for (addr, what) in checks {
        let mut bound = TcpListener::bind(addr);
        while bound.is_err() && begin.elapsed() < PORT_WAIT {
            std::thread::sleep(Duration::from_millis(250));
            bound = TcpListener::bind(addr);
        }
        if let Err(e) = bound {
            return Err(Refused(format!(
                "{name} cannot start: its {what} port {addr} is in use ({e}). Stop whatever listens there \
                 (see 'ss -ltnp | grep {}'), or start caplab's nodes elsewhere with --address and --jmx-port",
                addr.port()
            ))
            .into());
        }
    }
    Ok(())
}

/// How `stop` shuts a node down.
#[derive(Debug, Clone, Copy)]
pub struct StopOptions {
    /// Flush memtables and stop accepting writes first (nodetool drain).
    pub drain: bool,
    /// How long after SIGTERM before SIGKILL.
    pub timeout: Duration,
}

impl Default for StopOptions {
    fn default() -> Self {
        StopOptions {
            drain: true,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Stops the given nodes, last first; returns what was done per node.
pub fn stop(nodes: &[NodeState], opts: StopOptions, say: &mut dyn FnMut(&str)) -> Result<()> {
    for s in nodes.iter().rev() {
        stop_node(s, opts, say)?;
    }
    Ok(())
}

fn stop_node(s: &NodeState, opts: StopOptions, say: &mut dyn FnMut(&str)) -> Result<()> {
    let mut s = s.clone();
    match s.liveness() {
        Liveness::Stopped => return Ok(()),
        Liveness::Dead => {
            say(&format!(
                "{} had already exited; see {}",
                s.name,
                s.system_log.display()
            ));
        }
        Liveness::Running => {
            let pid = s.pid.expect("running node has a pid");
            let begin = Instant::now();
            if opts.drain
                && let Err(e) = nodetool::run(&s, &["drain"], Duration::from_secs(120))
            {
                say(&format!("{}: drain failed ({e}); stopping without it", s.name));
            }
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
            if !wait_gone(pid, &s, opts.timeout) {
                say(&format!(
                    "{} did not stop within {}s of SIGTERM; killing it",
                    s.name,
                    opts.timeout.as_secs()
                ));
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
                wait_gone(pid, &s, Duration::from_secs(10));
            }
            say(&format!(
                "Stopped {} (pid {pid}) in {:.1}s",
                s.name,
                begin.elapsed().as_secs_f64()
            ));
        }
    }
    s.pid = None;
    s.started_at = None;
    s.save()
}

/// Makes `cmd` run on `cpus` only (any when empty) and with a timer slack of `slack_ns` (the
/// kernel's when `None`); both are inherited by every thread the node starts.
fn confine(cmd: &mut Command, cpus: &[usize], slack_ns: Option<u64>) {
    if cpus.is_empty() && slack_ns.is_none() {
        return;
    }
    let set = (!cpus.is_empty()).then(|| crate::cpus::mask(cpus));
    // SAFETY: between fork and exec only sched_setaffinity and prctl run, async-signal-safe
    // system calls reading values made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(set) = &set
                && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(ns) = slack_ns
                && libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Waits up to `timeout` for a node's process to be gone (reaping it when this process
/// started it); whether it went.
pub fn wait_gone(pid: u32, s: &NodeState, timeout: Duration) -> bool {
    let begin = Instant::now();
    while begin.elapsed() < timeout {
        // Reap it if this process started it, so it does not linger as a zombie.
        let _ = nix::sys::wait::waitpid(Pid::from_raw(pid as i32), Some(nix::sys::wait::WaitPidFlag::WNOHANG));
        if super::node::has_exited(pid, &s.conf_dir) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Removes nodes' directories (data, logs, configuration, state). Running nodes are
/// refused unless `force`, which stops them first.
pub fn wipe(nodes: &[NodeState], force: bool, say: &mut dyn FnMut(&str)) -> Result<()> {
    let running: Vec<&NodeState> = nodes.iter().filter(|s| s.liveness() == Liveness::Running).collect();
    if !running.is_empty() && !force {
        bail!(
            "{} running: stop it first ('caplab node stop') or pass --force to stop and wipe",
            names_of(&running)
        );
    }
    stop(
        nodes,
        StopOptions {
            drain: false,
            timeout: Duration::from_secs(30),
        },
        say,
    )?;
    for s in nodes {
        std::fs::remove_dir_all(&s.dir).with_context(|| format!("cannot remove {}", s.dir.display()))?;
        say(&format!("Wiped {} ({})", s.name, s.dir.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a node started with `--cpus` and `--timer-slack` runs with: the kernel reports both
    /// for the process (and every thread it starts inherits them).
    #[test]
    fn a_confined_process_runs_on_its_cores_with_its_timer_slack() {
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        confine(&mut cmd, &[0], Some(1_000_000));
        let mut child = cmd.spawn().unwrap();
        let proc = format!("/proc/{}", child.id());
        let slack = std::fs::read_to_string(format!("{proc}/timerslack_ns")).unwrap();
        let status = std::fs::read_to_string(format!("{proc}/status")).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(slack.trim(), "1000000");
        let cores = status.lines().find(|l| l.starts_with("Cpus_allowed_list")).unwrap();
        assert_eq!(cores.split_whitespace().last(), Some("0"), "{cores}");

        let mut plain = Command::new("sleep");
        plain.arg("5");
        confine(&mut plain, &[], None);
        let mut child = plain.spawn().unwrap();
        let slack = std::fs::read_to_string(format!("/proc/{}/timerslack_ns", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let ours = std::fs::read_to_string("/proc/self/timerslack_ns").unwrap();
        assert_eq!(slack, ours, "without a slack the node keeps the one it inherits");
    }
}
