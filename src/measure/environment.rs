//! Where a run ran: the client's host and boot, the cluster's release and size, and the local
//! nodes the load went to.

use serde::{Deserialize, Serialize};

use crate::cluster::node::NodeState;

/// Where the step ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub client_host: String,
    pub cores: usize,
    pub ram_bytes: u64,
    pub kernel: String,
    /// The client host's boot (new at every boot; absent from results written before it was
    /// kept): with the host and the day, the sitting the history files the result under.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub boot_id: String,
    pub cassandra_release_version: Option<String>,
    /// The local nodes the load went to (their configuration, logs and process).
    pub local_nodes: Vec<NodeState>,
    /// The cluster's nodes as the driver saw them at the start, however few were named as
    /// contact points (absent without a connection, and from results written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_nodes: Option<usize>,
}

impl Environment {
    /// The nodes of the cluster measured: as the driver saw them, else (results written before
    /// that was kept) the local nodes the load went to, else the contact points given.
    pub fn nodes(&self, contact_points: usize) -> usize {
        nodes_of(self.cluster_nodes, self.local_nodes.len(), contact_points)
    }
}

fn nodes_of(cluster: Option<usize>, local: usize, contact_points: usize) -> usize {
    match (cluster, local) {
        (Some(n), _) => n,
        (None, 0) => contact_points,
        (None, local) => local,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_counts_every_node_the_driver_saw_however_few_were_named() {
        // One local node of three named by --hosts: the cluster is three.
        assert_eq!(nodes_of(Some(3), 1, 1), 3);
        // Written before the driver's count was kept: the local nodes, else the contact points.
        assert_eq!(nodes_of(None, 1, 3), 1);
        assert_eq!(nodes_of(None, 0, 3), 3);
    }

    #[test]
    fn an_environment_written_before_the_count_was_kept_reads_without_it() {
        let e: Environment = serde_json::from_value(serde_json::json!({
            "client_host": "h", "cores": 2, "ram_bytes": 0, "kernel": "k",
            "cassandra_release_version": null, "local_nodes": []
        }))
        .unwrap();
        assert_eq!((e.cluster_nodes, e.nodes(2)), (None, 2));
    }
}
