//! The server's own account of slow operations (`--trace-slow RATE[,THRESHOLD]`). A fraction
//! of the measured operations is sent with Cassandra's tracing on (`engine::TraceSample`, the
//! statements' traced twins); those slower than the threshold keep their trace's id
//! (`metrics::slow`). After the window, off the workers' path, the slowest of them have their
//! trace read from system_traces (the session and its events) and each is told as where its
//! time went: outside the server (the client, the network, or a coordinator that had not yet
//! taken the request: a stopped JVM), waiting for a replica's reply, or inside the server.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use scylla::client::session::Session;
use scylla::errors::TracingError;
use serde::{Deserialize, Serialize};

use super::causes::Evidence;
use crate::engine::{RunEnd, TraceSample};
use crate::metrics::slow::SlowOp;

/// Why a workload that cannot trace refuses `--trace-slow`, and the fix.
pub const UNTRACED: &str =
    "cannot send its operations traced (E1's, a profile's and a replay's can): drop --trace-slow";

/// Traces read at most, the slowest operations first.
pub const READ_MOST: usize = 20;

/// Events kept of each trace, in time order.
const EVENTS_KEPT: usize = 60;

/// Rounds of reading the traces the server had not finished writing, and the wait before each.
const ROUNDS: usize = 4;
const ROUND_WAIT: Duration = Duration::from_millis(500);

/// The longest reading all the traces may take (a cluster that went away answers nothing).
const READ_FOR: Duration = Duration::from_secs(10);

/// How each traced operation is told, as result.json and the page say it.
pub const RULE: &str = "an operation is 'outside the server' when at least half its response time passed outside the \
     coordinator's traced session (response time less the session's duration: the client, the network, or a \
     coordinator not yet taking the request), 'waiting for a replica' when the longest gap between the \
     coordinator's events ends at a replica's reply and covers half the session, otherwise 'inside the server'";

/// What the traces of a run's slow operations say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Traces {
    /// The fraction of measured operations sent traced.
    pub fraction: f64,
    /// `--trace-slow`'s threshold in ms; None: each type's p99 over the window.
    pub threshold_ms: Option<f64>,
    /// Traced operations over the threshold (kept ones weighted by what their shard was offered).
    pub over: u64,
    /// Traces read, and those the server gave none for (not written, or expired).
    pub read: usize,
    pub unread: usize,
    /// Why the first unread one was not read, as the driver said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread_why: Option<String>,
    /// Of those read, how many were told each way.
    pub by_where: BTreeMap<Told, usize>,
    pub rule: String,
    /// The traced operations read, slowest first.
    pub ops: Vec<TracedOp>,
}

/// Where a traced operation's time went (`RULE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Told {
    /// Half its response or more passed outside the coordinator's session.
    Outside,
    /// The coordinator's longest step ended at a replica's reply and covered half the session.
    Replica,
    Server,
    /// The server gave no trace.
    Unread,
}

impl Told {
    /// As the summary says it.
    pub fn words(self) -> &'static str {
        match self {
            Told::Outside => "outside the server",
            Told::Replica => "waiting for a replica",
            Told::Server => "inside the server",
            Told::Unread => "not given",
        }
    }
}

/// One slow operation's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracedOp {
    pub operation: String,
    /// Its intended start, seconds into the measured window.
    pub at_s: f64,
    pub response_ms: f64,
    /// The trace's session id (system_traces.sessions).
    pub trace: String,
    pub coordinator: Option<String>,
    /// The coordinator's traced session, and the rest of the response time.
    pub server_ms: Option<f64>,
    pub outside_ms: Option<f64>,
    /// `outside`, `replica` or `server` (RULE), or `unread`.
    pub told: Told,
    /// Where its time went, in words.
    pub said: String,
    /// What the slow operations' matching names for it (`causes`), as for those over p99.
    pub cause: String,
    /// The events, in each node's elapsed time.
    pub events: Vec<TraceEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// Since the node began on the request.
    pub ms: f64,
    pub node: String,
    pub thread: String,
    pub activity: String,
}

/// A trace as the server gave it: the coordinator, the session's length, the events.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub coordinator: Option<IpAddr>,
    pub duration_us: Option<i32>,
    pub events: Vec<TraceEvent>,
}

/// Reads the traces of the slowest traced operations over the threshold and tells each, with
/// the cause the slow operations' matching names for it (`ev`).
pub async fn read(
    session: &Session,
    names: &[String],
    end: &RunEnd,
    sample: &TraceSample,
    ev: Option<&Evidence<'_>>,
) -> Traces {
    // Each type's threshold, once: the one asked, or its p99 over the window.
    let thresholds: Vec<u64> = end
        .totals
        .iter()
        .map(|t| {
            sample
                .threshold
                .map_or_else(|| t.response.value_at_quantile(0.99), |d| d.as_nanos() as u64)
        })
        .collect();
    let over = |o: &SlowOp| o.response_ns() as u64 > thresholds.get(o.op as usize).copied().unwrap_or(0);
    let mut slow: Vec<&SlowOp> = end.traced.ops.iter().filter(|o| o.trace.is_some() && over(o)).collect();
    let weight: f64 = slow.iter().map(|o| o.weight).sum();
    slow.sort_by_key(|o| std::cmp::Reverse(o.response_ns()));
    slow.truncate(READ_MOST);
    let mut given: Vec<Option<Given>> = vec![None; slow.len()];
    let mut why = None;
    let deadline = tokio::time::Instant::now() + READ_FOR;
    'rounds: for round in 0..ROUNDS {
        // The server writes a trace's events a moment after it answers.
        tokio::time::sleep(ROUND_WAIT).await;
        let mut waiting = false;
        for (o, g) in slow.iter().zip(given.iter_mut()).filter(|(_, g)| g.is_none()) {
            let id = o.trace.expect("traced");
            match tokio::time::timeout_at(deadline, session.get_tracing_info(&id)).await {
                Ok(Ok(info)) => *g = Some(of_info(info)),
                Ok(Err(TracingError::EmptyResults)) if round + 1 < ROUNDS => waiting = true,
                Ok(Err(e)) => {
                    why.get_or_insert_with(|| e.to_string());
                }
                Err(_) => {
                    why = Some(format!("reading the traces took over {} s", READ_FOR.as_secs()));
                    break 'rounds;
                }
            }
        }
        if !waiting {
            break;
        }
    }
    let from_s = end.measured.map_or(0.0, |s| s.from.as_secs_f64());
    let mut ops: Vec<TracedOp> = slow
        .iter()
        .zip(given)
        .map(|(o, g)| {
            tell(
                o,
                names.get(o.op as usize).map_or("?", |n| n.as_str()),
                from_s,
                g.as_ref(),
            )
        })
        .collect();
    if let Some(ev) = ev {
        let kept: Vec<SlowOp> = slow.iter().map(|o| **o).collect();
        for (t, cause) in ops.iter_mut().zip(super::causes::name_each(&end.totals, &kept, ev)) {
            t.cause = cause;
        }
    }
    let mut by_where = BTreeMap::new();
    for o in ops.iter().filter(|o| o.told != Told::Unread) {
        *by_where.entry(o.told).or_insert(0) += 1;
    }
    let read = ops.iter().filter(|o| o.told != Told::Unread).count();
    Traces {
        fraction: sample.fraction,
        threshold_ms: sample.threshold.map(|t| t.as_secs_f64() * 1e3),
        over: weight.round() as u64,
        read,
        unread: ops.len() - read,
        unread_why: why,
        by_where,
        rule: RULE.into(),
        ops,
    }
}

fn of_info(info: scylla::observability::tracing::TracingInfo) -> Given {
    let mut events: Vec<TraceEvent> = info
        .events
        .into_iter()
        .map(|e| TraceEvent {
            ms: e.source_elapsed.unwrap_or(0) as f64 / 1e3,
            node: e.source.map_or(String::new(), |s| s.to_string()),
            thread: e.thread.unwrap_or_default(),
            activity: e.activity.unwrap_or_default(),
        })
        .collect();
    events.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    Given {
        coordinator: info.coordinator,
        duration_us: info.duration,
        events,
    }
}

/// The node a reply came from, when `activity` says one was received ("MUTATION_RSP message
/// received from /127.0.0.2:7000").
fn reply_from(activity: &str) -> Option<&str> {
    let rest = &activity[activity.find("received from ")? + "received from ".len()..];
    let addr = rest.split_whitespace().next()?.trim_start_matches('/');
    Some(addr.rsplit_once(':').map_or(addr, |(host, _)| host))
}

/// Operation `o` (of type `name`) told from its trace, when the server gave one; `from_s` is
/// where the measured window starts (seconds after the run's start).
pub fn tell(o: &SlowOp, name: &str, from_s: f64, given: Option<&Given>) -> TracedOp {
    let response_ms = o.response_ns() as f64 / 1e6;
    let mut t = TracedOp {
        operation: name.to_string(),
        at_s: o.intended_ns as f64 / 1e9 - from_s,
        response_ms,
        trace: o.trace.map_or(String::new(), |u| u.to_string()),
        coordinator: None,
        server_ms: None,
        outside_ms: None,
        told: Told::Unread,
        said: "the server gave no trace (not yet written, or expired)".into(),
        cause: String::new(),
        events: Vec::new(),
    };
    let Some(g) = given else { return t };
    let coordinator = g.coordinator.map(|c| c.to_string());
    let server_ms = g.duration_us.unwrap_or(0) as f64 / 1e3;
    let outside = (response_ms - server_ms).max(0.0);
    // The coordinator's longest step, from the session's start through its events to the
    // answer, and what ended it.
    let start = TraceEvent {
        ms: 0.0,
        node: String::new(),
        thread: String::new(),
        activity: "the session's start".into(),
    };
    let answer = TraceEvent {
        ms: server_ms,
        activity: "the answer".into(),
        ..start.clone()
    };
    let mine: Vec<&TraceEvent> = std::iter::once(&start)
        .chain(g.events.iter().filter(|e| Some(&e.node) == coordinator.as_ref()))
        .chain(std::iter::once(&answer))
        .collect();
    let gap = mine
        .windows(2)
        .map(|w| (w[1].ms - w[0].ms, w[0], w[1]))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    (t.told, t.said) = if outside >= 0.5 * response_ms {
        (
            Told::Outside,
            format!("{outside:.1} of {response_ms:.1} ms outside the coordinator's session ({server_ms:.1} ms)"),
        )
    } else {
        match gap {
            Some((ms, _, after)) if ms >= 0.5 * server_ms && reply_from(&after.activity).is_some() => (
                Told::Replica,
                format!(
                    "{ms:.1} of {server_ms:.1} ms in the server waiting for {}'s reply",
                    reply_from(&after.activity).unwrap_or("?")
                ),
            ),
            Some((ms, before, after)) => (
                Told::Server,
                format!(
                    "{server_ms:.1} ms in the server; its longest step {ms:.1} ms, from '{}' to '{}'",
                    before.activity, after.activity
                ),
            ),
            None => (Told::Server, format!("{server_ms:.1} ms in the server")),
        }
    };
    t.coordinator = coordinator;
    t.server_ms = Some(server_ms);
    t.outside_ms = Some(outside);
    t.events = g.events.iter().take(EVENTS_KEPT).cloned().collect();
    t
}

impl Traces {
    /// The summary's lines: how the traces were told, then the slowest few.
    pub fn render(&self) -> String {
        let threshold = self.threshold_ms.map_or("p99".to_string(), |t| format!("{t} ms"));
        let told: Vec<String> = self
            .by_where
            .iter()
            .map(|(w, n)| format!("{} {n}", w.words()))
            .collect();
        let mut o = format!(
            "Traced slow operations        : {:.2} % sent traced, {} over {threshold}, {} traces read{}: {}",
            self.fraction * 100.0,
            self.over,
            self.read,
            match (self.unread, &self.unread_why) {
                (0, _) => String::new(),
                (n, Some(why)) => format!(" ({n} not given: {why})"),
                (n, None) => format!(" ({n} not given)"),
            },
            if told.is_empty() {
                "none".into()
            } else {
                told.join(", ")
            }
        );
        for t in self.ops.iter().take(3) {
            o.push_str(&format!(
                "\n  {:.1} ms {} at {:.1} s, coordinator {}: {}{}",
                t.response_ms,
                t.operation,
                t.at_s,
                t.coordinator.as_deref().unwrap_or("?"),
                t.said,
                if t.cause.is_empty() {
                    String::new()
                } else {
                    format!("; {}", t.cause)
                }
            ));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(response_ms: f64) -> SlowOp {
        SlowOp {
            op: 0,
            intended_ns: 2_000_000_000,
            from_ns: 2_000_000_000,
            sent_ns: Some(2_000_000_000),
            done_ns: 2_000_000_000 + (response_ms * 1e6) as i64,
            error: false,
            waited: true,
            weight: 1.0,
            trace: Some(uuid::Uuid::from_u128(7)),
        }
    }

    fn ev(ms: f64, node: &str, activity: &str) -> TraceEvent {
        TraceEvent {
            ms,
            node: node.into(),
            thread: "Native-Transport-Requests-1".into(),
            activity: activity.into(),
        }
    }

    fn given(duration_ms: f64, events: Vec<TraceEvent>) -> Given {
        Given {
            coordinator: Some("127.0.0.1".parse().unwrap()),
            duration_us: Some((duration_ms * 1e3) as i32),
            events,
        }
    }

    #[test]
    fn a_response_mostly_outside_the_session_is_told_outside() {
        let g = given(
            1.0,
            vec![
                ev(0.1, "127.0.0.1", "Parsing"),
                ev(0.9, "127.0.0.1", "Appending to commitlog"),
            ],
        );
        let t = tell(&op(200.0), "insert", 0.0, Some(&g));
        assert_eq!(t.told, Told::Outside);
        assert!(t.said.starts_with("199.0 of 200.0 ms outside"), "{}", t.said);
        assert_eq!((t.server_ms, t.outside_ms), (Some(1.0), Some(199.0)));
    }

    #[test]
    fn a_late_reply_is_told_as_waiting_for_that_replica() {
        let g = given(
            120.0,
            vec![
                ev(
                    0.2,
                    "127.0.0.1",
                    "Sending MUTATION_REQ message to /127.0.0.3:7000 message size 90 bytes",
                ),
                ev(1.0, "127.0.0.1", "MUTATION_RSP message received from /127.0.0.2:7000"),
                ev(0.3, "127.0.0.3", "MUTATION_REQ message received from /127.0.0.1:7000"),
                ev(118.0, "127.0.0.1", "MUTATION_RSP message received from /127.0.0.3:7000"),
                ev(118.5, "127.0.0.1", "Processing response from /127.0.0.3:7000"),
            ],
        );
        let mut g = g;
        g.events.sort_by(|a, b| a.ms.total_cmp(&b.ms));
        let t = tell(&op(125.0), "insert", 0.0, Some(&g));
        assert_eq!(t.told, Told::Replica, "{}", t.said);
        assert!(t.said.contains("waiting for 127.0.0.3's reply"), "{}", t.said);
        assert!(t.said.starts_with("117.0 of 120.0 ms"), "{}", t.said);
    }

    #[test]
    fn a_long_step_of_the_coordinator_itself_is_told_inside_the_server() {
        let g = given(
            50.0,
            vec![
                ev(0.1, "127.0.0.1", "Parsing"),
                ev(48.0, "127.0.0.1", "Adding to e1_insert memtable"),
            ],
        );
        let t = tell(&op(52.0), "insert", 0.0, Some(&g));
        assert_eq!(t.told, Told::Server);
        assert!(
            t.said.contains("from 'Parsing' to 'Adding to e1_insert memtable'"),
            "{}",
            t.said
        );
    }

    /// A session that waited before its first event (a queue in front of the coordinator's
    /// stage) has that wait as its longest step.
    #[test]
    fn the_wait_before_the_first_event_is_a_step() {
        let g = given(12.0, vec![ev(9.0, "127.0.0.1", "Determining replicas for mutation")]);
        let t = tell(&op(13.0), "insert", 0.0, Some(&g));
        assert_eq!(t.told, Told::Server);
        assert!(
            t.said
                .contains("longest step 9.0 ms, from 'the session's start' to 'Determining"),
            "{}",
            t.said
        );
    }

    #[test]
    fn no_trace_is_said_as_such() {
        let t = tell(&op(30.0), "insert", 0.0, None);
        assert_eq!((t.told, t.server_ms), (Told::Unread, None));
        assert_eq!(t.trace, uuid::Uuid::from_u128(7).to_string());
    }

    #[test]
    fn replies_name_their_node_without_its_port() {
        assert_eq!(
            reply_from("READ_RSP message received from /10.0.0.7:7000"),
            Some("10.0.0.7")
        );
        assert_eq!(reply_from("Appending to commitlog"), None);
    }
}
