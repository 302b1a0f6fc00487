//! What the slow operations are matched against (`causes`): the causes caplab names, and each
//! one's spans of time from the evidence of a run — the nodes' GC pauses, safepoints and flushes
//! from their logs (or each second's GC pauses over JMX), compaction and pending thread-pool
//! tasks second by second, the fault schedule, and the client's own stalls and waits for a CPU
//! (`engine::canary`).

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

use crate::engine::RunEnd;
use crate::engine::canary::{Stall, Wait};
use crate::faults::FaultRecord;
use crate::telemetry::ServerFacts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    GcPause,
    Safepoint,
    Client,
    Fault,
    Pending,
    Flush,
    Compaction,
    Unexplained,
}

impl Cause {
    pub(super) const ALL: [Cause; 8] = [
        Cause::GcPause,
        Cause::Safepoint,
        Cause::Client,
        Cause::Fault,
        Cause::Pending,
        Cause::Flush,
        Cause::Compaction,
        Cause::Unexplained,
    ];

    /// Whether it stops operations outright (else it slows them while it goes on).
    pub(super) fn stops(self) -> bool {
        matches!(self, Cause::GcPause | Cause::Safepoint | Cause::Client)
    }

    pub fn label(self) -> &'static str {
        match self {
            Cause::GcPause => "GC pause",
            Cause::Safepoint => "safepoint",
            Cause::Client => "client",
            Cause::Fault => "fault",
            Cause::Pending => "pending tasks",
            Cause::Flush => "flush",
            Cause::Compaction => "compaction",
            Cause::Unexplained => "unexplained",
        }
    }
}

/// One span of a cause, epoch ms.
#[derive(Debug, Clone)]
pub(super) struct Span {
    from: f64,
    to: f64,
    pub(super) detail: String,
    /// At most this much of the span covers an operation: a second's GC pauses read over JMX,
    /// whose place within the second is not known.
    cap: Option<f64>,
}

/// A cause's spans, sorted by start.
pub(super) struct Spans {
    pub(super) cause: Cause,
    spans: Vec<Span>,
    longest: f64,
    /// Only the unbroken run of spans through the operation's end covers it: a client's waits
    /// for a CPU delay an operation when its answer waits with them, not while the server still
    /// has it.
    trailing: bool,
    /// None for a stop; else its rank among the causes that went on meanwhile (lower first).
    pub(super) rank: Option<u8>,
}

impl Spans {
    fn new(cause: Cause, mut spans: Vec<Span>) -> Spans {
        spans.sort_by(|a, b| a.from.total_cmp(&b.from));
        let longest = spans.iter().map(|s| s.to - s.from).fold(0.0, f64::max);
        Spans {
            cause,
            spans,
            longest,
            trailing: false,
            rank: (!cause.stops()).then_some(10 * cause as u8),
        }
    }

    /// How much of `[from, to)` the spans cover (overlaps counted once), and the span that
    /// covered most.
    pub(super) fn cover(&self, from: f64, to: f64) -> (f64, Option<&Span>) {
        if self.trailing {
            return self.cover_to_the_end(from, to);
        }
        let first = self.spans.partition_point(|s| s.from < from - self.longest);
        let (mut covered, mut until, mut best) = (0.0, from, None::<(&Span, f64)>);
        for s in self.spans[first..].iter().take_while(|s| s.from < to) {
            let (a, b) = (s.from.max(until), s.to.min(to));
            if b > a {
                covered += (b - a).min(s.cap.unwrap_or(f64::INFINITY));
                until = b;
            }
            let own = s.to.min(to) - s.from.max(from);
            if own > 0.0 && best.is_none_or(|(_, o)| own > o) {
                best = Some((s, own));
            }
        }
        (covered, best.map(|(s, _)| s))
    }

    /// `cover` of spans that join end to start: the run of them through `to`, back to `from`.
    fn cover_to_the_end(&self, from: f64, to: f64) -> (f64, Option<&Span>) {
        let last = self.spans.partition_point(|s| s.from < to);
        let Some(end) = last.checked_sub(1).filter(|&i| self.spans[i].to >= to) else {
            return (0.0, None);
        };
        let (mut covered, mut best) = (0.0, None::<(&Span, f64)>);
        for i in (0..=end).rev() {
            let s = &self.spans[i];
            if i < end && s.to != self.spans[i + 1].from || s.to <= from {
                break;
            }
            let own = (s.to.min(to) - s.from.max(from)).min(s.cap.unwrap_or(f64::INFINITY));
            covered += own;
            if best.is_none_or(|(_, o)| own > o) {
                best = Some((s, own));
            }
        }
        (covered, best.map(|(s, _)| s))
    }
}

/// What the slow operations are matched against.
pub struct Evidence<'a> {
    pub server: Option<&'a ServerFacts>,
    pub stalls: &'a [Stall],
    /// The client's thread's waits for a CPU, tick by tick.
    pub waits: &'a [Wait],
    pub faults: &'a [FaultRecord],
    /// Epoch ms of the run's start (the engine's times count from it) and of the measured
    /// window's start and end.
    pub t0_ms: f64,
    pub window_ms: (f64, f64),
}

/// What a run's operations are matched against; None when nothing was measured.
pub fn evidence<'a>(
    end: &'a RunEnd,
    server: &'a ServerFacts,
    faults: &'a [FaultRecord],
    started: SystemTime,
) -> Option<Evidence<'a>> {
    let span = end.measured?;
    let ms = |d: Duration| {
        (started + d)
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |t| t.as_secs_f64() * 1e3)
    };
    // A cluster caplab does not run has no nodes' logs, but its thread pools and compaction
    // seconds are still evidence.
    Some(Evidence {
        server: Some(server),
        stalls: &end.stalls,
        waits: &end.waits,
        faults,
        t0_ms: ms(Duration::ZERO),
        window_ms: (ms(span.from), ms(span.to)),
    })
}

/// Every cause's spans from the evidence, and what was not there to match against.
pub(super) fn spans(ev: &Evidence) -> (Vec<Spans>, Vec<String>) {
    let span = |from: f64, to: f64, detail: String| Span {
        from,
        to,
        detail,
        cap: None,
    };
    let mut not_watched = Vec::new();
    let (mut gc, mut safepoints, mut flushes, mut pending, mut compaction) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    match ev.server.filter(|s| !s.nodes.is_empty()) {
        Some(server) => {
            for n in &server.nodes {
                for p in &n.gc.pauses {
                    let to = p.at_ms as f64;
                    gc.push(span(to - p.ms, to, format!("{} {} {:.0} ms", n.name, p.kind, p.ms)));
                }
                for p in &n.gc.safepoints {
                    let to = p.at_ms as f64;
                    safepoints.push(span(
                        to - p.ms,
                        to,
                        format!("{} {} {:.1} ms", n.name, p.operation, p.ms),
                    ));
                }
                for f in &n.flushes.flushes {
                    let to = f.at_ms as f64;
                    let what = format!("{} flush of {} ({:.0} ms)", n.name, f.table, f.ms);
                    flushes.push(span(to - f.ms, to, what));
                }
            }
        }
        None => {
            // A cluster caplab does not run: each second's GC pauses over JMX, where that is all
            // there is. They may have covered an operation in flight that second for at most
            // their total: an upper bound, since where in the second they fell is not known.
            for s in ev
                .server
                .iter()
                .flat_map(|s| &s.timeline)
                .filter(|s| s.gc_pause_ms > 0.0)
            {
                let to = s.at_ms as f64;
                gc.push(Span {
                    cap: Some(s.gc_pause_ms),
                    ..span(
                        to - s.length_s * 1e3,
                        to,
                        format!("{} over JMX, {:.0} ms that second", plural(s.gc_pauses), s.gc_pause_ms),
                    )
                });
            }
            not_watched.push(
                "where in each second GC pauses fell, safepoints and flushes (no node's logs: a cluster caplab does not run here)"
                    .into(),
            );
        }
    }
    if let Some(server) = ev.server {
        for s in server
            .timeline
            .iter()
            .filter(|s| s.compaction_mb_per_s.is_some_and(|c| c > 0.0))
        {
            let to = s.at_ms as f64;
            let mb = s.compaction_mb_per_s.unwrap_or_default();
            compaction.push(span(to - s.length_s * 1e3, to, format!("compaction at {mb:.1} MiB/s")));
        }
    }
    match ev
        .server
        .and_then(|s| s.pools.as_ref())
        .filter(|p| p.not_collected.is_none())
    {
        Some(pools) => {
            for s in pools.timeline.iter().filter(|s| s.pending > 0) {
                let to = s.at_ms as f64;
                let which: Vec<String> = s.pending_by_pool.iter().map(|(k, v)| format!("{k} {v}")).collect();
                pending.push(span(to - 1e3, to, format!("pending: {}", which.join(", "))));
            }
        }
        None => not_watched.push("thread pools (not read)".into()),
    }
    let faults = ev
        .faults
        .iter()
        .filter_map(|f| {
            let at = |s: f64| ev.window_ms.0 + s * 1e3;
            let from = at(f.start_s?);
            let to = f.end_s.map_or(ev.window_ms.1, at);
            Some(span(from, to, f.fault.clone()))
        })
        .collect();
    let client = ev
        .stalls
        .iter()
        .map(|s| {
            let (from, to) = (ev.t0_ms + s.from_ns as f64 / 1e6, ev.t0_ms + s.to_ns as f64 / 1e6);
            span(from, to, format!("the client's runtime stalled {:.1} ms", to - from))
        })
        .collect();
    // A tick's wait covers at most itself of an operation in flight then: where in the tick the
    // thread waited is not known.
    let ms = |ns: i64| ev.t0_ms + ns as f64 / 1e6;
    let waits = ev.waits.iter().map(|w| Span {
        cap: Some(w.waited_ns as f64 / 1e6),
        ..span(
            ms(w.from_ns),
            ms(w.to_ns),
            format!(
                "the client's thread waited {:.1} ms for a CPU",
                w.waited_ns as f64 / 1e6
            ),
        )
    });
    let all = vec![
        Spans::new(Cause::GcPause, gc),
        Spans::new(Cause::Safepoint, safepoints),
        Spans::new(Cause::Client, client),
        // After a fault, before pending tasks.
        Spans {
            trailing: true,
            rank: Some(10 * Cause::Fault as u8 + 5),
            ..Spans::new(Cause::Client, waits.collect())
        },
        Spans::new(Cause::Fault, faults),
        Spans::new(Cause::Pending, pending),
        Spans::new(Cause::Flush, flushes),
        Spans::new(Cause::Compaction, compaction),
    ];
    (all, not_watched)
}

/// "1 GC pause", "3 GC pauses".
fn plural(n: usize) -> String {
    format!("{n} GC pause{}", if n == 1 { "" } else { "s" })
}
