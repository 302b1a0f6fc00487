//! Running Cassandra's NodeTool over JMX: for a local node from its own classpath, or for
//! any endpoint from the jars of the cluster's version.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::jvm::JPMS_FLAGS;
use super::node::NodeState;

const QUIET_LOGBACK: &str = r#"<configuration><root level="OFF"/></configuration>"#;

/// Where and how NodeTool reaches a node's JMX.
#[derive(Debug, Clone)]
pub struct JmxTarget {
    pub java: PathBuf,
    /// Directory of Cassandra's jars (NodeTool is in cassandra-all).
    pub classpath: PathBuf,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    /// For NodeTool's history file, its logging configuration and its output.
    pub workdir: PathBuf,
}

impl JmxTarget {
    /// A node caplab runs here: its JMX listens on loopback, without credentials.
    pub fn local(node: &NodeState) -> JmxTarget {
        JmxTarget {
            java: node.spec.jdk.java.clone(),
            classpath: node.classpath.clone(),
            host: "127.0.0.1".into(),
            port: node.jmx_port,
            user: None,
            password: None,
            workdir: node.dir.clone(),
        }
    }
}

/// Runs `nodetool <args>` against `node`, killing it after `timeout`. Returns stdout.
pub fn run(node: &NodeState, args: &[&str], timeout: Duration) -> Result<String> {
    run_on(&JmxTarget::local(node), args, timeout)
}

/// Runs `nodetool <args>` against any JMX endpoint.
pub fn run_on(t: &JmxTarget, args: &[&str], timeout: Duration) -> Result<String> {
    std::fs::create_dir_all(&t.workdir)?;
    let logback = t.workdir.join("logback-tools.xml");
    if !logback.exists() {
        std::fs::write(&logback, QUIET_LOGBACK)?;
    }
    let out_path = t.workdir.join(format!("nodetool-{}-{}.out", t.host, t.port));
    let out = std::fs::File::create(&out_path)?;
    let mut cmd = Command::new(&t.java);
    cmd.args(JPMS_FLAGS)
        .arg("-Xmx256m")
        // NodeTool keeps a history file under user.home.
        .arg(format!("-Duser.home={}", t.workdir.display()))
        .arg(format!("-Dlogback.configurationFile={}", logback.display()))
        .arg("-cp")
        .arg(format!("{}/*", t.classpath.display()))
        .arg("org.apache.cassandra.tools.NodeTool")
        .args(["-h", &t.host, "-p", &t.port.to_string()]);
    if let Some(u) = &t.user {
        cmd.args(["-u", u]);
    }
    // The password goes in a file (so it does not show in the process list), alone in a
    // private directory with an unpredictable name, removed when nodetool is done.
    let mut secret_dir = None;
    if let (Some(u), Some(p)) = (&t.user, &t.password) {
        let dir = tempfile::Builder::new()
            .prefix("caplab-jmx-")
            .tempdir()
            .context("cannot create a private directory for the JMX password file")?;
        let pwf = dir.path().join("jmx.password");
        write_private(&pwf, format!("{u} {p}\n").as_bytes())?;
        cmd.arg("-pwf").arg(&pwf);
        secret_dir = Some(dir);
    }
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .context("cannot start nodetool")?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!("nodetool {} did not finish in {}s", args.join(" "), timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(secret_dir);
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!("nodetool {} failed: {last}", args.join(" "));
    }
    Ok(text)
}

/// Writes a new file only its owner can read (refusing to follow a link or reuse a file).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut f, bytes)?;
    Ok(())
}
