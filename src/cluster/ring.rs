//! Waiting until a new multi-node cluster is one ring: every node serves CQL early, but a
//! client connecting through node A only learns of node B once A has B's tokens and address
//! through gossip. `start` returns when every node's view (as a driver sees it) holds every
//! node, so the first run against a fresh cluster spreads load over all of it; and a cluster it
//! created returns when every node's failure detector (`nodetool status`) holds every node Up
//! and Normal, so a first read at ALL finds every replica alive. A node started again in a
//! running cluster (a fault undone) is not waited for so: its peers mark it up through gossip
//! while the run measures, which is part of what a fault's recovery shows, and a NodeTool JVM
//! for each node every second would take the machine from the run.

use anyhow::{Result, bail};
use scylla::client::session_builder::SessionBuilder;
use std::time::{Duration, Instant};

use super::node::NodeState;
use super::nodetool;

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

/// Returns when every node sees all of `nodes` (and, for a cluster just created, sees them all
/// Up and Normal), or fails after `timeout` naming who is missing.
pub fn wait_for_ring(nodes: &[NodeState], created: bool, timeout: Duration, say: &mut dyn FnMut(&str)) -> Result<()> {
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
            if !created {
                return Ok(());
            }
            let left = timeout.saturating_sub(begin.elapsed()).max(Duration::from_secs(30));
            return wait_for_up(nodes, left, say);
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

/// The nodes `nodetool status` on `node` shows other than Up and Normal, as "STATE address".
fn not_up(node: &NodeState) -> Result<Vec<String>> {
    let text = nodetool::run(node, &["status"], Duration::from_secs(60))?;
    Ok(statuses(&text)
        .into_iter()
        .filter(|(state, _)| state != "UN")
        .map(|(state, addr)| format!("{state} {addr}"))
        .collect())
}

/// (state, address) of every node line of `nodetool status` (`UN  127.0.0.1  104 KiB  16 …`).
fn statuses(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (state, addr) = (words.next()?, words.next()?);
            let valid =
                state.len() == 2 && matches!(&state[..1], "U" | "D") && matches!(&state[1..], "N" | "L" | "J" | "M");
            valid.then(|| (state.to_string(), addr.to_string()))
        })
        .collect()
}

/// Returns when every node's `nodetool status` shows all of `nodes` Up and Normal, or fails after
/// `timeout` naming who sees whom otherwise. A node nodetool cannot reach (JMX with a password)
/// is not checked, and says so.
fn wait_for_up(nodes: &[NodeState], timeout: Duration, say: &mut dyn FnMut(&str)) -> Result<()> {
    let begin = Instant::now();
    let mut told = false;
    loop {
        let mut short = Vec::new();
        for n in nodes {
            match not_up(n) {
                Ok(down) if down.is_empty() => {}
                Ok(down) => short.push(format!("{} sees {}", n.name, down.join(", "))),
                Err(e) => say(&format!("Could not ask {} which nodes it sees up ({e:#})", n.name)),
            }
        }
        if short.is_empty() {
            return Ok(());
        }
        if begin.elapsed() > timeout {
            bail!(
                "the nodes see each other but not all as Up and Normal after {}s: {}. A node's failure detector \
                 has not marked the others alive; see each node's system.log ('caplab node logs NAME'), or stop \
                 and start the cluster again",
                timeout.as_secs(),
                short.join("; ")
            );
        }
        if !told {
            say(&format!(
                "Waiting for every node to see the others up ({})",
                short.join("; ")
            ));
            told = true;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodetool_status_lines_give_each_nodes_state() {
        let text = "Datacenter: datacenter1\n=======================\nStatus=Up/Down\n\
                    |/ State=Normal/Leaving/Joining/Moving\n\
                    --  Address     Load        Tokens  Owns (effective)  Host ID  Rack\n\
                    UN  127.0.27.1  104.5 KiB   16      100.0%            a1b2     rack1\n\
                    DN  127.0.27.2  98 KiB      16      100.0%            c3d4     rack1\n\
                    UJ  127.0.27.3  12 KiB      16      ?                 e5f6     rack1\n";
        let seen = statuses(text);
        assert_eq!(
            seen,
            [("UN", "127.0.27.1"), ("DN", "127.0.27.2"), ("UJ", "127.0.27.3")]
                .map(|(s, a)| (s.to_string(), a.to_string()))
        );
    }
}
