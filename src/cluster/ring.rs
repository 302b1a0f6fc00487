//! Waiting until a new multi-node cluster is one ring: every node serves CQL early, but a
//! client connecting through node A only learns of node B once A has B's tokens and address
//! through gossip. `start` returns when every node's view (as a driver sees it) holds every
//! node, so the first run against a fresh cluster spreads load over all of it.

use anyhow::{Result, bail};
use scylla::client::session_builder::SessionBuilder;
use std::time::{Duration, Instant};

use super::node::NodeState;

/// Nodes each node's view holds, as (node name, count); None when the node cannot be asked
/// over plain CQL (e.g. it requires TLS).
async fn views(nodes: &[NodeState]) -> Vec<(String, Option<usize>)> {
    let mut out = Vec::new();
    for n in nodes {
        let session = SessionBuilder::new()
            .known_node_addr(n.cql_addr())
            .connection_timeout(Duration::from_secs(3))
            .build()
            .await;
        out.push((
            n.name.clone(),
            session.ok().map(|s| s.get_cluster_state().get_nodes_info().len()),
        ));
    }
    out
}

/// Returns when every node sees all of `nodes`, or fails after `timeout` naming who is missing.
pub fn wait_for_ring(nodes: &[NodeState], timeout: Duration, say: &mut dyn FnMut(&str)) -> Result<()> {
    if nodes.len() < 2 {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let want = nodes.len();
    let begin = Instant::now();
    let mut told = false;
    loop {
        let seen = rt.block_on(views(nodes));
        let short: Vec<String> = seen
            .iter()
            .filter_map(|(name, n)| match n {
                Some(n) if *n < want => Some(format!("{name} sees {n} of {want}")),
                _ => None,
            })
            .collect();
        if short.is_empty() {
            if seen.iter().any(|(_, n)| n.is_none()) {
                say("Could not check every node's view of the ring over plain CQL (TLS required?)");
            }
            return Ok(());
        }
        if begin.elapsed() > timeout {
            bail!(
                "the nodes serve CQL but have not formed one ring after {}s: {}. Gossip between them may be blocked \
                 or slow; see each node's system.log ('caplab node logs NAME')",
                timeout.as_secs(),
                short.join(", ")
            );
        }
        if !told {
            say(&format!(
                "Waiting for the nodes to see each other ({})",
                short.join(", ")
            ));
            told = true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
