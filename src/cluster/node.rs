//! One local node: its directories, its state file (`state.json`, read by later stages for
//! log paths and PIDs), and its process as seen through /proc.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ClusterSpec;
use crate::procfs;

/// Everything about a node that outlives the caplab process that started it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeState {
    pub name: String,
    pub index: u32,
    pub spec: ClusterSpec,
    pub address: String,
    pub native_port: u16,
    pub storage_port: u16,
    pub jmx_port: u16,
    /// The running JVM, if caplab started one that has not been stopped.
    pub pid: Option<u32>,
    /// Unix seconds when the current process was started.
    pub started_at: Option<u64>,
    pub dir: PathBuf,
    pub conf_dir: PathBuf,
    pub data_dir: PathBuf,
    pub log_dir: PathBuf,
    pub system_log: PathBuf,
    pub gc_log: PathBuf,
    /// The JVM's own stdout and stderr.
    pub console_log: PathBuf,
    pub classpath: PathBuf,
    pub command: Vec<String>,
}

/// Whether a node's process is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Stopped,
    /// The state file names a process that is gone: the node died.
    Dead,
}

impl std::fmt::Display for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Liveness::Running => "running",
            Liveness::Stopped => "stopped",
            Liveness::Dead => "dead",
        })
    }
}

impl NodeState {
    pub fn state_file(dir: &Path) -> PathBuf {
        dir.join("state.json")
    }

    pub fn load(dir: &Path) -> Result<Option<NodeState>> {
        let path = Self::state_file(dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is damaged; remove the node with 'caplab node wipe' or fix the file",
                    path.display()
                )
            })?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Written to a temporary file and renamed, so readers never see half a state.
    pub fn save(&self) -> Result<()> {
        crate::files::write_json(&Self::state_file(&self.dir), self)
    }

    pub fn cql_addr(&self) -> SocketAddr {
        format!("{}:{}", self.address, self.native_port)
            .parse()
            .expect("node address is an IPv4 address")
    }

    pub fn liveness(&self) -> Liveness {
        match self.pid {
            None => Liveness::Stopped,
            Some(pid) if is_our_process(pid, &self.conf_dir) => Liveness::Running,
            Some(_) => Liveness::Dead,
        }
    }
}

/// True if `pid` is alive (not a zombie) and is the JVM started with this config directory,
/// so a recycled PID is never mistaken for the node.
pub fn is_our_process(pid: u32, conf_dir: &Path) -> bool {
    if matches!(procfs::state(pid), None | Some('Z')) {
        return false;
    }
    let Some(cmdline) = procfs::cmdline(pid) else {
        return false;
    };
    let needle = conf_dir.join("cassandra.yaml");
    String::from_utf8_lossy(&cmdline).contains(needle.to_string_lossy().as_ref())
}

/// Whether node process `pid` is completely gone, its ports released. A JVM that is exiting
/// drops its memory, and with it its command line, before it closes its sockets: an empty
/// command line means "still exiting", not "gone".
pub fn has_exited(pid: u32, conf_dir: &Path) -> bool {
    match procfs::state(pid) {
        None => return true,
        // The main thread can exit (and show as a zombie) while the JVM's other threads
        // still shut down holding the sockets: gone only when no thread is left.
        Some('Z' | 'X') => return procfs::task_count(pid).is_none_or(|n| n <= 1),
        Some(_) => {}
    }
    match procfs::cmdline(pid) {
        Some(cmdline) if cmdline.is_empty() => false,
        Some(_) => !is_our_process(pid, conf_dir),
        None => true,
    }
}

/// True once the node's native transport listens (the last step of startup): it answers a
/// CQL OPTIONS request with SUPPORTED, or, when it requires TLS, rejects the plain request.
pub fn cql_ready(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    // Protocol v4 request header: version, flags, stream id (2 bytes), opcode OPTIONS (5), body length 0.
    if s.write_all(&[0x04, 0, 0, 0, 0x05, 0, 0, 0, 0]).is_err() {
        return false;
    }
    let mut header = [0u8; 9];
    match s.read_exact(&mut header) {
        // A v4 response with opcode SUPPORTED (6).
        Ok(()) => header[0] == 0x84 && header[4] == 0x06,
        // A TLS-only port answers plain text with an alert or by closing: it is listening.
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
        ),
    }
}

/// The last `n` lines of a text file (empty if it cannot be read).
pub fn tail(path: &Path, n: usize) -> String {
    tail_since(path, 0, n)
}

/// The last `n` lines written to a file after byte `offset` (a log's length before a run).
pub fn tail_since(path: &Path, offset: u64, n: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let from = (offset as usize).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[from..]);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What Cassandra 6.0 logs when the first entry of its cluster metadata log (a Paxos write to
/// itself, as a new cluster's first node starts) timed out: on a busy machine, as it JIT-compiles.
pub const FIRST_METADATA_TIMED_OUT: &str = "Failed to insert pre-initialize entry into distributed metadata log";

/// Whether a node's start, which wrote its system.log `log` from `offset` on, failed because its
/// first cluster-metadata write timed out (a start worth trying once more on empty data).
pub fn first_metadata_write_timed_out(log: &Path, offset: u64) -> bool {
    tail_since(log, offset, 400).contains(FIRST_METADATA_TIMED_OUT)
}

/// Bytes used under a directory.
pub fn dir_size(path: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(path) else { return 0 };
    rd.filter_map(|e| e.ok())
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// One paragraph: what happened, the likely cause where the logs tell it, the last log
/// lines and where the whole logs are.
pub fn startup_failure(state: &NodeState, log_offset: u64, what: &str) -> String {
    let system = tail_since(&state.system_log, log_offset, 400);
    let console = tail_since(&state.console_log, 0, 200);
    let both = format!("{console}\n{system}");
    let mut cause = String::new();
    if both.contains("Setting a system-wide Policy object is not supported")
        || both.contains("UnsupportedClassVersionError")
    {
        let ok = super::java::supported_majors(&state.spec.version);
        cause = format!(
            "Cassandra {} does not run on JDK {}: use a JDK it supports ({}) with --java. ",
            state.spec.version,
            state.spec.jdk.major,
            ok.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" or ")
        );
    } else if both.contains("Stop marker is older than start marker") {
        cause = format!(
            "Cassandra said: its Accord journal has no stop marker (the node was killed), and \
             accord.journal.stop_marker_failure_policy is EXIT. Start the cluster with --set \
             accord.journal.stop_marker_failure_policy=REBOOTSTRAP: {} then rebuilds its Accord \
             state from its peers, as a kill fault on an Accord cluster needs. ",
            state.name
        );
    } else if both.contains("Detected unreadable sstables") {
        cause = format!(
            "Cassandra said: it cannot read SSTables written here by a later version (a \
             downgrade): Cassandra {} does not read the newer format. Restore a snapshot taken \
             before the upgrade, or wipe the node (caplab node wipe) and start it afresh. To be \
             able to come back, start the cluster with --set storage_compatibility_mode=CASSANDRA_4 \
             before upgrading: the newer release then writes SSTables the older one reads (5.0.9 \
             to 6.0-alpha2 and back was tried so). ",
            state.spec.version
        );
    } else if let Some(line) = both.lines().find(|l| {
        l.contains("Invalid yaml")
            || l.contains("ConfigurationException")
            || l.contains("Exception encountered during startup")
    }) {
        cause = format!("Cassandra said: {}. ", line.trim());
    }
    let (shown, lines) = if system.trim().is_empty() {
        (&state.console_log, &console)
    } else {
        (&state.system_log, &system)
    };
    // A line of its own can be long (a list of every SSTable): each is cut to 300 characters.
    let last: Vec<String> = lines.lines().map(|l| cut(l, 300)).collect();
    format!(
        "{} {what}. {cause}Last lines of {}:\n{}\n(full logs: {} and {})",
        state.name,
        shown.display(),
        last[last.len().saturating_sub(15)..].join("\n"),
        state.system_log.display(),
        state.console_log.display()
    )
}

/// `line`, cut to `max` characters with what was left out counted.
fn cut(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{} … ({} characters more)", &line[..at], line[at..].chars().count()),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_log_lines_are_cut() {
        assert_eq!(cut("short", 300), "short");
        assert_eq!(cut("aé—bcdef", 3), "aé— … (5 characters more)");
    }

    #[test]
    fn a_process_without_the_nodes_config_is_not_the_node() {
        let me = std::process::id();
        assert!(!is_our_process(me, Path::new("/no/such/conf")));
        // A live process that is not the node (a recycled PID): the node is gone.
        assert!(has_exited(me, Path::new("/no/such/conf")));
        assert!(has_exited(u32::MAX, Path::new("/no/such/conf")));
    }

    #[test]
    fn a_first_metadata_write_that_timed_out_is_told_from_other_failures() {
        let log = std::env::temp_dir().join(format!("caplab-tcm-{}", std::process::id()));
        // The lines a 6.0-alpha2 node logged beside another test file's three nodes.
        std::fs::write(
            &log,
            "ERROR [main] 2026-11-29 21:58:31,808 CassandraDaemon.java:1020 - Exception encountered during startup\n\
             java.lang.IllegalStateException: Failed to insert pre-initialize entry into distributed metadata log. \
             Check server for details\n\tat org.apache.cassandra.tcm.Startup.initialize(Startup.java:115)\n",
        )
        .unwrap();
        assert!(first_metadata_write_timed_out(&log, 0));
        // Logged by an earlier start, before this one's offset: not this start's failure.
        let earlier = std::fs::metadata(&log).unwrap().len();
        assert!(!first_metadata_write_timed_out(&log, earlier));
        std::fs::write(
            &log,
            "ERROR [main] Exception encountered during startup\nInvalid yaml\n",
        )
        .unwrap();
        assert!(!first_metadata_write_timed_out(&log, 0));
        std::fs::remove_file(&log).unwrap();
        assert!(!first_metadata_write_timed_out(&log, 0));
    }

    #[test]
    fn tail_since_skips_earlier_runs() {
        let dir = std::env::temp_dir().join(format!("caplab-tail-{}", std::process::id()));
        std::fs::write(&dir, "old 1\nold 2\nnew 1\nnew 2\nnew 3\n").unwrap();
        assert_eq!(tail_since(&dir, 12, 10), "new 1\nnew 2\nnew 3");
        assert_eq!(tail(&dir, 2), "new 2\nnew 3");
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn nothing_listening_is_not_ready() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        assert!(!cql_ready(addr));
    }
}
