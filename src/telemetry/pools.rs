//! Server facts any cluster gives over CQL, local or not: each node's thread pools
//! (`system_views.thread_pools`: active, pending, blocked and completed tasks, Cassandra 4.0+)
//! and its internode messages dropped as expired (`system_views.internode_inbound` and
//! `internode_outbound`; Cassandra 5.0 has no dropped-messages table). Read once a second from
//! every node the driver knows, each query sent to that node alone (virtual tables are
//! node-local), on a task of the client's runtime. Pending tasks are the first sign of
//! overload: a stage that cannot keep up queues before latency shows it.

use scylla::client::session::Session;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::gclog::epoch_ms;

/// One second of the cluster's thread pools: every node's added up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolSecond {
    /// Epoch milliseconds when it was read.
    pub at_ms: u64,
    /// Nodes that answered.
    pub nodes: usize,
    pub active: u64,
    pub pending: u64,
    pub blocked: u64,
    /// Tasks completed per second since the previous reading (None for the first).
    pub completed_per_s: Option<f64>,
    /// Internode messages dropped as expired, per second since the previous reading.
    pub dropped_per_s: Option<f64>,
    /// Pending tasks of each pool that had any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending_by_pool: BTreeMap<String, u64>,
}

/// `server.pools` in result.json: the thread pools over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolFacts {
    pub source: String,
    /// Why nothing was read, when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_collected: Option<String>,
    /// The most tasks pending in any second, all nodes, and per pool.
    pub max_pending: u64,
    pub max_pending_by_pool: BTreeMap<String, u64>,
    pub max_active: u64,
    pub max_blocked: u64,
    /// Internode messages dropped as expired over the window.
    pub dropped: f64,
    pub timeline: Vec<PoolSecond>,
}

impl PoolFacts {
    pub fn render(&self) -> String {
        if let Some(why) = &self.not_collected {
            return format!("Thread pools                  : not collected ({why})");
        }
        let top: Vec<String> = {
            let mut by: Vec<(&String, &u64)> = self.max_pending_by_pool.iter().collect();
            by.sort_by(|a, b| b.1.cmp(a.1));
            by.iter().take(3).map(|(p, n)| format!("{p} {n}")).collect()
        };
        format!(
            "Thread pools, most pending    : {:>12}{} (system_views, all nodes; most active {}, blocked {})\n\
             Dropped internode messages    : {:>12}",
            self.max_pending,
            if top.is_empty() {
                String::new()
            } else {
                format!(" ({})", top.join(", "))
            },
            self.max_active,
            self.max_blocked,
            self.dropped.round() as u64
        )
    }
}

/// Reads the cluster's thread pools once a second until finished.
pub struct PoolWatch {
    seconds: Arc<Mutex<Vec<PoolSecond>>>,
    error: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

/// One node's reading: its pools, and its cumulative counters.
#[derive(Default)]
struct Reading {
    pools: Vec<(String, u64, u64, u64)>,
    completed: u64,
    dropped: u64,
}

impl PoolWatch {
    /// Starts reading, at `first` and each `every` after it (so readings sit in the same
    /// seconds as the intervals).
    pub fn start(session: Arc<Session>, first: SystemTime, every: Duration) -> PoolWatch {
        let seconds = Arc::new(Mutex::new(Vec::new()));
        let error = Arc::new(Mutex::new(None));
        let (s, e) = (seconds.clone(), error.clone());
        let task = tokio::spawn(async move {
            let mut previous: Option<(SystemTime, u64, u64)> = None;
            let wait = first.duration_since(SystemTime::now()).unwrap_or_default();
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + wait, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let now = SystemTime::now();
                match read_all(&session).await {
                    Ok(readings) if !readings.is_empty() => {
                        let second = sum(now, &readings, &mut previous);
                        s.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(second);
                    }
                    Ok(_) => {}
                    Err(why) => {
                        *e.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
                        return;
                    }
                }
            }
        });
        PoolWatch { seconds, error, task }
    }

    /// Stops reading; the report of the seconds in `[from, to]` (epoch ms).
    pub fn finish(self, from_ms: u64, to_ms: u64) -> PoolFacts {
        self.task.abort();
        let seconds = std::mem::take(&mut *self.seconds.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        let error = self
            .error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        report(seconds, error, from_ms, to_ms)
    }
}

fn report(seconds: Vec<PoolSecond>, error: Option<String>, from_ms: u64, to_ms: u64) -> PoolFacts {
    let timeline: Vec<PoolSecond> = seconds
        .into_iter()
        .filter(|s| s.at_ms >= from_ms && s.at_ms <= to_ms)
        .collect();
    let mut r = PoolFacts {
        source: "system_views.thread_pools, internode_inbound and internode_outbound over CQL, every node, each second"
            .into(),
        not_collected: (timeline.is_empty())
            .then(|| error.unwrap_or_else(|| "no reading in the measured window".into())),
        ..PoolFacts::default()
    };
    for s in &timeline {
        r.max_pending = r.max_pending.max(s.pending);
        r.max_active = r.max_active.max(s.active);
        r.max_blocked = r.max_blocked.max(s.blocked);
        for (p, n) in &s.pending_by_pool {
            let m = r.max_pending_by_pool.entry(p.clone()).or_insert(0);
            *m = (*m).max(*n);
        }
    }
    // Dropped messages between readings: each reading's rate over the gap before it.
    for w in timeline.windows(2) {
        if let Some(rate) = w[1].dropped_per_s {
            r.dropped += rate * (w[1].at_ms - w[0].at_ms) as f64 / 1e3;
        }
    }
    r.timeline = timeline;
    r
}

/// Adds up the nodes' readings into one second; rates from `previous` (time, completed,
/// dropped), which it then replaces.
fn sum(now: SystemTime, readings: &[Reading], previous: &mut Option<(SystemTime, u64, u64)>) -> PoolSecond {
    let mut s = PoolSecond {
        at_ms: epoch_ms(now),
        nodes: readings.len(),
        ..PoolSecond::default()
    };
    let (mut completed, mut dropped) = (0, 0);
    for r in readings {
        for (name, active, pending, blocked) in &r.pools {
            s.active += active;
            s.pending += pending;
            s.blocked += blocked;
            if *pending > 0 {
                *s.pending_by_pool.entry(name.clone()).or_insert(0) += pending;
            }
        }
        completed += r.completed;
        dropped += r.dropped;
    }
    if let Some((at, c, d)) = *previous {
        let secs = now.duration_since(at).unwrap_or_default().as_secs_f64().max(1e-3);
        s.completed_per_s = Some(completed.saturating_sub(c) as f64 / secs);
        s.dropped_per_s = Some(dropped.saturating_sub(d) as f64 / secs);
    }
    *previous = Some((now, completed, dropped));
    s
}

/// Every known node's reading (nodes that did not answer in time are left out). An error
/// when the cluster has no such tables (Cassandra before 4.0).
async fn read_all(session: &Arc<Session>) -> Result<Vec<Reading>, String> {
    let nodes = session.get_cluster_state().get_nodes_info().to_vec();
    let mut set = tokio::task::JoinSet::new();
    for node in nodes {
        let session = session.clone();
        set.spawn(async move { tokio::time::timeout(Duration::from_millis(800), read_node(&session, node)).await });
    }
    let mut out = Vec::new();
    while let Some(done) = set.join_next().await {
        match done {
            Ok(Ok(Ok(r))) => out.push(r),
            Ok(Ok(Err(e))) if e.contains("thread_pools") && e.to_lowercase().contains("unconfigured") => {
                return Err(format!(
                    "the cluster has no system_views.thread_pools (Cassandra 4.0 or later has): {e}"
                ));
            }
            _ => {}
        }
    }
    Ok(out)
}

async fn read_node(session: &Session, node: Arc<scylla::cluster::Node>) -> Result<Reading, String> {
    let to_node = |cql: &str| {
        let mut st = Statement::new(cql);
        st.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::Node(node.clone()),
            None,
        )));
        st
    };
    let rows = session
        .query_unpaged(
            to_node("SELECT name, active_tasks, pending_tasks, blocked_tasks, completed_tasks FROM system_views.thread_pools"),
            (),
        )
        .await
        .map_err(|e| format!("system_views.thread_pools: {e}"))?
        .into_rows_result()
        .map_err(|e| e.to_string())?;
    let mut reading = Reading::default();
    for row in rows
        .rows::<(String, Option<i32>, Option<i32>, Option<i64>, Option<i64>)>()
        .map_err(|e| e.to_string())?
    {
        let (name, active, pending, blocked, completed) = row.map_err(|e| e.to_string())?;
        let n = |v: Option<i64>| v.unwrap_or(0).max(0) as u64;
        reading
            .pools
            .push((name, n(active.map(i64::from)), n(pending.map(i64::from)), n(blocked)));
        reading.completed += n(completed);
    }
    for table in ["internode_inbound", "internode_outbound"] {
        // Absent or unreadable on some versions: dropped messages are then not counted.
        if let Ok(r) = session
            .query_unpaged(to_node(&format!("SELECT expired_count FROM system_views.{table}")), ())
            .await
            && let Ok(rows) = r.into_rows_result()
            && let Ok(iter) = rows.rows::<(Option<i64>,)>()
        {
            reading.dropped += iter.flatten().map(|(n,)| n.unwrap_or(0).max(0) as u64).sum::<u64>();
        }
    }
    Ok(reading)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pools: &[(&str, u64, u64, u64)], completed: u64, dropped: u64) -> Reading {
        Reading {
            pools: pools.iter().map(|(n, a, p, b)| (n.to_string(), *a, *p, *b)).collect(),
            completed,
            dropped,
        }
    }

    #[test]
    fn nodes_add_up_rates_come_from_the_previous_reading_and_the_window_is_cut() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let mut prev = None;
        let first = sum(
            t0,
            &[
                reading(&[("MutationStage", 2, 5, 0)], 100, 0),
                reading(&[("ReadStage", 1, 0, 0)], 50, 0),
            ],
            &mut prev,
        );
        assert_eq!((first.active, first.pending, first.nodes), (3, 5, 2));
        assert_eq!(first.completed_per_s, None);
        assert_eq!(first.pending_by_pool, BTreeMap::from([("MutationStage".into(), 5)]));
        let second = sum(
            t0 + Duration::from_secs(2),
            &[
                reading(&[("MutationStage", 4, 9, 1)], 2_100, 10),
                reading(&[("ReadStage", 0, 3, 0)], 50, 0),
            ],
            &mut prev,
        );
        assert_eq!(second.completed_per_s, Some(1_000.0));
        assert_eq!(second.dropped_per_s, Some(5.0));
        assert_eq!((second.pending, second.blocked), (12, 1));
        let r = report(vec![first, second.clone()], None, 1_000_500, 1_003_000);
        assert_eq!(r.timeline, vec![second]);
        assert_eq!((r.max_pending, r.max_blocked, r.max_active), (12, 1, 4));
        assert_eq!(r.max_pending_by_pool["ReadStage"], 3);
        assert!(
            r.render().contains("12 (MutationStage 9, ReadStage 3)"),
            "{}",
            r.render()
        );
        let none = report(Vec::new(), Some("no tables".into()), 0, 1);
        assert_eq!(none.not_collected.as_deref(), Some("no tables"));
    }
}
