//! Why the slow operations were slow (result.json `slow`): every measured operation over its
//! type's p99 that the engine kept (`metrics::slow`) is matched against what stopped or slowed
//! things while it was in flight, from its response time's start to its end.
//!
//! The rule, as `RULE` tells users:
//! - an operation's excess is its response time less its type's median;
//! - a cause explains it when, while it was in flight, the cause covered at least half its
//!   excess (`COVERS`);
//! - stops come first, the one that covered most (a tie goes to the server's): a GC pause of any
//!   node, another safepoint, the client's own stall (its runtime woke late, `engine::canary`,
//!   or a free worker sent it late);
//! - then what went on meanwhile, in this order: a fault of the schedule, the client's thread
//!   waiting for a CPU (`engine::canary`: it slows what the client does rather than stopping
//!   it, and where the answer was meanwhile is not known), tasks pending in the nodes' thread
//!   pools in that second, a memtable flush, a compaction;
//! - otherwise it is unexplained: no cause caplab watches covered it.

use serde::{Deserialize, Serialize};

pub use super::evidence::{Cause, Evidence, evidence};
use super::evidence::{Spans, spans};
use crate::engine::canary::STALL;
use crate::metrics::OpStats;
use crate::metrics::slow::{Kept, SlowOp};

/// The share of an operation's excess a cause must cover to explain it.
pub const COVERS: f64 = 0.5;

/// The matching rule, as result.json and the summary state it.
pub const RULE: &str = "an operation over its type's p99 is explained by a cause that covered at least half its excess over the median while it was in flight: first the stop that covered most (GC pause, other safepoint, the client's own stall; a tie goes to the server's), else a fault, the client's thread waiting for a CPU, pending thread-pool tasks, a flush or a compaction, in that order";

/// Operations listed with their cause, slowest first.
const LISTED: usize = 10;

/// result.json `slow`: the slow operations and what made them slow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slow {
    pub rule: String,
    /// Measured operations over their type's p99 (the histograms' count).
    pub over_p99: u64,
    /// Of them, those the engine kept and matched (a uniform sample when there were more than
    /// it keeps, each standing for as many as its shard was offered).
    pub matched: usize,
    /// Each cause's estimated operations and share, largest first; `unexplained` included.
    pub by_cause: Vec<CauseShare>,
    /// The slowest matched operations.
    pub slowest: Vec<SlowOne>,
    /// What was not there to match against (no GC log of a remote cluster, no thread pools…).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_watched: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    pub cause: Cause,
    pub ops: f64,
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowOne {
    pub op: String,
    /// Its intended start, seconds into the measured window.
    pub at_s: f64,
    pub response_ms: f64,
    pub cause: Cause,
    /// The cause's own words: which node's pause, which fault, which pools…
    pub detail: String,
    /// Every cause that covered half its excess.
    pub causes: Vec<Cause>,
}

/// The slow operations explained; None when nothing was measured.
pub fn explain(names: &[String], totals: &[OpStats], kept: &Kept, ev: &Evidence) -> Option<Slow> {
    let p = |t: &OpStats, q: f64| t.response.value_at_quantile(q) as f64 / 1e6;
    let limits: Vec<(f64, f64)> = totals.iter().map(|t| (p(t, 0.5), p(t, 0.99))).collect();
    let over_p99: u64 = totals
        .iter()
        .filter(|t| !t.response.is_empty())
        .map(|t| {
            let p99 = t.response.value_at_quantile(0.99);
            t.response.count_between(t.response.next_non_equivalent(p99), u64::MAX)
        })
        .sum();
    if totals.iter().all(|t| t.response.is_empty()) {
        return None;
    }
    let (spans, not_watched) = spans(ev);
    let ms = |ns: i64| ev.t0_ms + ns as f64 / 1e6;
    let mut matched = Vec::new();
    for o in &kept.ops {
        let Some(&(p50, p99)) = limits.get(o.op as usize) else {
            continue;
        };
        let response = o.response_ns() as f64 / 1e6;
        if response <= p99 {
            continue;
        }
        let (from, to) = (ms(o.from_ns), ms(o.done_ns));
        let excess = if response > p50 { response - p50 } else { response };
        let (cause, detail, causes) = match_one(&spans, o, from, to, excess);
        matched.push((o, response, cause, detail, causes));
    }
    let total: f64 = matched.iter().map(|m| m.0.weight).sum();
    let mut by_cause: Vec<CauseShare> = Cause::ALL
        .iter()
        .filter_map(|&c| {
            let ops: f64 = matched.iter().filter(|m| m.2 == c).map(|m| m.0.weight).sum();
            (ops > 0.0).then(|| CauseShare {
                cause: c,
                ops,
                share: ops / total,
            })
        })
        .collect();
    by_cause.sort_by(|a, b| b.ops.total_cmp(&a.ops).then(a.cause.cmp(&b.cause)));
    matched.sort_by(|a, b| b.1.total_cmp(&a.1));
    let slowest = matched
        .iter()
        .take(LISTED)
        .map(|(o, response, cause, detail, causes)| SlowOne {
            op: names.get(o.op as usize).cloned().unwrap_or_default(),
            at_s: (ms(o.intended_ns) - ev.window_ms.0) / 1e3,
            response_ms: *response,
            cause: *cause,
            detail: detail.clone(),
            causes: causes.clone(),
        })
        .collect();
    Some(Slow {
        rule: RULE.to_string(),
        over_p99,
        matched: matched.len(),
        by_cause,
        slowest,
        not_watched,
    })
}

/// Every operation the engine kept (`metrics::slow`: those over about half the window's p99),
/// each with its top cause by the same rule, its excess counted over its type's median: what a
/// failed service level's operations are judged by (`failing`).
pub fn named(totals: &[OpStats], kept: &Kept, ev: &Evidence) -> Vec<(SlowOp, Cause)> {
    let (spans, _) = spans(ev);
    let ms = |ns: i64| ev.t0_ms + ns as f64 / 1e6;
    kept.ops
        .iter()
        .map(|o| {
            let excess = excess_ms(totals, o);
            (*o, match_one(&spans, o, ms(o.from_ns), ms(o.done_ns), excess).0)
        })
        .collect()
}

/// How far `o` is over its type's median (ms), or its whole response when it is not.
fn excess_ms(totals: &[OpStats], o: &SlowOp) -> f64 {
    let p50 = totals
        .get(o.op as usize)
        .map_or(0.0, |t| t.response.value_at_quantile(0.5) as f64 / 1e6);
    let response = o.response_ns() as f64 / 1e6;
    if response > p50 { response - p50 } else { response }
}

/// The top cause of each of `ops` with its detail ("GC pause: node1 Pause Young … 66 ms"), its
/// excess counted over its type's median as for the slow operations.
pub fn name_each(totals: &[OpStats], ops: &[SlowOp], ev: &Evidence) -> Vec<String> {
    let (spans, _) = spans(ev);
    let ms = |ns: i64| ev.t0_ms + ns as f64 / 1e6;
    ops.iter()
        .map(|o| {
            let excess = excess_ms(totals, o);
            let (cause, detail, _) = match_one(&spans, o, ms(o.from_ns), ms(o.done_ns), excess);
            match detail.is_empty() {
                true => cause.label().to_string(),
                false => format!("{}: {detail}", cause.label()),
            }
        })
        .collect()
}

/// One operation's top cause, its detail, and every cause that explained it.
fn match_one(spans: &[Spans], o: &SlowOp, from: f64, to: f64, excess: f64) -> (Cause, String, Vec<Cause>) {
    // A free worker's late send is the client's own, whatever the canary saw.
    let own_lag = match o.sent_ns {
        Some(sent) if o.waited && sent - o.intended_ns > STALL.as_nanos() as i64 => (sent - o.intended_ns) as f64 / 1e6,
        _ => 0.0,
    };
    // (cause, covered, detail, rank among what went on meanwhile; None: a stop)
    let mut found: Vec<(Cause, f64, String, Option<u8>)> = Vec::new();
    for s in spans {
        let (mut covered, best) = s.cover(from, to);
        let mut detail = best.map(|b| b.detail.clone()).unwrap_or_default();
        if s.cause == Cause::Client && s.rank.is_none() && own_lag > covered {
            covered = own_lag;
            detail = format!("sent {own_lag:.1} ms late by a free worker");
        }
        if covered >= COVERS * excess {
            found.push((s.cause, covered, detail, s.rank));
        }
    }
    if o.sent_ns.is_none() {
        found.push((Cause::Client, excess, "never sent: the client fell behind".into(), None));
    }
    let causes: Vec<Cause> = found.iter().map(|f| f.0).collect();
    let top = found
        .iter()
        .filter(|f| f.3.is_none())
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .or_else(|| found.iter().filter(|f| f.3.is_some()).min_by_key(|f| f.3));
    match top {
        Some((cause, _, detail, _)) => (*cause, detail.clone(), causes),
        None => (Cause::Unexplained, String::new(), causes),
    }
}

impl Slow {
    /// The summary's lines: the shares, then the slowest few.
    pub fn render(&self) -> String {
        let shares: Vec<String> = self
            .by_cause
            .iter()
            .map(|c| format!("{} {:.0} %", c.cause.label(), c.share * 100.0))
            .collect();
        let mut o = format!(
            "Slow operations (> p99)       : {} ({} matched): {}",
            self.over_p99,
            self.matched,
            if shares.is_empty() {
                "none".into()
            } else {
                shares.join(", ")
            }
        );
        for s in self.slowest.iter().take(3) {
            o.push_str(&format!(
                "\n  {:.1} ms {} at {:.1} s: {}{}",
                s.response_ms,
                s.op,
                s.at_s,
                s.cause.label(),
                if s.detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", s.detail)
                }
            ));
        }
        if !self.not_watched.is_empty() {
            o.push_str(&format!("\n  not watched: {}", self.not_watched.join("; ")));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::canary::{Stall, Wait};
    use crate::faults::FaultRecord;
    use crate::faults::impact::Period;
    use crate::faults::spec::Action;
    use crate::telemetry::flush::{Flush, FlushStats};
    use crate::telemetry::gclog::{GcStats, Pause};
    use crate::telemetry::{NodeFacts, ServerFacts, ServerSecond};

    /// An operation of type 0 in flight from `from` to `to`, ms after the run's start (epoch 0).
    fn op(from: f64, to: f64) -> SlowOp {
        let ns = |ms: f64| (ms * 1e6) as i64;
        SlowOp {
            op: 0,
            intended_ns: ns(from),
            from_ns: ns(from),
            sent_ns: Some(ns(from)),
            done_ns: ns(to),
            error: false,
            waited: true,
            weight: 1.0,
            trace: None,
        }
    }

    /// Totals whose median is 1 ms and p99 10 ms, with 10 of 1,000 operations over it.
    fn totals() -> Vec<OpStats> {
        let mut t = OpStats::default();
        for i in 0..1000 {
            let ms = match i {
                0..985 => 1,
                985..990 => 10,
                _ => 50,
            };
            t.response.record(ms * 1_000_000).unwrap();
        }
        vec![t]
    }

    fn node(pauses: &[(f64, f64)], flushes: &[(f64, f64)]) -> NodeFacts {
        NodeFacts {
            name: "node1".into(),
            pid: 1,
            gc: GcStats {
                pauses: pauses
                    .iter()
                    .map(|&(at, ms)| Pause {
                        at_ms: at as u64,
                        ms,
                        kind: "Pause Young".into(),
                    })
                    .collect(),
                ..GcStats::default()
            },
            cpu_seconds: 0.0,
            cpu_user_seconds: 0.0,
            cpu_system_seconds: 0.0,
            cpu_cores: 0.0,
            rss_max_mb: 0.0,
            flushes: FlushStats {
                flushes: flushes
                    .iter()
                    .map(|&(at, ms)| Flush {
                        table: "t".into(),
                        at_ms: at as u64,
                        ops: 1,
                        serialized_mb: 1.0,
                        written_mb: 1.0,
                        ms,
                    })
                    .collect(),
                ..FlushStats::default()
            },
            flush_cpu_seconds: 0.0,
            flush_cpu_us_per_op: None,
            flushed_mb_per_s: 0.0,
        }
    }

    fn server(nodes: Vec<NodeFacts>) -> ServerFacts {
        let mut s = ServerFacts::not_collected("");
        s.not_collected = None;
        s.nodes = nodes;
        s
    }

    fn fault(start_s: f64, end_s: f64) -> FaultRecord {
        FaultRecord {
            fault: "delay node1 at 1s for 1s by 50ms".into(),
            action: Action::Delay,
            node: "node1".into(),
            start_s: Some(start_s),
            end_s: Some(end_s),
            back_s: None,
            detect_s: None,
            recover_s: None,
            band: None,
            during: Period::default(),
            after: Period::default(),
            sla_windows_failed: None,
            note: None,
            error: None,
        }
    }

    fn explained(ops: Vec<SlowOp>, server: &ServerFacts, stalls: &[Stall], faults: &[FaultRecord]) -> Slow {
        explained_with(ops, server, stalls, &[], faults)
    }

    fn explained_with(
        ops: Vec<SlowOp>,
        server: &ServerFacts,
        stalls: &[Stall],
        waits: &[Wait],
        faults: &[FaultRecord],
    ) -> Slow {
        let ev = Evidence {
            server: Some(server),
            stalls,
            waits,
            faults,
            t0_ms: 0.0,
            window_ms: (0.0, 10_000.0),
        };
        let kept = Kept {
            offered: ops.len() as u64,
            ops,
        };
        explain(&["insert".into()], &totals(), &kept, &ev).unwrap()
    }

    fn causes(s: &Slow) -> Vec<Cause> {
        let mut by_time = s.slowest.clone();
        by_time.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        by_time.iter().map(|o| o.cause).collect()
    }

    #[test]
    fn a_stop_explains_an_operation_when_it_covers_half_its_excess() {
        // A 40 ms pause ending at 1,040 ms. Excess over the 1 ms median: 49 ms for each.
        let s = server(vec![node(&[(1040.0, 40.0)], &[])]);
        let ops = vec![
            op(1000.0, 1050.0), // covered 40 of 49 ms
            op(1020.0, 1070.0), // covered 20 ms: under half
            op(2000.0, 2050.0), // nothing then
            op(3000.0, 3005.0), // under the p99: not matched
        ];
        let slow = explained(ops, &s, &[], &[]);
        assert_eq!(slow.over_p99, 10, "the histograms' count over p99");
        assert_eq!(slow.matched, 3);
        assert_eq!(causes(&slow), [Cause::GcPause, Cause::Unexplained, Cause::Unexplained]);
        let gc = slow.slowest.iter().find(|o| o.cause == Cause::GcPause).unwrap();
        assert_eq!((gc.detail.as_str(), gc.at_s), ("node1 Pause Young 40 ms", 1.0));
        let share = |c: Cause| slow.by_cause.iter().find(|s| s.cause == c).map(|s| s.share);
        assert_eq!(share(Cause::GcPause), Some(1.0 / 3.0));
        assert_eq!(slow.by_cause[0].cause, Cause::Unexplained, "largest first");
    }

    #[test]
    fn stops_come_before_what_the_server_was_doing_and_that_goes_in_a_fixed_order() {
        // A flush all through 0–5 s, a fault 2–4 s, a 30 ms pause ending at 1,030 ms.
        let s = server(vec![node(&[(1030.0, 30.0)], &[(5000.0, 5000.0)])]);
        let ops = vec![op(1000.0, 1040.0), op(2500.0, 2550.0), op(4500.0, 4550.0)];
        let slow = explained(ops, &s, &[], &[fault(2.0, 4.0)]);
        assert_eq!(causes(&slow), [Cause::GcPause, Cause::Fault, Cause::Flush]);
        let first = slow.slowest.iter().find(|o| o.cause == Cause::GcPause).unwrap();
        assert_eq!(
            first.causes,
            [Cause::GcPause, Cause::Flush],
            "every cause that covered it"
        );
    }

    #[test]
    fn the_client_is_named_for_its_stalls_its_late_sends_and_what_it_never_sent() {
        let s = server(vec![node(&[], &[])]);
        let stalls = [Stall {
            from_ns: 1_005_000_000,
            to_ns: 1_045_000_000,
        }];
        let mut late = op(2000.0, 2050.0);
        late.sent_ns = Some(2_030_000_000);
        let mut queued = op(2500.0, 2550.0);
        queued.sent_ns = Some(2_530_000_000);
        queued.waited = false;
        let mut never = op(3000.0, 3050.0);
        never.sent_ns = None;
        let slow = explained(vec![op(1000.0, 1050.0), late, queued, never], &s, &stalls, &[]);
        assert_eq!(
            causes(&slow),
            [Cause::Client, Cause::Client, Cause::Unexplained, Cause::Client],
            "a late send while every worker was busy is the server's queue, not the client"
        );
    }

    /// A client kept from its CPU in pieces: ticks of 10 ms in which its thread waited 8 ms
    /// explain an operation in flight through five of them to its end (40 of its 50 ms excess),
    /// though no wake came late enough to be a stall; a tick covers at most its wait. A stop that
    /// covers half the excess comes first (a GC pause), and so does a fault of the schedule: a
    /// wait slows the client, and where the answer was meanwhile is not known. An operation
    /// through one tick's wait alone is not the client's, nor one whose waits broke off before
    /// its end: only the run of waits through the end held its answer.
    #[test]
    fn waits_for_a_cpu_name_the_client_after_stops_and_faults() {
        let ticks = |from_ms: i64, n: i64| -> Vec<Wait> {
            (0..n)
                .map(|k| Wait {
                    from_ns: (from_ms + 10 * k) * 1_000_000,
                    to_ns: (from_ms + 10 * (k + 1)) * 1_000_000,
                    waited_ns: 8_000_000,
                })
                .collect()
        };
        let mut waits = Vec::new();
        for (from, n) in [(1000, 5), (3000, 5), (5000, 1), (7000, 3), (7040, 1), (9000, 5)] {
            waits.extend(ticks(from, n));
        }
        let s = server(vec![node(&[(3050.0, 30.0)], &[])]);
        let ops = [1000.0, 3000.0, 5000.0, 7000.0, 9000.0].map(|at| op(at, at + 50.0));
        let slow = explained_with(ops.to_vec(), &s, &[], &waits, &[fault(9.0, 9.1)]);
        assert_eq!(
            causes(&slow),
            [
                Cause::Client,
                Cause::GcPause,
                Cause::Unexplained,
                Cause::Unexplained,
                Cause::Fault
            ]
        );
        assert_eq!(
            slow.slowest
                .iter()
                .filter(|o| o.causes.contains(&Cause::Client))
                .count(),
            3
        );
        let named = slow.slowest.iter().find(|o| o.cause == Cause::Client).unwrap();
        assert!(named.detail.contains("waited 8.0 ms for a CPU"), "{}", named.detail);
    }

    #[test]
    fn kept_operations_stand_for_what_their_shard_was_offered() {
        let s = server(vec![node(&[(1040.0, 40.0)], &[])]);
        let mut heavy = op(1000.0, 1050.0);
        heavy.weight = 3.0;
        let slow = explained(vec![heavy, op(2000.0, 2050.0)], &s, &[], &[]);
        assert_eq!(slow.by_cause[0].cause, Cause::GcPause);
        assert_eq!((slow.by_cause[0].ops, slow.by_cause[0].share), (3.0, 0.75));
    }

    #[test]
    fn without_the_nodes_logs_or_pools_it_says_what_it_could_not_watch() {
        let ev = Evidence {
            server: None,
            stalls: &[],
            waits: &[],
            faults: &[],
            t0_ms: 0.0,
            window_ms: (0.0, 10_000.0),
        };
        let kept = Kept {
            offered: 1,
            ops: vec![op(1000.0, 1050.0)],
        };
        let slow = explain(&["insert".into()], &totals(), &kept, &ev).unwrap();
        assert_eq!(slow.not_watched.len(), 2, "{:?}", slow.not_watched);
        assert!(slow.render().contains("unexplained 100 %"), "{}", slow.render());
    }

    /// A cluster caplab does not run has only each second's GC pauses, over JMX: an operation in
    /// flight that second is named for them when their total could cover half its excess, and
    /// not when it could not; that the pauses' place is not known is said.
    #[test]
    fn a_remote_clusters_gc_seconds_name_what_they_could_have_covered() {
        let mut s = server(Vec::new());
        s.timeline = vec![ServerSecond {
            at_ms: 2000,
            length_s: 1.0,
            gc_pause_ms: 40.0,
            gc_pauses: 2,
            ..ServerSecond::default()
        }];
        // Excesses of about 49 and 199 ms over the 1 ms median, both in flight in the second:
        // 40 ms covers half of the first, not of the second.
        let slow = explained(vec![op(1300.0, 1350.0), op(1500.0, 1700.0)], &s, &[], &[]);
        assert_eq!(causes(&slow), [Cause::GcPause, Cause::Unexplained], "{slow:?}");
        assert_eq!(slow.slowest[1].detail, "2 GC pauses over JMX, 40 ms that second");
        assert!(
            slow.not_watched[0].starts_with("where in each second GC pauses fell"),
            "{:?}",
            slow.not_watched
        );
    }

    /// A simulated minute at 1,000 op/s (service times log-normal, median 1 ms) with GC pauses
    /// of 20–200 ms about every 3 s that hold every operation in flight, and 1 % of operations
    /// slowed 100–300 ms by something caplab does not watch. Of the operations over
    /// p99 that a pause made slow (it cost them more than anything else), at most 2 % go
    /// unnamed as GC pauses; of those the unwatched cause made slow, at most 5 % are named GC
    /// pauses by coincidence: each asserted as estimate + 3 SE over 20 seeds (about 12,000
    /// operations over p99; measured 0.16 % and 1.7 %), on seeds never used to choose `COVERS`. The same operations
    /// matched against pauses placed 300 ms off (clocks out of line) lose most of their
    /// causes: the check has the power to fail.
    #[test]
    fn planted_gc_pauses_are_named_for_the_operations_they_slowed_and_rarely_for_others() {
        let (mut missed, mut gc_slowed, mut blamed, mut other_slowed, mut shifted_named) = (0, 0, 0, 0, 0);
        for seed in 1000..1020u64 {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut uniform = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng >> 11) as f64 / (1u64 << 53) as f64
            };
            let mut pauses = Vec::new();
            let mut at = 0.0;
            while at < 60_000.0 {
                at += -3000.0 * uniform().max(1e-12).ln();
                pauses.push((at, at + 20.0 + 180.0 * uniform()));
            }
            let mut totals = [OpStats::default()];
            let mut ops = Vec::new();
            for i in 0..60_000 {
                let start = i as f64;
                let normal = (-2.0 * uniform().max(1e-12).ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos();
                let mut done = start + (0.5 * normal).exp();
                let mut by_pause = 0.0;
                for &(a, b) in &pauses {
                    if a < done && b > start {
                        let held = b - a.max(start);
                        done += held;
                        by_pause += held;
                    }
                }
                let unwatched = if uniform() < 0.01 {
                    100.0 + 200.0 * uniform()
                } else {
                    0.0
                };
                done += unwatched;
                totals[0].response.record(((done - start) * 1e6) as u64).unwrap();
                ops.push((
                    op(start, done),
                    by_pause >= unwatched && by_pause > 0.0,
                    unwatched > by_pause,
                ));
            }
            let nodes = |shift: f64| {
                let list: Vec<(f64, f64)> = pauses.iter().map(|&(a, b)| (b + shift, b - a)).collect();
                server(vec![node(&list, &[])])
            };
            let p50 = totals[0].response.value_at_quantile(0.5) as f64 / 1e6;
            let p99 = totals[0].response.value_at_quantile(0.99) as f64 / 1e6;
            for shift in [0.0, 300.0] {
                let server = nodes(shift);
                let ev = Evidence {
                    server: Some(&server),
                    stalls: &[],
                    waits: &[],
                    faults: &[],
                    t0_ms: 0.0,
                    window_ms: (0.0, 60_000.0),
                };
                let (spans, _) = spans(&ev);
                for (o, by_gc, by_other) in ops.iter().filter(|o| o.0.response_ns() as f64 / 1e6 > p99) {
                    let response = o.response_ns() as f64 / 1e6;
                    let (from, to) = (o.from_ns as f64 / 1e6, o.done_ns as f64 / 1e6);
                    let (cause, _, _) = match_one(&spans, o, from, to, response - p50);
                    let named = cause == Cause::GcPause;
                    if shift > 0.0 {
                        shifted_named += usize::from(*by_gc && named);
                        continue;
                    }
                    gc_slowed += usize::from(*by_gc);
                    missed += usize::from(*by_gc && !named);
                    other_slowed += usize::from(*by_other);
                    blamed += usize::from(*by_other && named);
                }
            }
        }
        let bound = |k: usize, n: usize| {
            let p = k as f64 / n as f64;
            p + 3.0 * (p * (1.0 - p) / n as f64).sqrt()
        };
        assert!(gc_slowed > 2000 && other_slowed > 2000, "{gc_slowed} {other_slowed}");
        assert!(
            bound(missed, gc_slowed) <= 0.02,
            "{missed} of {gc_slowed} a pause slowed went unnamed"
        );
        assert!(
            bound(blamed, other_slowed) <= 0.05,
            "{blamed} of {other_slowed} blamed on a pause"
        );
        assert!(
            (shifted_named as f64) < 0.5 * gc_slowed as f64,
            "pauses 300 ms off still named for {shifted_named} of {gc_slowed}"
        );
    }
}
