//! The client's own stalls: a task on the workers' runtime asks to wake every `EVERY` and notes
//! how late it woke. When the runtime's threads get no CPU (a starved client) or are held by
//! something else, it wakes late, and so does every operation due meanwhile and every reply
//! that arrives meanwhile. A stall is kept when it is longer than `STALL`; measure/causes.rs
//! names it as the client for the operations in flight through it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio::time::sleep_until;

use super::clock;

/// How often the canary asks to wake.
pub const EVERY: Duration = Duration::from_millis(10);

/// A wake-up later than this is a stall (the runtime's timer rounds to 1 ms).
pub const STALL: Duration = Duration::from_millis(2);

/// Stalls kept at most (a starved client has one every 10 ms: a quarter of an hour of them),
/// allocated at the start so that none is allocated while operations run.
const MOST: usize = 100_000;

/// When the canary should have woken and when it did, in nanoseconds after the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub from_ns: i64,
    pub to_ns: i64,
}

/// The canary of one run; its stalls are read at the end.
pub struct Canary {
    task: JoinHandle<()>,
    stalls: Arc<Mutex<Vec<Stall>>>,
}

impl Canary {
    /// Starts waking every `EVERY` from `t0` (the run's start).
    pub fn start(t0: Instant) -> Canary {
        let stalls = Arc::new(Mutex::new(Vec::with_capacity(MOST)));
        let kept = stalls.clone();
        let ns = move |at: Instant| at.saturating_duration_since(t0).as_nanos() as i64;
        let task = tokio::spawn(async move {
            let mut due = t0.max(clock::now()) + EVERY;
            loop {
                sleep_until(due.into()).await;
                let woke = clock::now();
                if woke.saturating_duration_since(due) > STALL {
                    let mut list = kept.lock().unwrap_or_else(|p| p.into_inner());
                    if list.len() < MOST {
                        list.push(Stall {
                            from_ns: ns(due),
                            to_ns: ns(woke),
                        });
                    }
                }
                due = woke + EVERY;
            }
        });
        Canary { task, stalls }
    }

    /// Stops it and gives its stalls, in order.
    pub fn finish(self) -> Vec<Stall> {
        self.task.abort();
        std::mem::take(&mut *self.stalls.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime held for 50 ms by a blocking call on its one thread: the canary woke that much
    /// late, and says when. Paused time: the hold is a jump of the clock, so it is exact.
    #[tokio::test(start_paused = true)]
    async fn a_held_runtime_is_one_stall_from_when_the_canary_was_due_to_when_it_woke() {
        let t0 = clock::now();
        let canary = Canary::start(t0);
        tokio::time::sleep(Duration::from_millis(105)).await;
        // Holds the runtime: the canary's timer fires only once this task yields again.
        tokio::time::advance(Duration::from_millis(50)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let stalls = canary.finish();
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        let ms = |ns: i64| ns / 1_000_000;
        assert_eq!((ms(stalls[0].from_ns), ms(stalls[0].to_ns)), (110, 155));
    }
}
