//! A captured trace's own timing as a shape (`caplab run --replay`): its operations counted by the
//! millisecond they started in (the full query log's resolution), each millisecond a phase of
//! constant rate, so operation `i` is intended where the trace's `i`-th operation started (spread
//! evenly within its millisecond), `speed` times as fast. The phases are laid out from whole
//! counts rather than summed, so the `n`-th operation falls exactly at the end, where a last phase
//! of rate 0 holds: played once, nothing after the trace is due; looping (a capacity search's
//! steps), operation `n` starts the trace again a millisecond after its last.

use super::{Curve, Phase, Shape};

/// A millisecond of a replay at speed 1, in seconds.
const MS: f64 = 1e-3;

impl Shape {
    /// The shape of a trace whose operations started at these milliseconds (from the trace's
    /// start, in order, each entry a millisecond and how many started in it), `speed` times as
    /// fast, played once or looping; `text` names it in results.
    pub fn of_times(counts: &[(u64, u64)], speed: f64, looping: bool, text: String) -> Result<Shape, String> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(format!("a replay's speed must be above 0, not {speed}"));
        }
        let width = MS / speed;
        let mut phases = Vec::with_capacity(2 * counts.len() + 1);
        let (mut ops_before, mut next_ms) = (0u64, 0u64);
        let push = |phases: &mut Vec<Phase>, from_ms: u64, ms: u64, count: u64, before: u64| {
            let length = ms as f64 * width;
            phases.push(Phase {
                curve: Curve::Const(count as f64 / length),
                length,
                start: from_ms as f64 * width,
                ops_before: before as f64,
            });
        };
        for &(ms, count) in counts {
            if ms < next_ms || count == 0 {
                return Err(format!(
                    "{text}: its operations are not in order of their start (millisecond {ms} after {next_ms})"
                ));
            }
            if ms > next_ms {
                push(&mut phases, next_ms, ms - next_ms, 0, ops_before);
            }
            push(&mut phases, ms, 1, count, ops_before);
            ops_before += count;
            next_ms = ms + 1;
        }
        if ops_before == 0 {
            return Err(format!("{text} holds no operations to replay"));
        }
        push(&mut phases, next_ms, 1, 0, ops_before);
        Ok(Shape {
            phases,
            repeats: looping,
            lead: None,
            trace: Some(ops_before),
            text,
        })
    }

    /// How many operations a trace played once holds (None for any other shape, which goes on).
    pub fn operations(&self) -> Option<u64> {
        self.trace.filter(|_| !self.repeats)
    }

    /// Whether this is a captured trace's own timing (played once or looping).
    pub fn is_trace(&self) -> bool {
        self.trace.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_starts_in_its_millisecond_and_none_after_the_last() {
        // 2 in ms 0, none in 1-4, 4 in ms 5, 1 in ms 9.
        let counts = [(0, 2), (5, 4), (9, 1)];
        let s = Shape::of_times(&counts, 1.0, false, "t".into()).unwrap();
        let at = |i: u64| s.time_of(i as f64) * 1e3;
        assert_eq!(s.operations(), Some(7));
        assert!(
            (at(0) - 0.0).abs() < 1e-9 && (at(1) - 0.5).abs() < 1e-9,
            "{} {}",
            at(0),
            at(1)
        );
        for (i, want) in [(2, 5.0), (3, 5.25), (4, 5.5), (5, 5.75), (6, 9.0)] {
            assert!((at(i) - want).abs() < 1e-9, "op {i}: {} ms, not {want}", at(i));
        }
        assert!(s.time_of(7.0).is_infinite(), "nothing after the trace is due");
        assert_eq!(s.length(), Some(std::time::Duration::from_millis(11)));
        assert!(!s.piecewise_constant(), "summarised in pieces, not by its 1 ms phases");
        // Four times as fast: every time a quarter.
        let fast = Shape::of_times(&counts, 4.0, false, "t".into()).unwrap();
        for i in 0..7 {
            assert!((fast.time_of(i as f64) * 4.0 - s.time_of(i as f64)).abs() < 1e-12);
        }
        assert!(
            (fast.ops_before(0.00225) - 6.0).abs() < 1e-9,
            "six started by 9 ms at 1x"
        );
    }

    #[test]
    fn a_long_trace_lands_its_last_operation_exactly() {
        // 600,000 operations over ten minutes, 1 to 3 a millisecond: the count at the end is
        // whole, so the last is due and the next never is.
        let counts: Vec<(u64, u64)> = (0..300_000).map(|k| (2 * k, 1 + k % 3)).collect();
        let n: u64 = counts.iter().map(|c| c.1).sum();
        let s = Shape::of_times(&counts, 3.0, false, "t".into()).unwrap();
        assert!(s.time_of((n - 1) as f64).is_finite());
        assert!(s.time_of(n as f64).is_infinite());
        assert_eq!(s.ops_before(1e6), n as f64);
    }

    #[test]
    fn a_looping_trace_starts_again_a_millisecond_after_its_last_operation() {
        let counts = [(0, 2), (5, 4), (9, 1)];
        let s = Shape::of_times(&counts, 2.0, true, "t".into()).unwrap();
        assert_eq!(s.operations(), None, "a loop goes on");
        assert!(s.is_trace() && s.length().is_none());
        // At 2x a pass lasts 11 ms / 2; operation 7 is the second pass's first.
        for i in 0..7 {
            let again = s.time_of((i + 7) as f64) - s.time_of(i as f64);
            assert!((again - 0.0055).abs() < 1e-12, "op {i}: {again}");
        }
        assert!((s.mean_rate() - 7.0 / 0.0055).abs() < 1e-6);
    }

    #[test]
    fn out_of_order_or_empty_traces_and_a_bad_speed_are_refused() {
        assert!(
            Shape::of_times(&[(3, 1), (2, 1)], 1.0, false, "t".into())
                .unwrap_err()
                .contains("not in order")
        );
        assert!(
            Shape::of_times(&[], 1.0, false, "t".into())
                .unwrap_err()
                .contains("no operations")
        );
        assert!(
            Shape::of_times(&[(0, 1)], 0.0, false, "t".into())
                .unwrap_err()
                .contains("above 0")
        );
    }
}
