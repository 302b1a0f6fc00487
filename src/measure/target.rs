//! Where load goes: the contact points (given, or the local nodes caplab runs, or a node
//! started now), the session, what results say about the cluster and the client machine, and
//! the JMX endpoints to read GC from for clusters caplab does not run.

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use std::sync::Arc;

use super::out::redact_setting;
use super::result::Environment;
use crate::client::{self, ClientOptions};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions};
use crate::cluster::node::{Liveness, NodeState};
use crate::cluster::nodetool::{JmxTarget, JmxTls};
use crate::cluster::options::LocalNode;
use crate::console::say;
use crate::procfs;

/// What a step needs to know about where its load goes (the session itself belongs to the
/// workload, which holds its prepared statements).
#[derive(Debug, Clone)]
pub struct Site {
    pub client: ClientOptions,
    /// Nodes caplab runs on this machine among the targets: their GC logs and /proc are read.
    pub local_nodes: Vec<NodeState>,
    /// The cluster's Cassandra version, as `system.local` says.
    pub release: Option<String>,
    /// Retries the session has made (with `--retries`).
    pub retries: Arc<std::sync::atomic::AtomicU64>,
    /// A session to read the server's own tables with (thread pools), when connected.
    pub cql: Option<Arc<Session>>,
}

impl Site {
    pub fn describe(&self) -> String {
        format!(
            "{} (Cassandra {})",
            self.client.hosts.join(","),
            self.release.as_deref().unwrap_or("?")
        )
    }

    pub fn environment(&self) -> Environment {
        Environment {
            client_host: procfs::hostname(),
            cores: crate::cpus::count(),
            ram_bytes: procfs::total_ram(),
            kernel: procfs::kernel(),
            boot_id: procfs::boot_id(),
            cassandra_release_version: self.release.clone(),
            local_nodes: self
                .local_nodes
                .iter()
                .map(|n| {
                    let mut n = n.clone();
                    n.spec.overrides = n.spec.overrides.iter().map(|o| redact_setting(o)).collect();
                    n.spec.jvm_opts = n.spec.jvm_opts.iter().map(|o| redact_setting(o)).collect();
                    n.command = n.command.iter().map(|o| redact_setting(o)).collect();
                    n
                })
                .collect(),
            cluster_nodes: self.cql.as_ref().map(|s| s.get_cluster_state().get_nodes_info().len()),
        }
    }
}

/// A connected cluster.
pub struct Target {
    pub site: Site,
    pub session: Arc<Session>,
}

impl Target {
    pub async fn connect(client: ClientOptions, local_nodes: Vec<NodeState>) -> Result<Target> {
        let (session, retries) = client::connect(&client).await?;
        let session = Arc::new(session);
        let release = release_version(&session).await;
        Ok(Target {
            site: Site {
                client,
                local_nodes,
                release,
                retries,
                cql: Some(session.clone()),
            },
            session,
        })
    }
}

/// Where to send load: `hosts` (and the local nodes among them), else the running local
/// nodes, else a local node started now with `caplab node start`'s defaults. Given node options
/// (`LocalNode`), the local nodes' configuration with them: running nodes must match it, or are
/// restarted, or every node is wiped first, as they ask.
pub fn targets(home: &Home, hosts: &[String], node: &LocalNode) -> Result<(Vec<String>, Vec<NodeState>)> {
    if !hosts.is_empty() {
        // Local nodes named by --hosts are watched like any other local node.
        let named: Vec<NodeState> = local::nodes(home)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.liveness() == Liveness::Running)
            .filter(|n| {
                let addr = n.cql_addr();
                hosts.iter().any(|h| {
                    let h = h.trim();
                    h == addr.to_string() || (h == addr.ip().to_string() && addr.port() == 9042)
                })
            })
            .collect();
        return Ok((hosts.to_vec(), named));
    }
    let known = local::nodes(home)?;
    let spec = match known.iter().find(|n| n.index == 1) {
        _ if !node.given() => None,
        Some(n) => Some(node.spec(Some(&n.spec))?),
        None => Some(node.spec(None)?),
    };
    if node.wipe {
        say("--wipe: removing the local nodes and their data, then starting a fresh one");
        local::wipe(&known, true, &mut |m| say(m))?;
    }
    let running: Vec<NodeState> = local::nodes(home)?
        .into_iter()
        .filter(|n| n.liveness() == Liveness::Running)
        .collect();
    let spec = match spec {
        Some(spec) => spec,
        None if !running.is_empty() => {
            return Ok((running.iter().map(|n| n.cql_addr().to_string()).collect(), running));
        }
        None => {
            say("No --hosts and no local node running: starting one with 'caplab node start' defaults");
            node.spec(None)?
        }
    };
    let opts = StartOptions {
        restart: node.restart,
        timeout: None,
    };
    let started = local::start(home, &spec, opts, &mut |m| say(m))?;
    Ok((
        started.nodes.iter().map(|n| n.cql_addr().to_string()).collect(),
        started.nodes,
    ))
}

/// JMX endpoints to read Cassandra's GCInspector from, and their credentials.
#[derive(Debug, Clone, Default)]
pub struct JmxOptions {
    /// `host:port` each.
    pub endpoints: Vec<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub tls: Option<JmxTls>,
}

/// Where NodeTool and the per-second reader keep their files for `--jmx` endpoints: this
/// process's own directory under the temporary one, removed by `remove_jmx_workdir` when the
/// command ends.
pub fn jmx_workdir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("caplab-jmx-{}", std::process::id()))
}

/// Removes `jmx_workdir` (nothing in it outlives the command: what NodeTool printed is read).
pub fn remove_jmx_workdir() {
    let _ = std::fs::remove_dir_all(jmx_workdir());
}

/// NodeTool targets for the JMX endpoints, using the jars of the cluster's Cassandra version.
pub fn jmx_targets(home: &Home, jmx: &JmxOptions, release: Option<&str>) -> Result<Vec<JmxTarget>> {
    if jmx.endpoints.is_empty() {
        return Ok(Vec::new());
    }
    let Some(version) = release else {
        bail!(
            "--jmx: the cluster did not say its Cassandra version (system.local), so caplab cannot pick the nodetool to use"
        );
    };
    let classpath = local::nodetool_classpath(home, version, &mut |m| say(m))?;
    let java = crate::cluster::java::find(None, version)?.java;
    let workdir = jmx_workdir();
    jmx.endpoints
        .iter()
        .map(|e| {
            let (host, port) = e
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
                .with_context(|| format!("--jmx '{e}': write host:port, e.g. 10.0.0.1:7199"))?;
            Ok(JmxTarget {
                java: java.clone(),
                classpath: classpath.clone(),
                host,
                port,
                user: jmx.user.clone(),
                password: jmx.password.clone(),
                tls: jmx.tls.clone(),
                workdir: workdir.clone(),
            })
        })
        .collect()
}

async fn release_version(s: &Session) -> Option<String> {
    let r = s
        .query_unpaged("SELECT release_version FROM system.local", ())
        .await
        .ok()?;
    r.into_rows_result().ok()?.single_row::<(String,)>().ok().map(|r| r.0)
}
