//! Whether the client was the limit (result.json `client`): caplab's own part in a run — its
//! operations per CPU-second, the time its runtime stalled and its thread waited for a CPU
//! (`engine::canary`), the operations a free worker sent late, and the share of the slow
//! operations named for it (`causes`) — and the rule that tells three states apart (`Limit`):
//! the client was the limit (starved by other processes, or its runtime could not keep the
//! schedule, bursts included); the machine was (the client and its nodes share cores and the
//! nodes took them); or neither. When a service level failed, the client is judged on the
//! operations that failed it (`failing`), not on those over the run's p99: a failure is the
//! client's only when the client made every failing window fail, and only then do the service
//! level's verdict and a capacity search excuse it.

use serde::{Deserialize, Serialize};

use super::causes::{Cause, Slow};
use super::failing::Failing;
use crate::engine::RunEnd;
use crate::engine::canary::Stall;
use crate::telemetry::machine::{DISTURBED_CORES, MachineFacts};
use crate::telemetry::{ServerFacts, ServerSecond};

/// The client's sign when operations a free worker sent more than 10 ms late are at least this
/// share of those due: the client's own delay then reaches the p99.
pub const LATE_SHARE: f64 = 0.01;

/// …or when the client is named for at least this share of the operations judged (those over
/// p99, or those that failed the service level), of at least `SLOW_MIN` matched.
pub const SLOW_SHARE: f64 = 0.5;
pub const SLOW_MIN: usize = 10;

/// Without a failed service level, the operations over p99 say who limited the run only when
/// the p99 is at least this far above the median (ms): a tail within a few milliseconds of the
/// median is nobody's limit. A bursty replay whose p99 was a few ms above its median had the
/// client named for most of its slow operations, and a second client thread did not move its p99
/// (bench/results/client-bound.md, bursty-replay); README's first run, its p99 more than 10 ms
/// above its median, is judged.
pub const MATERIAL_MS: f64 = 10.0;

/// A runtime stalled this share of the window or more has its delay in every percentile, the
/// median too: said so, though it is not called the limit (a saturated machine stalls the client
/// beside its server as much as a starved client does). Clean runs stalled 0.4–1.3 % of their
/// window, runs beside three to eight busy loops 4.5–8.6 % (bench/results/slow-causes.md).
pub const STALLED_SHARE: f64 = 0.03;

/// Other processes took at least `DISTURBED_CORES` of the client's cores and its runtime stalled
/// at least `STALLED_SHARE` of the window: starved, whatever the tail's shape. At 2,000 op/s
/// beside three busy loops on its core the runtime stalled 8.0–8.6 % of the window (clean runs
/// 0.4–1.3 %) with the p99 10.8–14.6 ms against 2.7–6.1 ms alone, where the other signs named it
/// in one run of five (bench/results/client-bound.md, starved-verdict).
fn starved(server: &ServerFacts, stalled_share: f64) -> Option<f64> {
    let other = server.machine.as_ref()?.other_cpu_cores;
    (other >= DISTURBED_CORES && stalled_share >= STALLED_SHARE).then_some(other)
}

/// The machine was the limit when the client showed its sign, shared its cores with its nodes,
/// other processes took less than `DISTURBED_CORES` of them, and the cores were this busy
/// (share of them) or the client's thread waited for a CPU `MACHINE_WAIT` of the window: the
/// nodes took what the client needed. The README's first run, flat out on two cores, had them
/// 93 % busy with the client waiting 46 % of the window (bench/results/client-bound.md,
/// three-states).
pub const MACHINE_BUSY: f64 = 0.85;
pub const MACHINE_WAIT: f64 = 0.05;

/// The rule, as result.json and the summary state it.
pub const RULE: &str = "the client shows its sign when a free worker sent at least 1 % of the due operations more than 10 ms late, or its runtime stalled at least 3 % of the window while other processes used 0.25 cores or more of its cores, or it is named for at least half the operations judged (10 or more matched): those that failed the service level when it failed, else those over p99 when the p99 is at least 10 ms above the median. With the sign, the machine was the limit when client and nodes share cores, other processes took under 0.25 cores of them, and the cores were at least 85 % busy or the client waited for a CPU at least 5 % of the window; else the client was (starved by other processes, or its runtime could not keep the schedule). A failed service level is the client's only when the client made every failing window fail";

/// What limited a run, as far as the client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// caplab: starved of CPU by other processes, or its runtime could not keep the schedule.
    Client,
    /// The machine: client and nodes on the same cores, the nodes taking what the client needed.
    Machine,
    /// Neither: the client kept its schedule (the cluster, or nothing, was the limit).
    #[default]
    Neither,
}

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
    /// The operations that failed the service level and the client's part in them (a failed
    /// service level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<Failing>,
    /// What limited the run (`RULE`), why, and what to do about it.
    #[serde(default)]
    pub limit: Limit,
    /// Whether the client was the limit (`limit` is `client`).
    pub bound: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    pub rule: String,
}

/// The audit of a run's measured window; None when nothing was measured. `failing`: the
/// operations that failed its service level, when it failed.
pub fn audit(end: &RunEnd, server: &ServerFacts, slow: Option<&Slow>, failing: Option<Failing>) -> Option<ClientAudit> {
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
    let material = tail_ms(end) >= MATERIAL_MS;
    let stalled_share = stalled_ms / window_ms.max(1e-9);
    let sign = match &failing {
        Some(f) => f.all_client().then(|| {
            format!(
                "it made {} failing window{} fail: the client is named for {:.0} % of the operations that failed it",
                f.windows,
                if f.windows == 1 { "" } else { "s" },
                f.client_share().unwrap_or(0.0) * 100.0
            )
        }),
        None if late_share >= LATE_SHARE => Some(format!(
            "{:.2} % of the due operations were sent more than 10 ms late by a free worker",
            late_share * 100.0
        )),
        None => starved(server, stalled_share)
            .map(|other| {
                format!(
                    "its runtime stalled {:.1} % of the window while other processes used {other:.2} cores",
                    stalled_share * 100.0
                )
            })
            .or_else(|| {
                slow_share
                    .filter(|s| *s >= SLOW_SHARE && matched >= SLOW_MIN && material)
                    .map(|s| format!("the client is named for {:.0} % of the operations over p99", s * 100.0))
            }),
    };
    let (limit, fix) = match &sign {
        None => (Limit::Neither, None),
        Some(_) => which(server, cpu_wait_share),
    };
    Some(ClientAudit {
        ops_per_cpu_s: (cpu_s > 0.0).then(|| sent as f64 / cpu_s),
        cpu_cores: server.client_cpu_cores,
        stalls: within.len(),
        stalled_ms,
        stalled_share,
        cpu_wait_share,
        late_ops,
        late_share,
        slow_share,
        failing,
        limit,
        bound: limit == Limit::Client,
        why: sign,
        fix,
        rule: RULE.to_string(),
    })
}

/// How far the p99 of every due operation is above their median, ms.
fn tail_ms(end: &RunEnd) -> f64 {
    let mut all = crate::metrics::recorder::new_histogram();
    for t in &end.totals {
        all.add(&t.response).expect("same bounds");
    }
    if all.is_empty() {
        return 0.0;
    }
    (all.value_at_quantile(0.99) as f64 - all.value_at_quantile(0.5) as f64) / 1e6
}

/// Whether a client that showed its sign was the limit or the machine was, and the fix that
/// applies.
fn which(server: &ServerFacts, cpu_wait_share: Option<f64>) -> (Limit, Option<String>) {
    let Some(m) = server.machine.as_ref() else {
        return (
            Limit::Client,
            Some("give caplab more CPU (--threads, --client-cpus) or more loaders".into()),
        );
    };
    let waited = cpu_wait_share.unwrap_or(0.0);
    let busy = m.busy_cores / m.core_count.max(1) as f64;
    if m.other_cpu_cores >= DISTURBED_CORES {
        return (
            Limit::Client,
            Some(format!(
                "other processes used {:.2} cores of caplab's cores {}: stop them, or run caplab on cores of its own away from them (--client-cpus)",
                m.other_cpu_cores, m.cores
            )),
        );
    }
    if m.shared && (busy >= MACHINE_BUSY || waited >= MACHINE_WAIT) {
        return (Limit::Machine, Some(machine_fix(m, server, waited)));
    }
    (
        Limit::Client,
        Some(format!(
            "its runtime could not keep the schedule with cores free ({:.0} % of cores {} busy): give it more threads (--threads) or more loaders",
            busy * 100.0,
            m.cores
        )),
    )
}

fn machine_fix(m: &MachineFacts, server: &ServerFacts, waited: f64) -> String {
    format!(
        "client and nodes shared cores {} and used {:.2} of {} together ({:.2} the nodes, {:.2} caplab), the client waiting for a CPU {:.0} % of the window: more client threads would only take CPU from the nodes; run caplab on cores of its own (--client-cpus, the nodes on --cpus) or on another machine",
        m.cores,
        server.server_cpu_cores + server.client_cpu_cores,
        m.core_count,
        server.server_cpu_cores,
        server.client_cpu_cores,
        waited * 100.0
    )
}

/// The slow operations explained (`causes`), the client audited (on the operations that failed
/// the service level `sla` when it failed), each second's stalls added to the server's timeline,
/// and a failed service level marked as the client's or the machine's when it was.
pub fn of_run(
    names: &[String],
    end: &RunEnd,
    server: &mut ServerFacts,
    faults: &[crate::faults::FaultRecord],
    started: std::time::SystemTime,
    sla: Option<&mut crate::sla::SlaVerdict>,
) -> (Option<Slow>, Option<ClientAudit>) {
    let (slow, failing) = {
        let ev = super::causes::evidence(end, server, faults, started);
        let slow = ev
            .as_ref()
            .and_then(|ev| super::causes::explain(names, &end.totals, &end.slow, ev));
        let failing = match (&sla, &ev, end.measured) {
            (Some(v), Some(ev), Some(span)) if !v.pass => {
                let named = super::causes::named(&end.totals, &end.slow, ev);
                let seconds = (server.timeline.as_slice(), server.measured_from_ms);
                super::failing::failing(v, &named, span, seconds, LATE_SHARE)
            }
            _ => None,
        };
        (slow, failing)
    };
    let t0_ms = started
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3);
    stalls_per_second(&mut server.timeline, &end.stalls, t0_ms);
    let client = audit(end, server, slow.as_ref(), failing);
    if let (Some(v), Some(a)) = (sla, &client)
        && !v.pass
    {
        let said = || {
            a.why
                .clone()
                .map(|w| format!("{w}; {}", a.fix.clone().unwrap_or_default()))
        };
        match a.limit {
            Limit::Client => v.client_bound = said(),
            Limit::Machine => v.machine_bound = said(),
            Limit::Neither => {}
        }
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
    /// The summary line: what was measured, then what limited the run and what to do about it.
    /// Failure is for the service level's verdict to name, not this line.
    pub fn render(&self) -> String {
        let per_cpu = self.ops_per_cpu_s.map_or("CPU not read".into(), |r| {
            format!("{} op/s per CPU-second", crate::console::group(r))
        });
        let slow = self.slow_share.map_or(String::new(), |s| {
            format!(", named for {:.0} % of the slow operations", s * 100.0)
        });
        let why = self.why.as_deref().unwrap_or_default();
        let fix = self.fix.as_deref().unwrap_or_default();
        let verdict = match self.limit {
            Limit::Client => format!("THE CLIENT WAS THE LIMIT ({why}): {fix}"),
            Limit::Machine => format!("THE MACHINE WAS THE LIMIT ({why}): {fix}"),
            Limit::Neither if self.stalled_share >= STALLED_SHARE => format!(
                "not the limit, but its runtime stalled {:.1} % of the window, so its own delay is in every percentile, the median too",
                self.stalled_share * 100.0
            ),
            Limit::Neither => "not the limit".into(),
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
    use crate::telemetry::machine::MachineFacts;
    use std::time::Duration;

    /// A 10 s window of 10,000 operations (the slowest 2 % at 20 ms, the rest 1 ms), `late` of
    /// them sent late by a free worker.
    fn end(late: u64, stalls: Vec<Stall>) -> RunEnd {
        let mut t = OpStats::default();
        for i in 0..10_000 {
            let ns = if i < 200 { 20_000_000 } else { 1_000_000 };
            t.response.record(ns).unwrap();
            t.service.record(ns).unwrap();
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
        let a = audit(&end(100, Vec::new()), &server(), None, None).unwrap();
        assert!(a.bound && a.why.as_deref().unwrap().contains("1.00 %"), "{a:?}");
        assert_eq!(a.ops_per_cpu_s, Some(10_000.0), "10,000 sent on 1 CPU-second");
        let a = audit(&end(99, Vec::new()), &server(), None, None).unwrap();
        assert!(!a.bound, "{a:?}");
        assert!(a.render().ends_with("not the limit"), "{}", a.render());
        // Stalled 3 % of the 10 s window: said, not called the limit.
        let stalls = vec![Stall {
            from_ns: 6_000_000_000,
            to_ns: 6_300_000_000,
        }];
        let a = audit(&end(0, stalls), &server(), None, None).unwrap();
        assert!(
            !a.bound && a.render().contains("stalled 3.0 % of the window"),
            "{}",
            a.render()
        );
    }

    #[test]
    fn a_client_named_for_half_the_slow_operations_is_the_limit_when_there_are_enough() {
        let bound = |share: f64, matched: usize| {
            audit(&end(0, Vec::new()), &server(), Some(&slow(share, matched)), None)
                .unwrap()
                .bound
        };
        assert!(bound(0.5, 10));
        assert!(!bound(0.49, 100));
        assert!(!bound(1.0, 9), "nine operations say little");
        // A tail within 10 ms of the median is nobody's limit, however the slow ones are named.
        let mut tight = end(0, Vec::new());
        tight.totals[0].response.reset();
        for i in 0..10_000 {
            tight.totals[0]
                .response
                .record(if i < 200 { 5_000_000 } else { 1_000_000 })
                .unwrap();
        }
        let a = audit(&tight, &server(), Some(&slow(0.9, 100)), None).unwrap();
        assert_eq!(a.limit, Limit::Neither, "{a:?}");
    }

    /// The server of `server()` on a machine of `cores` cores, `shared` with the client, the
    /// nodes using `nodes` cores and other processes `other`.
    fn on(cores: usize, shared: bool, nodes: f64, other: f64) -> ServerFacts {
        let mut s = server();
        s.server_cpu_cores = nodes;
        s.machine = MachineFacts::of(
            &(0..cores).collect::<Vec<_>>(),
            shared,
            &[(10.0, nodes + s.client_cpu_cores + other, other, 0.0)],
        );
        s
    }

    #[test]
    fn a_client_sharing_saturated_cores_with_its_node_is_the_machines_limit_not_its_own() {
        let late = end(200, Vec::new());
        // The README's first run: the node 1.8 of 2 shared cores, caplab 0.1.
        let a = audit(&late, &on(2, true, 1.8, 0.0), None, None).unwrap();
        assert_eq!((a.limit, a.bound), (Limit::Machine, false));
        assert!(a.render().contains("THE MACHINE WAS THE LIMIT"), "{}", a.render());
        assert!(
            a.fix.as_deref().unwrap().contains("only take CPU from the nodes"),
            "{a:?}"
        );
        assert!(
            !a.render().contains("failed"),
            "no service level failed: {}",
            a.render()
        );
        // Busy loops took the cores: a starved client, whose fix is to be away from them.
        let a = audit(&late, &on(2, true, 0.5, 1.3), None, None).unwrap();
        assert_eq!(a.limit, Limit::Client);
        assert!(
            a.fix.as_deref().unwrap().contains("other processes used 1.30 cores"),
            "{a:?}"
        );
        // Cores free, client on its own: its runtime did not keep up.
        let a = audit(&late, &on(2, false, 0.6, 0.0), None, None).unwrap();
        assert_eq!(a.limit, Limit::Client);
        assert!(a.fix.as_deref().unwrap().contains("--threads"), "{a:?}");
        // The same cores shared but mostly idle: the client's own.
        let a = audit(&late, &on(2, true, 0.6, 0.0), None, None).unwrap();
        assert_eq!(a.limit, Limit::Client, "{a:?}");
        // No sign, saturated or not: neither.
        let a = audit(&end(0, Vec::new()), &on(2, true, 1.9, 0.0), None, None).unwrap();
        assert_eq!(a.limit, Limit::Neither);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["limit"], "neither", "a tag, not words: {json}");
    }

    #[test]
    fn a_runtime_stalled_beside_other_processes_is_starved_whatever_its_tail() {
        // Stalled 3 % of the 10 s window, nothing late, no slow operation named for it.
        let stalls = || {
            vec![Stall {
                from_ns: 6_000_000_000,
                to_ns: 6_300_000_000,
            }]
        };
        let a = audit(&end(0, stalls()), &on(2, true, 0.6, 0.8), None, None).unwrap();
        assert_eq!(a.limit, Limit::Client, "{a:?}");
        assert!(
            a.why
                .as_deref()
                .unwrap()
                .contains("stalled 3.0 % of the window while other processes used 0.80 cores"),
            "{a:?}"
        );
        // The same stalls with the cores to itself and its node: said, not the limit.
        let a = audit(&end(0, stalls()), &on(2, true, 0.6, 0.0), None, None).unwrap();
        assert_eq!(a.limit, Limit::Neither, "{a:?}");
        // Other processes busy, the runtime keeping up: not starved.
        let short = vec![Stall {
            from_ns: 6_000_000_000,
            to_ns: 6_200_000_000,
        }];
        let a = audit(&end(0, short), &on(2, true, 0.6, 0.8), None, None).unwrap();
        assert_eq!(a.limit, Limit::Neither, "{a:?}");
    }

    #[test]
    fn a_failed_service_level_is_judged_on_the_operations_that_failed_it() {
        let failing = |client_windows: usize| Failing {
            windows: 2,
            client_windows,
            over: 60,
            named: 60.0,
            client: 10.0,
            not_client: None,
        };
        // Named for every operation over p99 (its CPU waits between p99 and a few ms more), but
        // a GC pause failed one of the two windows: not the client's.
        let a = audit(
            &end(0, Vec::new()),
            &on(2, false, 0.6, 0.0),
            Some(&slow(0.9, 100)),
            Some(failing(1)),
        )
        .unwrap();
        assert_eq!(a.limit, Limit::Neither, "{a:?}");
        let a = audit(&end(0, Vec::new()), &on(2, false, 0.6, 0.0), None, Some(failing(2))).unwrap();
        assert_eq!(a.limit, Limit::Client, "{a:?}");
        assert!(
            a.why.as_deref().unwrap().contains("made 2 failing windows fail"),
            "{a:?}"
        );
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
        let a = audit(&end(0, stalls.clone()), &server(), None, None).unwrap();
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
