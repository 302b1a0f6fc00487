//! Whether the client made a failed service level fail (`audit`): the operations that failed
//! each failing window — those over a failed objective's bound in it — each named by `causes`'
//! rule, and the window counted as the client's only when, without the operations named for the
//! client, the window would have met every objective it failed. A window that failed its rate is
//! the client's when a free worker sent at least the audit's share of its due operations late;
//! one that failed its error budget never is. The run's failure is the client's when every
//! failing window is.

use serde::{Deserialize, Serialize};

use super::causes::Cause;
use crate::engine::Span;
use crate::metrics::slow::SlowOp;
use crate::sla::SlaVerdict;
use crate::telemetry::ServerSecond;

/// A failing objective's operations over its bound must be at least this share kept (by
/// weight) to be judged: the engine keeps operations over about half the window's p99, so an
/// objective at a lower percentile may fail on operations it did not keep.
pub const COVERED: f64 = 0.5;

/// result.json `client.failing`: the operations that failed the service level, and the client's
/// part in them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failing {
    /// Failing windows, and those the client made fail.
    pub windows: usize,
    pub client_windows: usize,
    /// The failing objectives' operations over their bounds (the windows' histograms' count), of
    /// them those kept and named (by weight), and those named for the client.
    pub over: u64,
    pub named: f64,
    pub client: f64,
    /// Why a window is not the client's, for the first such window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_client: Option<String>,
}

impl Failing {
    /// The share of the failing operations named for the client (None: none kept).
    pub fn client_share(&self) -> Option<f64> {
        (self.named > 0.0).then(|| self.client / self.named)
    }

    /// Whether the client made every failing window fail.
    pub fn all_client(&self) -> bool {
        self.windows > 0 && self.client_windows == self.windows
    }
}

/// The failing windows of `verdict` judged against `named` (every kept operation with its top
/// cause), the measured span `measured` (engine time) and the client's late operations second by
/// second (`timeline`, epoch ms; `from_ms` the measured span's start), a window short of its rate
/// being the client's from `late_share` of its due operations sent late; None when nothing
/// failed.
pub fn failing(
    verdict: &SlaVerdict,
    named: &[(SlowOp, Cause)],
    measured: Span,
    (timeline, from_ms): (&[ServerSecond], u64),
    late_share: f64,
) -> Option<Failing> {
    let from_ns = measured.from.as_nanos() as i64;
    let mut out = Failing {
        windows: 0,
        client_windows: 0,
        over: 0,
        named: 0.0,
        client: 0.0,
        not_client: None,
    };
    for w in verdict.windows.iter().filter(|w| w.judged && !w.pass) {
        out.windows += 1;
        let (start_ns, end_ns) = (
            from_ns + (w.start_s * 1e9) as i64,
            from_ns + ((w.start_s + w.window_s) * 1e9) as i64,
        );
        let mut why_not: Option<String> = None;
        for v in w.values.iter().filter(|v| !v.pass) {
            let Some(o) = verdict.sla.objectives.iter().find(|o| o.label == v.label) else {
                continue;
            };
            let bound_ns = o.bound.as_nanos() as i64;
            let (mut kept, mut client) = (0.0, 0.0);
            for (op, cause) in named {
                if op.done_ns >= start_ns && op.done_ns < end_ns && op.response_ns() > bound_ns {
                    kept += op.weight;
                    if *cause == Cause::Client {
                        client += op.weight;
                    }
                }
            }
            out.over += v.over;
            out.named += kept;
            out.client += client;
            let total = w.ops + w.errors;
            let allowed = total.saturating_sub((o.quantile * total as f64).ceil() as u64);
            let not_client = v.over as f64 * (1.0 - client / kept.max(1e-9));
            if kept < COVERED * v.over as f64 {
                why_not.get_or_insert(format!(
                    "{} of the window from {:.0} s failed on {} operations over {:.0} ms, of which only {kept:.0} were kept to be named",
                    o.label,
                    w.start_s,
                    v.over,
                    o.bound.as_secs_f64() * 1e3
                ));
            } else if not_client > allowed as f64 {
                why_not.get_or_insert(format!(
                    "{} of the window from {:.0} s: about {not_client:.0} of its {} operations over {:.0} ms were not the client's, more than the {allowed} it allows",
                    o.label,
                    w.start_s,
                    v.over,
                    o.bound.as_secs_f64() * 1e3
                ));
            }
        }
        if w.errors as f64 > verdict.sla.error_budget * (w.ops + w.errors) as f64 {
            why_not.get_or_insert(format!(
                "the window from {:.0} s failed its error budget, which the client does not",
                w.start_s
            ));
        }
        if let Some(target) = w
            .target_rate
            .filter(|t| w.achieved_rate < t * verdict.sla.min_rate_share)
        {
            let (a, b) = (
                from_ms as f64 + w.start_s * 1e3,
                from_ms as f64 + (w.start_s + w.window_s) * 1e3,
            );
            let late: u64 = timeline
                .iter()
                .filter(|s| (s.at_ms as f64) > a && (s.at_ms as f64) <= b)
                .map(|s| s.client_late_ops)
                .sum();
            let due = target * w.length_s;
            if (late as f64) < late_share * due {
                why_not.get_or_insert(format!(
                    "the window from {:.0} s fell short of its rate with {late} operations sent late by a free worker",
                    w.start_s
                ));
            }
        }
        match why_not {
            None => out.client_windows += 1,
            Some(why) => {
                out.not_client.get_or_insert(why);
            }
        }
    }
    (out.windows > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sla::judge::{ObjectiveValue, WindowVerdict};
    use crate::sla::spec::Sla;
    use std::time::Duration;

    /// An operation done at `at_s` into the measured span (which starts 5 s into the run), taking
    /// `ms`.
    fn op(at_s: f64, ms: f64) -> SlowOp {
        let done = 5_000_000_000 + (at_s * 1e9) as i64;
        SlowOp {
            op: 0,
            intended_ns: done - (ms * 1e6) as i64,
            from_ns: done - (ms * 1e6) as i64,
            sent_ns: Some(done - (ms * 1e6) as i64),
            done_ns: done,
            error: false,
            waited: true,
            weight: 1.0,
            trace: None,
        }
    }

    /// Two 10 s windows of 10,000 operations under p99.9<100ms; the second failed with `over`
    /// operations over 100 ms.
    fn verdict(over: u64) -> SlaVerdict {
        let sla = Sla::parse("p99.9<100ms/10s", 0.9, 0.01).unwrap();
        let window = |index: u64, over: u64| WindowVerdict {
            window_s: 10.0,
            index,
            start_s: 10.0 * index as f64,
            length_s: 10.0,
            ops: 10_000,
            errors: 0,
            achieved_rate: 1000.0,
            target_rate: Some(1000.0),
            values: vec![ObjectiveValue {
                label: "p99.9".into(),
                ms: if over > 10 { 150.0 } else { 50.0 },
                pass: over <= 10,
                over,
            }],
            judged: true,
            pass: over <= 10,
            reasons: Vec::new(),
        };
        SlaVerdict {
            sla,
            target_rate: Some(1000.0),
            rate_shape: None,
            pass: false,
            windows_judged: 2,
            windows_failed: 1,
            objectives: Vec::new(),
            windows: vec![window(0, 5), window(1, over)],
            client_bound: None,
            machine_bound: None,
        }
    }

    fn judged(v: &SlaVerdict, named: &[(SlowOp, Cause)]) -> Failing {
        let span = Span {
            from: Duration::from_secs(5),
            to: Duration::from_secs(25),
        };
        failing(v, named, span, (&[], 0), 0.01).unwrap()
    }

    #[test]
    fn a_window_is_the_clients_when_without_its_operations_it_would_have_passed() {
        // 30 over 100 ms in the second window; p99.9 of 10,000 allows 10.
        let mut named: Vec<(SlowOp, Cause)> = (0..25)
            .map(|i| (op(12.0 + i as f64 * 0.1, 150.0), Cause::Client))
            .collect();
        named.extend((0..5).map(|i| (op(15.0 + i as f64 * 0.1, 200.0), Cause::GcPause)));
        // The client's operations over p99 but under the bound, and in the passing window, are
        // not the failing ones.
        named.extend((0..50).map(|i| (op(2.0 + i as f64 * 0.01, 150.0), Cause::Client)));
        named.extend((0..50).map(|i| (op(16.0 + i as f64 * 0.01, 20.0), Cause::GcPause)));
        let f = judged(&verdict(30), &named);
        assert_eq!((f.windows, f.client_windows, f.over), (1, 1, 30));
        assert!(
            f.all_client() && (f.client_share().unwrap() - 25.0 / 30.0).abs() < 1e-12,
            "{f:?}"
        );
    }

    #[test]
    fn a_window_its_gc_pauses_failed_is_not_the_clients_however_many_slow_ones_the_client_has() {
        // 30 over 100 ms, 20 of them a GC pause's: more than the 10 allowed without the client.
        let mut named: Vec<(SlowOp, Cause)> = (0..20)
            .map(|i| (op(12.0 + i as f64 * 0.1, 180.0), Cause::GcPause))
            .collect();
        named.extend((0..10).map(|i| (op(14.0 + i as f64 * 0.1, 120.0), Cause::Client)));
        // Many more of the client's just over the p99 of the run.
        named.extend((0..500).map(|i| (op(10.0 + i as f64 * 0.01, 8.0), Cause::Client)));
        let f = judged(&verdict(30), &named);
        assert_eq!((f.windows, f.client_windows), (1, 0));
        assert!(f.not_client.as_deref().unwrap().contains("about 20 of its 30"), "{f:?}");
        assert!(!f.all_client());
    }

    #[test]
    fn failing_operations_that_were_not_kept_are_not_laid_at_the_clients_door() {
        // 100 over the bound, 10 kept, all the client's: too few to judge the window by.
        let named: Vec<(SlowOp, Cause)> = (0..10)
            .map(|i| (op(12.0 + i as f64 * 0.1, 150.0), Cause::Client))
            .collect();
        let f = judged(&verdict(100), &named);
        assert_eq!(f.client_windows, 0);
        assert!(f.not_client.unwrap().contains("only 10 were kept"));
    }
}
