//! Running Cassandra's NodeTool from the node's own classpath, over local JMX.

use anyhow::{Context, Result, bail};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::jvm::JPMS_FLAGS;
use super::node::NodeState;

const QUIET_LOGBACK: &str = r#"<configuration><root level="OFF"/></configuration>"#;

/// Runs `nodetool <args>` against `node`, killing it after `timeout`. Returns stdout.
pub fn run(node: &NodeState, args: &[&str], timeout: Duration) -> Result<String> {
    let logback = node.conf_dir.join("logback-tools.xml");
    if !logback.exists() {
        std::fs::write(&logback, QUIET_LOGBACK)?;
    }
    let out_path = node.dir.join("nodetool.out");
    let out = std::fs::File::create(&out_path)?;
    let mut child = Command::new(&node.spec.jdk.java)
        .args(JPMS_FLAGS)
        .arg("-Xmx256m")
        // NodeTool keeps a history file under user.home.
        .arg(format!("-Duser.home={}", node.dir.display()))
        .arg(format!("-Dlogback.configurationFile={}", logback.display()))
        .arg("-cp")
        .arg(format!("{}/*", node.classpath.display()))
        .arg("org.apache.cassandra.tools.NodeTool")
        .args(["-h", "127.0.0.1", "-p", &node.jmx_port.to_string()])
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
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!("nodetool {} failed: {last}", args.join(" "));
    }
    Ok(text)
}
