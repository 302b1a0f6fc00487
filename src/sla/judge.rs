//! Judging a run against a service level, window by window, as its intervals close.
//!
//! Windows are aligned to the start of the measured span (after warm-up): window k of length W holds the
//! intervals starting in [k·W, (k+1)·W). A window passes when every objective's percentile of
//! response time (of every due operation: timeouts, errors and never-sent ones included) is
//! within its bound, the achieved rate is at least the required share of
//! the target (runs with a rate; along a rate shape, the rate the shape asked over that
//! window's own seconds), and failed operations stay within the error budget. A
//! window where nothing completed is reported and fails; a trailing window shorter than half
//! its length is reported but not judged. The run passes when every judged window passes.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::spec::Sla;
use crate::console::group;
use crate::engine::Asked;
use crate::metrics::Interval;
use crate::metrics::recorder::new_histogram;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectiveValue {
    pub label: String,
    pub ms: f64,
    pub pass: bool,
    /// The window's operations over the objective's bound (0 in results from before it was
    /// counted): those that failed it, when it failed.
    #[serde(default)]
    pub over: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WindowVerdict {
    pub window_s: f64,
    pub index: u64,
    /// Since the start of the measured window.
    pub start_s: f64,
    pub length_s: f64,
    pub ops: u64,
    pub errors: u64,
    pub achieved_rate: f64,
    /// The rate asked over the window (None flat out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<f64>,
    pub values: Vec<ObjectiveValue>,
    pub judged: bool,
    pub pass: bool,
    /// Why it failed (or was not judged).
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectiveResult {
    pub objective: String,
    /// The largest value over judged windows (E3's "p99.9 max").
    pub worst_ms: Option<f64>,
    pub worst_window_start_s: Option<f64>,
    pub failed_windows: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SlaVerdict {
    pub sla: Sla,
    /// The run's constant rate (None flat out, or along a shape).
    pub target_rate: Option<f64>,
    /// The rate shape whose rate each window had to achieve (`ramp:1k..5k/2m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_shape: Option<String>,
    pub pass: bool,
    pub windows_judged: usize,
    pub windows_failed: usize,
    pub objectives: Vec<ObjectiveResult>,
    pub windows: Vec<WindowVerdict>,
    /// Why the failure was the client's rather than the cluster's, when it was (the run's
    /// client audit: the client made every failing window fail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_bound: Option<String>,
    /// Why the failure was the shared machine's, when the client made the failing windows fail
    /// only because its nodes took the cores they shared (the run's client audit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_bound: Option<String>,
}

/// The window being filled for one window length.
struct Lane {
    window: Duration,
    /// Indexes into the SLA's objectives that use this window length.
    objectives: Vec<usize>,
    index: Option<u64>,
    length: Duration,
    hist: Histogram<u64>,
    ok: u64,
    errors: u64,
    /// Successful operations, warm-up ones included, in the window's time.
    throughput: u64,
}

pub struct Judge {
    sla: Sla,
    /// What the schedule asked, in the intervals' time.
    asked: Asked,
    lanes: Vec<Lane>,
    /// Start of the first reported interval: windows count from here.
    origin: Option<Duration>,
    windows: Vec<WindowVerdict>,
}

impl Judge {
    /// `asked`: the rate the run's schedule asks (flat-out runs have no rate to achieve).
    pub fn new(sla: &Sla, asked: Asked) -> Judge {
        let lanes = sla
            .windows()
            .into_iter()
            .map(|window| Lane {
                window,
                objectives: (0..sla.objectives.len())
                    .filter(|&i| sla.objectives[i].window == window)
                    .collect(),
                index: None,
                length: Duration::ZERO,
                hist: new_histogram(),
                ok: 0,
                errors: 0,
                throughput: 0,
            })
            .collect();
        Judge {
            sla: sla.clone(),
            asked: match asked {
                Asked::Rate(r) if r <= 0.0 => Asked::FlatOut,
                a => a,
            },
            lanes,
            origin: None,
            windows: Vec::new(),
        }
    }

    /// Takes one closed interval; returns the windows it closed (to show as the run goes).
    pub fn feed(&mut self, iv: &Interval) -> Vec<WindowVerdict> {
        let mut closed = Vec::new();
        if !iv.is_reported() {
            return closed;
        }
        if iv.warmup {
            // The interval closing warm-up can hold the first measured operations (those that
            // completed as it closed): they belong to the first window, its time does not.
            for lane in &mut self.lanes {
                for o in &iv.ops {
                    lane.hist.add(&o.response).expect("same bounds");
                    lane.ok += o.ok;
                    lane.errors += o.error_count();
                }
            }
            return closed;
        }
        let origin = *self.origin.get_or_insert(iv.start);
        let offset = iv.start.saturating_sub(origin);
        for li in 0..self.lanes.len() {
            let idx = (offset.as_nanos() / self.lanes[li].window.as_nanos()) as u64;
            if let Some(cur) = self.lanes[li].index
                && cur != idx
            {
                closed.push(self.close(li));
                // Windows the run skipped entirely (nothing closed in them) are empty.
                for gap in cur + 1..idx {
                    self.lanes[li].index = Some(gap);
                    self.lanes[li].length = self.lanes[li].window;
                    closed.push(self.close(li));
                }
            }
            let lane = &mut self.lanes[li];
            lane.index = Some(idx);
            lane.length += iv.length;
            for o in &iv.ops {
                lane.hist.add(&o.response).expect("same bounds");
                lane.ok += o.ok;
                lane.errors += o.error_count();
                // With a warm-up counted in operations, the first measured interval also ran
                // warm-up operations: they count toward its throughput.
                lane.throughput += o.ok + o.warmup_ops;
            }
        }
        self.windows.extend(closed.iter().cloned());
        closed
    }

    /// Closes the windows still open and gives the verdict on the whole run.
    pub fn finish(mut self) -> SlaVerdict {
        for li in 0..self.lanes.len() {
            if self.lanes[li].index.is_some() {
                let w = self.close(li);
                // A sliver after the end where nothing completed says nothing.
                if w.judged || w.ops + w.errors > 0 {
                    self.windows.push(w);
                }
            }
        }
        let judged: Vec<&WindowVerdict> = self.windows.iter().filter(|w| w.judged).collect();
        let objectives = self
            .sla
            .objectives
            .iter()
            .map(|o| {
                let mine = judged.iter().filter(|w| w.window_s == o.window.as_secs_f64());
                let values = mine.filter_map(|w| {
                    w.values
                        .iter()
                        .find(|v| v.label == o.label)
                        .filter(|_| w.ops > 0)
                        .map(|v| (v.ms, w.start_s, v.pass))
                });
                let mut worst: Option<(f64, f64)> = None;
                let mut failed = 0;
                for (ms, start, pass) in values {
                    if worst.is_none_or(|(m, _)| ms > m) {
                        worst = Some((ms, start));
                    }
                    failed += usize::from(!pass);
                }
                ObjectiveResult {
                    objective: o.text(),
                    worst_ms: worst.map(|w| w.0),
                    worst_window_start_s: worst.map(|w| w.1),
                    failed_windows: failed,
                }
            })
            .collect();
        let windows_failed = judged.iter().filter(|w| !w.pass).count();
        SlaVerdict {
            pass: !judged.is_empty() && windows_failed == 0,
            windows_judged: judged.len(),
            windows_failed,
            sla: self.sla,
            target_rate: match self.asked {
                Asked::Rate(r) => Some(r),
                _ => None,
            },
            rate_shape: match &self.asked {
                Asked::Shape(s) => Some(s.text.clone()),
                _ => None,
            },
            objectives,
            windows: self.windows,
            client_bound: None,
            machine_bound: None,
        }
    }

    fn close(&mut self, li: usize) -> WindowVerdict {
        let lane = &mut self.lanes[li];
        let index = lane.index.take().expect("an open window");
        let from = self.origin.unwrap_or_default() + lane.window * index as u32;
        let target = self.asked.over(from, lane.length);
        let secs = lane.length.as_secs_f64();
        let mut reasons = Vec::new();
        let judged = lane.length * 2 >= lane.window;
        if !judged {
            reasons.push(format!("only {secs:.1}s long: not judged"));
        }
        let attempted = lane.ok + lane.errors;
        if attempted == 0 {
            reasons.push("no operation completed".into());
        }
        let values = lane
            .objectives
            .iter()
            .map(|&i| {
                let o = &self.sla.objectives[i];
                let ns = if o.quantile >= 1.0 {
                    lane.hist.max()
                } else {
                    lane.hist.value_at_quantile(o.quantile)
                };
                let ms = ns as f64 / 1e6;
                let pass = lane.ok > 0 && ns as u128 <= o.bound.as_nanos();
                if lane.ok > 0 && !pass {
                    reasons.push(format!(
                        "{} {:.2} ms > {:.2} ms",
                        o.label,
                        ms,
                        o.bound.as_secs_f64() * 1e3
                    ));
                }
                let bound = u64::try_from(o.bound.as_nanos()).unwrap_or(u64::MAX);
                ObjectiveValue {
                    label: o.label.clone(),
                    ms,
                    pass,
                    over: lane.hist.len() - lane.hist.count_between(0, bound),
                }
            })
            .collect::<Vec<_>>();
        let achieved_rate = if secs > 0.0 {
            lane.throughput.max(lane.ok) as f64 / secs
        } else {
            0.0
        };
        if let Some(target) = target
            && attempted > 0
            && achieved_rate < target * self.sla.min_rate_share
        {
            reasons.push(format!(
                "{} op/s < {:.0}% of {} op/s",
                group(achieved_rate),
                self.sla.min_rate_share * 100.0,
                group(target)
            ));
        }
        if attempted > 0 && lane.errors as f64 > self.sla.error_budget * attempted as f64 {
            reasons.push(format!(
                "{} of {} operations failed (budget {}%)",
                lane.errors,
                attempted,
                self.sla.error_budget * 100.0
            ));
        }
        let verdict = WindowVerdict {
            window_s: lane.window.as_secs_f64(),
            index,
            start_s: index as f64 * lane.window.as_secs_f64(),
            length_s: secs,
            ops: lane.ok,
            errors: lane.errors,
            achieved_rate,
            target_rate: target,
            values,
            judged,
            pass: judged && reasons.is_empty(),
            reasons,
        };
        lane.hist.reset();
        lane.length = Duration::ZERO;
        lane.ok = 0;
        lane.errors = 0;
        lane.throughput = 0;
        verdict
    }
}

impl WindowVerdict {
    /// One line: `window 30-40s  p99.9 85.20 ms  2,000 op/s  pass`.
    pub fn line(&self) -> String {
        let values: Vec<String> = self
            .values
            .iter()
            .map(|v| format!("{} {:.2} ms", v.label, v.ms))
            .collect();
        let verdict = match (self.judged, self.pass) {
            (false, _) => "not judged".to_string(),
            (true, true) => "pass".to_string(),
            (true, false) => format!("FAIL: {}", self.reasons.join("; ")),
        };
        format!(
            "window {:.0}-{:.0}s  {}  {} op/s  {}",
            self.start_s,
            self.start_s + self.window_s,
            values.join("  "),
            group(self.achieved_rate),
            verdict
        )
    }
}

impl SlaVerdict {
    /// The summary lines for the terminal.
    pub fn render(&self) -> String {
        let mut head = format!("SLA {}", self.sla.text());
        if let Some(r) = self.target_rate {
            head.push_str(&format!(
                ", rate >= {:.0}% of {} op/s",
                self.sla.min_rate_share * 100.0,
                group(r)
            ));
        }
        if let Some(shape) = &self.rate_shape {
            head.push_str(&format!(
                ", rate >= {:.0}% of what {shape} asked in each window",
                self.sla.min_rate_share * 100.0
            ));
        }
        head.push_str(&format!(", errors <= {}%", self.sla.error_budget * 100.0));
        let verdict = if self.pass { "PASS" } else { "FAIL" };
        let mut out = format!(
            "{head}: {verdict} ({} of {} windows failed)",
            self.windows_failed, self.windows_judged
        );
        for o in &self.objectives {
            if let (Some(ms), Some(at)) = (o.worst_ms, o.worst_window_start_s) {
                out.push_str(&format!("\n  {}: worst {ms:.2} ms (window from {at:.0}s)", o.objective));
            }
        }
        if self.windows_judged == 0 {
            out.push_str("\n  no window was long enough to judge: measure for at least one whole window");
        }
        if let Some(why) = &self.client_bound {
            out.push_str(&format!(
                "\n  CLIENT-BOUND: {why}; the failure is caplab's, not the cluster's"
            ));
        }
        if let Some(why) = &self.machine_bound {
            out.push_str(&format!(
                "\n  MACHINE-BOUND: {why}; the failure is the shared machine's: the cluster failed it with caplab beside it"
            ));
        }
        for w in self.windows.iter().filter(|w| w.judged && !w.pass).take(5) {
            out.push_str(&format!("\n  {}", w.line()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OpStats;
    use crate::metrics::recorder::ErrorKind;

    /// One second of `ops` operations at `ms` each (and `errors` timeouts), starting at `start_s`.
    fn second(start_s: u64, ops: u64, ms: u64, errors: u64) -> Interval {
        let mut o = OpStats::default();
        for _ in 0..ops {
            o.response.record(ms * 1_000_000).unwrap();
        }
        o.ok = ops;
        o.errors[ErrorKind::ServerTimeout as usize] = errors;
        Interval {
            start: Duration::from_secs(start_s),
            length: Duration::from_secs(1),
            warmup: false,
            ops: vec![o],
            sent: 0,
        }
    }

    fn sla(text: &str) -> Sla {
        Sla::parse(text, 0.97, 0.001).unwrap()
    }

    fn judge(s: &Sla, rate: Option<f64>, seconds: &[Interval]) -> SlaVerdict {
        let mut j = Judge::new(s, rate.map_or(Asked::FlatOut, Asked::Rate));
        for iv in seconds {
            j.feed(iv);
        }
        j.finish()
    }

    #[test]
    fn along_a_shape_each_window_must_achieve_what_the_shape_asked_in_it() {
        let s = sla("p99<10ms/2s");
        let shape = crate::engine::Shape::parse("steps:1k,2k/4s").unwrap();
        let asked = || Asked::Shape(std::sync::Arc::new(shape.clone()));
        let kept_up: Vec<Interval> = (0..8)
            .map(|t| second(t, if t < 4 { 1000 } else { 2000 }, 2, 0))
            .collect();
        let mut j = Judge::new(&s, asked());
        kept_up.iter().for_each(|iv| drop(j.feed(iv)));
        let v = j.finish();
        assert!(v.pass, "{}", v.render());
        let targets: Vec<Option<f64>> = v.windows.iter().map(|w| w.target_rate).collect();
        assert_eq!(targets, [Some(1000.0), Some(1000.0), Some(2000.0), Some(2000.0)]);
        assert_eq!((v.target_rate, v.rate_shape.as_deref()), (None, Some("steps:1k,2k/4s")));
        assert!(
            v.render().contains("of what steps:1k,2k/4s asked in each window"),
            "{}",
            v.render()
        );
        // Holding 1,000 op/s while the shape asks 2,000 fails the second step's windows only.
        let mut j = Judge::new(&s, asked());
        (0..8).for_each(|t| drop(j.feed(&second(t, 1000, 2, 0))));
        let v = j.finish();
        let failed: Vec<(u64, String)> = v
            .windows
            .iter()
            .filter(|w| !w.pass)
            .map(|w| (w.index, w.reasons.join("; ")))
            .collect();
        assert_eq!(
            failed,
            [2, 3].map(|i| (i, "1,000 op/s < 97% of 2,000 op/s".to_string()))
        );
    }

    #[test]
    fn one_bad_window_fails_the_run() {
        let s = sla("p99<10ms/2s");
        let mut run: Vec<Interval> = (0..10).map(|t| second(t, 1000, 2, 0)).collect();
        assert!(judge(&s, Some(1000.0), &run).pass);
        // 2% of one second's operations are slow: p99 of its 2 s window is over the bound.
        run[5] = second(5, 1000, 2, 0);
        for _ in 0..40 {
            run[5].ops[0].response.record(50_000_000).unwrap();
        }
        run[5].ops[0].ok += 40;
        let v = judge(&s, Some(1000.0), &run);
        assert!(!v.pass);
        assert_eq!((v.windows_judged, v.windows_failed), (5, 1));
        let bad = v.windows.iter().find(|w| !w.pass).unwrap();
        assert_eq!((bad.index, bad.start_s), (2, 4.0), "window 2 holds seconds 4 and 5");
        assert!(bad.reasons[0].starts_with("p99 50."), "{:?}", bad.reasons);
        assert!(v.objectives[0].worst_ms.unwrap() >= 50.0);
        assert!(v.render().contains("FAIL (1 of 5 windows failed)"), "{}", v.render());
    }

    #[test]
    fn windows_align_to_the_start_of_measurement() {
        // Measurement starts at 3 s (after warm-up): windows are 3-8 s and 8-13 s of the run.
        let s = sla("p50<10ms/5s");
        let mut run = vec![Interval {
            warmup: true,
            ..second(2, 0, 1, 0)
        }];
        run[0].ops[0].warmup_ops = 500;
        run.extend((3..13).map(|t| second(t, 100, 1, 0)));
        // The interval closing warm-up at 3 s caught 2 measured operations.
        run[0].ops[0].ok = 2;
        run[0].ops[0].response.record(1_000_000).unwrap();
        run[0].ops[0].response.record(1_000_000).unwrap();
        let v = judge(&s, Some(100.0), &run);
        let starts: Vec<f64> = v.windows.iter().map(|w| w.start_s).collect();
        assert_eq!(starts, vec![0.0, 5.0]);
        assert_eq!(v.windows[0].ops, 502, "the warm-up interval's measured operations");
        assert!(v.windows.iter().all(|w| w.length_s == 5.0 && w.achieved_rate >= 100.0));
        assert!(v.pass, "{:?}", v.windows);
    }

    #[test]
    fn empty_short_slow_and_failing_windows_are_reported() {
        let s = sla("p99<10ms/2s");
        // Seconds 2-3 are missing (nothing closed), second 6 is alone in its window.
        let run = vec![
            second(0, 100, 1, 0),
            second(1, 100, 1, 0),
            second(4, 100, 1, 0),
            second(5, 100, 1, 0),
            second(6, 100, 1, 0),
        ];
        let v = judge(&s, None, &run);
        let empty = &v.windows[1];
        assert!(
            !empty.pass && empty.judged && empty.reasons.iter().any(|r| r.contains("no operation")),
            "{empty:?}"
        );
        let last = v.windows.last().unwrap();
        assert!(
            last.judged && last.pass,
            "a trailing window of half the length is judged"
        );
        assert!(!v.pass);

        let short = vec![second(0, 100, 1, 0), second(1, 100, 1, 0), second(2, 10, 1, 0)];
        let v = judge(&sla("p99<10ms/4s"), None, &short);
        assert!(v.pass, "3 of 4 seconds: judged and passing");
        let v = judge(&sla("p99<10ms/10s"), None, &short);
        assert!(!v.pass && v.windows_judged == 0 && !v.windows[0].judged);
        assert!(v.render().contains("no window was long enough"));

        // Behind on rate, or over the error budget.
        let slow = vec![second(0, 900, 1, 0), second(1, 900, 1, 0)];
        let v = judge(&s, Some(1000.0), &slow);
        assert!(
            !v.pass && v.windows[0].reasons[0].contains("< 97% of 1,000 op/s"),
            "{:?}",
            v.windows
        );
        assert!(judge(&s, None, &slow).pass, "flat-out runs have no rate to miss");
        let failing = vec![second(0, 1000, 1, 3), second(1, 1000, 1, 0)];
        let v = judge(&s, Some(1000.0), &failing);
        assert!(
            !v.pass && v.windows[0].reasons[0].contains("3 of 2003 operations failed"),
            "{:?}",
            v.windows
        );
    }
}
