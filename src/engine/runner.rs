//! Running a workload: spawning the workers, closing intervals, and ending the run when
//! its length is reached, when told to stop (Ctrl-C), or when the cluster stops answering.

use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tokio::time::sleep_until;

use super::{Schedule, Workload};
use crate::metrics::recorder::Completion;
use crate::metrics::{Interval, OpStats, Recorder};

/// Tokio's timers fire on a 1 ms grid, after their deadline (and the poll that waits for them
/// rounds up to whole milliseconds too): a worker sleeping until its operation's intended start
/// would send it ~1 ms late on average, and that delay, the client's own, would be in every
/// response time (at 5,000 op/s: median 1.42 ms for a 0.36 ms service time). Workers wake for
/// the tick within this much before the intended start instead, so operations go out within
/// about a millisecond either side of it, and the recorder measures response time from the
/// earlier of the intended and the actual start: a late start still counts in full, an early
/// one never makes a response look shorter than its service time. The wake-ups per second are
/// the same; the measured median becomes 0.49 ms.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// What is excluded from the results at the start of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warmup {
    None,
    Time(Duration),
    Ops(u64),
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Operations per second; 0 runs flat out.
    pub rate: f64,
    /// Operations in flight at most (one worker task each).
    pub concurrency: usize,
    /// Length of the measured window (after warm-up).
    pub duration: Option<Duration>,
    /// Measured operations (after warm-up).
    pub ops: Option<u64>,
    pub warmup: Warmup,
    pub interval: Duration,
    /// End the run when no operation has succeeded, and some failed, for this long.
    pub give_up_after: Duration,
    /// After a stop, how long in-flight operations may take to finish.
    pub drain_timeout: Duration,
    pub shards: usize,
}

/// Receives each closed interval (warm-up ones too, flagged) as the run goes on.
pub trait IntervalSink {
    fn interval(&mut self, interval: &Interval) -> Result<()>;
}

#[derive(Debug, Clone, PartialEq)]
pub enum EndReason {
    /// The configured duration or operation count was reached.
    Completed,
    /// Stopped from outside (Ctrl-C).
    Interrupted,
    /// Nothing succeeded for `give_up_after`.
    ClusterLost { last_errors: String },
    /// Results could not be written.
    OutputFailed(String),
}

#[derive(Debug)]
pub struct RunEnd {
    pub reason: EndReason,
    /// Measured window only, per operation type.
    pub totals: Vec<OpStats>,
    pub measured: Duration,
    /// Operations the schedule called for that never started.
    pub not_started: u64,
    pub started_ops: u64,
}

/// Runs `workload` under `cfg`, handing each interval to `sink`. `stop` ends it early.
pub async fn run<W: Workload>(
    workload: Arc<W>,
    cfg: &EngineConfig,
    stop: Arc<AtomicBool>,
    sink: &mut dyn IntervalSink,
) -> RunEnd {
    let names = workload.op_names();
    let recorder = Arc::new(Recorder::new(cfg.shards, names.len()));
    let t0 = Instant::now();
    let schedule = Schedule::new(t0, cfg.rate);
    let warmup_end = match cfg.warmup {
        Warmup::Time(d) => t0 + d,
        _ => t0,
    };
    let warmup_ops = match cfg.warmup {
        Warmup::Ops(n) => n,
        _ => 0,
    };
    let end: Option<Instant> = cfg.duration.map(|d| warmup_end + d);
    let limit = cfg.ops.map(|n| n + warmup_ops).unwrap_or(u64::MAX);
    let started_total = Arc::new(AtomicU64::new(0));

    let concurrency = cfg.concurrency.max(1);
    let mut workers = JoinSet::new();
    for w in 0..concurrency {
        let workload = workload.clone();
        let recorder = recorder.clone();
        let stop = stop.clone();
        let started_total = started_total.clone();
        let shard = w % recorder.shard_count();
        workers.spawn(async move {
            let mut state = workload.worker(w);
            let mut started = 0u64;
            let mut i = w as u64;
            while i < limit && !stop.load(Ordering::Relaxed) {
                let (intended, sent) = match schedule.intended(i) {
                    Some(t) => {
                        if end.is_some_and(|e| t >= e) {
                            break;
                        }
                        let wake = t.checked_sub(TIMER_TICK).unwrap_or(t);
                        if wake > Instant::now() {
                            sleep_until(wake.into()).await;
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        (t, Instant::now())
                    }
                    // Flat out there is no schedule to fall behind: intended is the send.
                    None => {
                        let now = Instant::now();
                        (now, now)
                    }
                };
                // Behind schedule past the end: what was not started by then never will be.
                if end.is_some_and(|e| sent >= e) {
                    break;
                }
                let outcome = workload.execute(&mut state, i).await;
                let done = Instant::now();
                let measured = i >= warmup_ops && intended >= warmup_end;
                recorder.record(
                    shard,
                    &Completion {
                        op: outcome.op,
                        intended,
                        sent,
                        done,
                        result: outcome.result,
                        measured,
                    },
                );
                started += 1;
                i += concurrency as u64;
            }
            started_total.fetch_add(started, Ordering::Relaxed);
        });
    }

    let mut interval = Interval {
        start: Duration::ZERO,
        length: Duration::ZERO,
        warmup: true,
        ops: (0..names.len()).map(|_| OpStats::default()).collect(),
    };
    let mut totals: Vec<OpStats> = (0..names.len()).map(|_| OpStats::default()).collect();
    let mut tick_start = t0;
    let mut window: Option<(Instant, Instant)> = None;
    let mut failing_since: Option<Instant> = None;
    let mut reason = EndReason::Completed;
    let mut drain_deadline: Option<Instant> = None;

    loop {
        // Close intervals on the second, and at the end of warm-up so it stays out of the window.
        let mut next_tick = tick_start + cfg.interval;
        if tick_start < warmup_end && warmup_end < next_tick {
            next_tick = warmup_end;
        }
        let finished = tokio::select! {
            _ = sleep_until(next_tick.into()) => false,
            joined = workers.join_next() => match joined {
                None => true,
                Some(_) => continue,
            },
        };
        let now = if finished { Instant::now() } else { next_tick };
        recorder.drain_into(&mut interval.ops);
        let measured_ops: u64 = interval.ops.iter().map(|o| o.ok + o.error_count()).sum();
        interval.start = tick_start - t0;
        interval.length = now - tick_start;
        // Warm-up operations are counted apart by the recorder, so whatever measured
        // operations an interval holds belong to the results, whatever its label.
        interval.warmup = match cfg.warmup {
            Warmup::Time(_) => tick_start < warmup_end,
            Warmup::Ops(_) => window.is_none() && measured_ops == 0,
            Warmup::None => false,
        };
        if measured_ops > 0 || !interval.warmup {
            let from = match cfg.warmup {
                Warmup::Time(_) => warmup_end,
                Warmup::None => t0,
                Warmup::Ops(_) => tick_start,
            };
            window.get_or_insert((from, now)).1 = now;
        }
        for (t, o) in totals.iter_mut().zip(&interval.ops) {
            t.add(o);
        }
        if let Err(e) = sink.interval(&interval)
            && reason == EndReason::Completed
        {
            reason = EndReason::OutputFailed(format!("{e:#}"));
            stop.store(true, Ordering::Relaxed);
        }

        let ok: u64 = interval.ops.iter().map(|o| o.ok + o.warmup_ops).sum();
        let errors: u64 = interval.ops.iter().map(|o| o.error_count()).sum();
        if ok > 0 {
            failing_since = None;
        } else if errors > 0 {
            let since = *failing_since.get_or_insert(tick_start);
            if now - since >= cfg.give_up_after && reason == EndReason::Completed {
                reason = EndReason::ClusterLost {
                    last_errors: describe_errors(&interval.ops),
                };
                stop.store(true, Ordering::Relaxed);
            }
        }
        tick_start = now;
        if stop.load(Ordering::Relaxed) && reason == EndReason::Completed {
            reason = EndReason::Interrupted;
        }
        if finished {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            let deadline = *drain_deadline.get_or_insert(now + cfg.drain_timeout);
            if now >= deadline {
                // Operations the driver did not finish in time are abandoned, not recorded.
                workers.abort_all();
            }
        }
    }

    let started_ops = started_total.load(Ordering::Relaxed);
    let due = match (end, cfg.ops) {
        (Some(e), _) => schedule.due_before(e).min(limit),
        (None, Some(_)) if schedule.is_open() => limit,
        _ => 0,
    };
    RunEnd {
        reason,
        totals,
        measured: window.map(|(a, b)| b - a).unwrap_or_default(),
        not_started: due.saturating_sub(started_ops),
        started_ops,
    }
}

fn describe_errors(ops: &[OpStats]) -> String {
    let mut all = OpStats::default();
    ops.iter().for_each(|o| all.add(o));
    crate::metrics::ErrorKind::ALL
        .iter()
        .filter(|k| all.errors[**k as usize] > 0)
        .map(|k| format!("{} {}", all.errors[*k as usize], k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testing::Stalling;
    use crate::metrics::ErrorKind;

    struct Collect(Vec<Interval>);
    impl IntervalSink for Collect {
        fn interval(&mut self, i: &Interval) -> Result<()> {
            self.0.push(i.clone());
            Ok(())
        }
    }

    fn cfg(rate: f64, concurrency: usize, secs: u64) -> EngineConfig {
        EngineConfig {
            rate,
            concurrency,
            duration: Some(Duration::from_secs(secs)),
            ops: None,
            warmup: Warmup::None,
            interval: Duration::from_secs(1),
            give_up_after: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(2),
            shards: 4,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_one_second_stall_shows_in_response_time_as_the_open_model_predicts() {
        // 1,000 ops/s, 4 in flight: a 1 s stall holds the 4 in flight and leaves the next
        // ~1,000 operations waiting behind them.
        let w = Arc::new(Stalling {
            t0: Instant::now(),
            service: Duration::ZERO,
            stall_at: Duration::from_millis(1000),
            stall: Duration::from_secs(1),
            fail: false,
        });
        let mut sink = Collect(Vec::new());
        let end = run(w, &cfg(1000.0, 4, 4), Arc::new(AtomicBool::new(false)), &mut sink).await;
        assert_eq!(end.reason, EndReason::Completed);
        let t = &end.totals[0];
        assert!(
            (3950..=4000).contains(&t.ok),
            "all ~4,000 scheduled operations ran: {}",
            t.ok
        );
        let over = |ms: u64| t.ok - t.response.count_between(0, ms * 1_000_000);
        let delayed = over(10);
        assert!(
            (900..=1100).contains(&delayed),
            "~1,000 operations waited behind the stall, got {delayed}"
        );
        // Spread evenly from ~1 s down to ~0: about a quarter in each quarter second.
        for (lo, hi) in [(10, 250), (250, 500), (500, 750), (750, 1000)] {
            let n = t.response.count_between(lo * 1_000_000, hi * 1_000_000);
            assert!(
                (180..=320).contains(&n),
                "{n} operations with response time in {lo}..{hi} ms"
            );
        }
        assert!(
            t.response.max() >= 990_000_000 && t.response.max() <= 1_100_000_000,
            "max {}",
            t.response.max()
        );
        // Service time saw only the stalled four: the rest were sent late, not slowly served.
        let slow_service = t.ok - t.service.count_between(0, 10_000_000);
        assert!(slow_service <= 8, "{slow_service} operations had a slow service time");
        assert!(t.late >= 900, "late starts are counted: {}", t.late);
        // One interval per second, in order, none warm-up.
        assert!(sink.0.len() >= 4 && sink.0.iter().all(|i| !i.warmup));
        assert!(sink.0.windows(2).all(|p| p[1].start == p[0].start + p[0].length));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_timer_grid_does_not_add_a_millisecond_to_response_times() {
        // 2,000 ops/s of instant operations: what response time holds is the engine's own
        // send lateness. Waiting for each intended start on the 1 ms timer grid would put the
        // median near 1 ms; rounding to the nearest tick keeps it a fraction of one.
        let w = Arc::new(Stalling {
            t0: Instant::now(),
            service: Duration::ZERO,
            stall_at: Duration::from_secs(99),
            stall: Duration::ZERO,
            fail: false,
        });
        let end = run(
            w,
            &cfg(2000.0, 8, 3),
            Arc::new(AtomicBool::new(false)),
            &mut Collect(Vec::new()),
        )
        .await;
        let t = &end.totals[0];
        assert!((5900..=6000).contains(&t.ok), "{}", t.ok);
        let median = t.response.value_at_quantile(0.5);
        assert!(median < 600_000, "median response {median} ns for instant operations");
        assert!(
            median >= t.service.value_at_quantile(0.5) && t.response.min() >= t.service.min(),
            "response time is never shorter than service time"
        );
        assert_eq!(t.late, 0, "nothing started 10 ms late");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn warmup_is_left_out_and_ops_limit_is_exact() {
        let w = Arc::new(Stalling {
            t0: Instant::now(),
            service: Duration::from_micros(100),
            stall_at: Duration::from_secs(99),
            stall: Duration::ZERO,
            fail: false,
        });
        let mut c = cfg(2000.0, 8, 0);
        c.duration = None;
        c.ops = Some(3000);
        c.warmup = Warmup::Time(Duration::from_millis(500));
        let mut sink = Collect(Vec::new());
        let end = run(w, &c, Arc::new(AtomicBool::new(false)), &mut sink).await;
        let warm: u64 = sink.0.iter().map(|i| i.ops[0].warmup_ops).sum();
        assert!(
            (990..=1010).contains(&warm),
            "half a second at 2,000/s is warm-up: {warm}"
        );
        assert_eq!(
            end.totals[0].ok + warm,
            3000,
            "the limit counts every operation started"
        );
        assert!(sink.0[0].warmup && !sink.0.last().unwrap().warmup);
        let logged: u64 = sink.0.iter().map(|i| i.ops[0].ok).sum();
        assert_eq!(
            logged, end.totals[0].ok,
            "intervals hold exactly the measured operations"
        );
        assert!(
            end.measured >= Duration::from_millis(990) && end.measured <= Duration::from_millis(1100),
            "{:?}",
            end.measured
        );
        assert_eq!(sink.0[0].length, Duration::from_millis(500), "warm-up ends an interval");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn gives_up_when_nothing_succeeds() {
        let w = Arc::new(Stalling {
            t0: Instant::now(),
            service: Duration::from_millis(1),
            stall_at: Duration::from_secs(99),
            stall: Duration::ZERO,
            fail: true,
        });
        let begin = Instant::now();
        let end = run(
            w,
            &cfg(500.0, 4, 60),
            Arc::new(AtomicBool::new(false)),
            &mut Collect(Vec::new()),
        )
        .await;
        assert!(
            matches!(end.reason, EndReason::ClusterLost { ref last_errors } if last_errors.contains("connection")),
            "{:?}",
            end.reason
        );
        assert!(
            begin.elapsed() < Duration::from_secs(6),
            "stopped within the give-up bound"
        );
        assert!(end.totals[0].errors[ErrorKind::Connection as usize] > 500);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stop_flag_interrupts_and_keeps_what_was_measured() {
        let w = Arc::new(Stalling {
            t0: Instant::now(),
            service: Duration::from_micros(100),
            stall_at: Duration::from_secs(99),
            stall: Duration::ZERO,
            fail: false,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            s2.store(true, Ordering::Relaxed);
        });
        let end = run(w, &cfg(1000.0, 4, 60), stop, &mut Collect(Vec::new())).await;
        assert_eq!(end.reason, EndReason::Interrupted);
        assert!((1300..=1700).contains(&end.totals[0].ok), "{}", end.totals[0].ok);
    }
}
