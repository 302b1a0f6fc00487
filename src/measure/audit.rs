//! Whether the client was the limit (result.json `client`): caplab's own part in a run — its
//! operations per CPU-second, the time its runtime stalled and its thread waited for a CPU
//! (`engine::canary`), the operations a
//! free worker sent late, and the share of the slow operations named for it (`causes`) — and
//! the rule that calls a run client-bound, which the service level's verdict and a capacity
//! search heed: a failure that is the client's is not the cluster's.

use serde::{Deserialize, Serialize};

use super::causes::{Cause, Slow};
use crate::engine::RunEnd;
use crate::engine::canary::Stall;
use crate::telemetry::{ServerFacts, ServerSecond};

/// Client-bound when operations a free worker sent more than 10 ms late are at least this share
/// of those due: the client's own delay then reaches the p99.
pub const LATE_SHARE: f64 = 0.01;

/// …or when the client is named for at least this share of the operations over p99, of at
/// least `SLOW_MIN` matched.
pub const SLOW_SHARE: f64 = 0.5;
pub const SLOW_MIN: usize = 10;

/// A runtime stalled this share of the window or more has its delay in every percentile, the
/// median too: said so, though it is not called the limit (a saturated machine stalls the client
/// beside its server as much as a starved client does). Clean runs stalled 0.4–1.3 % of their
/// window, runs beside three to eight busy loops 4.5–8.6 % (bench/results/slow-causes.md).
pub const STALLED_SHARE: f64 = 0.03;

/// The rule, as result.json and the summary state it.
pub const RULE: &str = "client-bound when a free worker sent at least 1 % of the due operations more than 10 ms late (its own delay reaches the p99), or the client is named for at least half the operations over p99 (10 or more matched)";

/// result.json `client`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientAudit {
    /// Operations sent in the measured window per CPU-second caplab used (None when its CPU was
    /// not read).
    pub ops_per_cpu_s: Option<f64>,
    pub cpu_cores: f64,
    /// Its runtime's stalls in the window: how many, how long in all, and their share of it.
    pub stalls: usize,
    pub stalled_ms: f64,
    pub stalled_share: f64,
    /// The share of the window its runtime's thread waited for a CPU (ticks with 1 ms or more
    /// of it; None where the kernel keeps no schedstat, and in results from before it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_share: Option<f64>,
    /// Due operations a free worker sent more than 10 ms late, and their share.
    pub late_ops: u64,
    pub late_share: f64,
    /// The share of the operations over p99 named for the client (None: none matched).
    pub slow_share: Option<f64>,
    /// Whether the client was the limit (`RULE`), and why.
    pub bound: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    pub rule: String,
}

/// The audit of a run's measured window; None when nothing was measured.
pub fn audit(end: &RunEnd, server: &ServerFacts, slow: Option<&Slow>) -> Option<ClientAudit> {
    let span = end.measured?;
    let (from, to) = (span.from.as_nanos() as i64, span.to.as_nanos() as i64);
    let within: Vec<&Stall> = end
        .stalls
        .iter()
        .filter(|s| s.from_ns >= from && s.from_ns < to)
        .collect();
    let stalled_ms = within.iter().map(|s| (s.to_ns - s.from_ns) as f64 / 1e6).sum::<f64>();
    let window_ms = span.length().as_secs_f64() * 1e3;
    let waited_ms: f64 = end
        .waits
        .iter()
        .filter(|w| w.to_ns > from && w.to_ns <= to)
        .map(|w| w.waited_ns as f64 / 1e6)
        .sum();
    // No waits kept is a share of 0 where the kernel keeps schedstat, and unknown where not.
    let cpu_wait_share = crate::procfs::RunQueueWait::default()
        .read()
        .map(|_| waited_ms / window_ms.max(1e-9));
    let due: u64 = end.totals.iter().map(|t| t.response.len()).sum();
    let sent: u64 = end.totals.iter().map(|t| t.service.len()).sum();
    let late_ops: u64 = end.totals.iter().map(|t| t.client_late).sum();
    let late_share = late_ops as f64 / due.max(1) as f64;
    let cpu_s = server.client_cpu_cores * span.length().as_secs_f64();
    let slow_share = slow.filter(|s| s.matched > 0).map(|s| {
        s.by_cause
            .iter()
            .find(|c| c.cause == Cause::Client)
            .map_or(0.0, |c| c.share)
    });
    let matched = slow.map_or(0, |s| s.matched);
    let why = if late_share >= LATE_SHARE {
        Some(format!(
            "{:.2} % of the due operations were sent more than 10 ms late by a free worker",
            late_share * 100.0
        ))
    } else {
        slow_share
            .filter(|s| *s >= SLOW_SHARE && matched >= SLOW_MIN)
            .map(|s| format!("the client is named for {:.0} % of the operations over p99", s * 100.0))
    };
    Some(ClientAudit {
        ops_per_cpu_s: (cpu_s > 0.0).then(|| sent as f64 / cpu_s),
        cpu_cores: server.client_cpu_cores,
        stalls: within.len(),
        stalled_ms,
        stalled_share: stalled_ms / window_ms.max(1e-9),
        cpu_wait_share,
        late_ops,
        late_share,
        slow_share,
        bound: why.is_some(),
        why,
        rule: RULE.to_string(),
    })
}

/// The slow operations explained (`causes`), the client audited, each second's stalls added to
/// the server's timeline, and a failed service level (`sla`) marked as the client's when it was.
pub fn of_run(
    names: &[String],
    end: &RunEnd,
    server: &mut ServerFacts,
    faults: &[crate::faults::FaultRecord],
    started: std::time::SystemTime,
    sla: Option<&mut crate::sla::SlaVerdict>,
) -> (Option<Slow>, Option<ClientAudit>) {
    let slow = super::causes::of_run(names, end, server, faults, started);
    let t0_ms = started
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3);
    stalls_per_second(&mut server.timeline, &end.stalls, t0_ms);
    let client = audit(end, server, slow.as_ref());
    if let (Some(v), Some(a)) = (sla, &client)
        && !v.pass
    {
        v.client_bound = a.why.clone();
    }
    (slow, client)
}

/// Adds each second's stalls to the timeline (`client_stall_ms`): a second holds what of each
/// stall fell inside it. `t0_ms` is the run's start, epoch ms.
pub fn stalls_per_second(timeline: &mut [ServerSecond], stalls: &[Stall], t0_ms: f64) {
    for s in timeline.iter_mut() {
        let (to, from) = (s.at_ms as f64, s.at_ms as f64 - s.length_s * 1e3);
        s.client_stall_ms = stalls
            .iter()
            .map(|st| {
                let a = t0_ms + st.from_ns as f64 / 1e6;
                let b = t0_ms + st.to_ns as f64 / 1e6;
                (b.min(to) - a.max(from)).max(0.0)
            })
            .sum();
    }
}

impl ClientAudit {
    /// The summary line.
    pub fn render(&self) -> String {
        let per_cpu = self.ops_per_cpu_s.map_or("CPU not read".into(), |r| {
            format!("{} op/s per CPU-second", crate::console::group(r))
        });
        let slow = self.slow_share.map_or(String::new(), |s| {
            format!(", named for {:.0} % of the slow operations", s * 100.0)
        });
        let verdict = match &self.why {
            Some(why) => format!(
                "THE CLIENT WAS THE LIMIT ({why}): what failed is caplab's, not the cluster's; give caplab more CPU (--threads, --client-cpus) or more loaders"
            ),
            None if self.stalled_share >= STALLED_SHARE => format!(
                "not called the limit, but its runtime stalled {:.1} % of the window, so its own delay is in every percentile, the median too",
                self.stalled_share * 100.0
            ),
            None => "not the limit".into(),
        };
        let waited = self.cpu_wait_share.map_or(String::new(), |w| {
            format!(", waited for a CPU {:.2} % of it", w * 100.0)
        });
        format!(
            "Client (caplab)               : {per_cpu}, stalled {:.2} % of the window ({} stalls over 2 ms){waited}, {:.2} % sent late by a free worker{slow}: {verdict}",
            self.stalled_share * 100.0,
            self.stalls,
            self.late_share * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EndReason, Span};
    use crate::measure::causes::CauseShare;
    use crate::metrics::OpStats;
    use std::time::Duration;

    /// A 10 s window of 10,000 operations, `late` of them sent late by a free worker.
    fn end(late: u64, stalls: Vec<Stall>) -> RunEnd {
        let mut t = OpStats::default();
        for _ in 0..10_000 {
            t.response.record(1_000_000).unwrap();
            t.service.record(1_000_000).unwrap();
        }
        t.client_late = late;
        RunEnd {
            reason: EndReason::Completed,
            totals: vec![t],
            measured: Some(Span {
                from: Duration::from_secs(5),
                to: Duration::from_secs(15),
            }),
            started_ops: 10_000,
            abandoned: 0,
            settled: None,
            ops_file: None,
            slow: Default::default(),
            traced: Default::default(),
            stalls,
            waits: Vec::new(),
        }
    }

    fn server() -> ServerFacts {
        let mut s = ServerFacts::not_collected("");
        s.client_cpu_cores = 0.1;
        s
    }

    fn slow(client: f64, matched: usize) -> Slow {
        Slow {
            rule: String::new(),
            over_p99: matched as u64,
            matched,
            by_cause: vec![CauseShare {
                cause: Cause::Client,
                ops: client * matched as f64,
                share: client,
            }],
            slowest: Vec::new(),
            not_watched: Vec::new(),
        }
    }

    #[test]
    fn a_client_whose_own_lateness_reaches_the_p99_is_the_limit() {
        let a = audit(&end(100, Vec::new()), &server(), None).unwrap();
        assert!(a.bound && a.why.as_deref().unwrap().contains("1.00 %"), "{a:?}");
        assert_eq!(a.ops_per_cpu_s, Some(10_000.0), "10,000 sent on 1 CPU-second");
        let a = audit(&end(99, Vec::new()), &server(), None).unwrap();
        assert!(!a.bound, "{a:?}");
        assert!(a.render().ends_with("not the limit"), "{}", a.render());
        // Stalled 3 % of the 10 s window: said, not called the limit.
        let stalls = vec![Stall {
            from_ns: 6_000_000_000,
            to_ns: 6_300_000_000,
        }];
        let a = audit(&end(0, stalls), &server(), None).unwrap();
        assert!(
            !a.bound && a.render().contains("stalled 3.0 % of the window"),
            "{}",
            a.render()
        );
    }

    #[test]
    fn a_client_named_for_half_the_slow_operations_is_the_limit_when_there_are_enough() {
        let bound = |share: f64, matched: usize| {
            audit(&end(0, Vec::new()), &server(), Some(&slow(share, matched)))
                .unwrap()
                .bound
        };
        assert!(bound(0.5, 10));
        assert!(!bound(0.49, 100));
        assert!(!bound(1.0, 9), "nine operations say little");
    }

    #[test]
    fn stalls_in_the_window_are_counted_and_split_across_seconds() {
        let ms = |v: i64| v * 1_000_000;
        let stalls = vec![
            Stall {
                from_ns: ms(1_000),
                to_ns: ms(1_050),
            }, // in warm-up
            Stall {
                from_ns: ms(5_990),
                to_ns: ms(6_030),
            }, // across 6 s
        ];
        let a = audit(&end(0, stalls.clone()), &server(), None).unwrap();
        assert_eq!((a.stalls, a.stalled_ms), (1, 40.0));
        assert!((a.stalled_share - 0.004).abs() < 1e-12);
        let mut timeline: Vec<ServerSecond> = (6..=7)
            .map(|s| ServerSecond {
                at_ms: s * 1000,
                length_s: 1.0,
                ..Default::default()
            })
            .collect();
        stalls_per_second(&mut timeline, &stalls, 0.0);
        let got: Vec<f64> = timeline.iter().map(|s| s.client_stall_ms).collect();
        assert_eq!(got, [10.0, 30.0]);
    }
}
