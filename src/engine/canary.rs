//! The client's own stalls: a task on the workers' runtime asks to wake every `EVERY` and notes
//! how late it woke. When the runtime's threads get no CPU (a starved client) or are held by
//! something else, it wakes late, and so does every operation due meanwhile and every reply
//! that arrives meanwhile. A stall is kept when it is longer than `STALL`; measure/causes.rs
//! names it as the client for the operations in flight through it.
//!
//! Each time it wakes it also reads how long its thread has waited for a CPU since the last
//! time (`procfs::RunQueueWait`): a client kept from its CPU by other work waits in pieces of a
//! few milliseconds, most too short for a late wake to show, and this sees them all. A tick in
//! which the thread waited `WAITED` or more is kept as a `Wait`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio::time::sleep_until;

use super::clock;
use crate::procfs::RunQueueWait;

/// How often the canary asks to wake.
pub const EVERY: Duration = Duration::from_millis(10);

/// A wake-up later than this is a stall (the runtime's timer rounds to 1 ms).
pub const STALL: Duration = Duration::from_millis(2);

/// Stalls and waits kept at most (a starved client has one every 10 ms: a quarter of an hour),
/// allocated at the start so that none is allocated while operations run.
const MOST: usize = 100_000;

/// A tick in which the canary's thread waited this long or more for a CPU is kept.
pub const WAITED: Duration = Duration::from_millis(1);

/// When the canary should have woken and when it did, in nanoseconds after the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub from_ns: i64,
    pub to_ns: i64,
}

/// Between two of the canary's wakes (ns after the run's start), its thread waited `waited_ns`
/// for a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    pub from_ns: i64,
    pub to_ns: i64,
    pub waited_ns: i64,
}

/// What the canary kept, allocated at the start.
#[derive(Default)]
struct Kept {
    stalls: Vec<Stall>,
    waits: Vec<Wait>,
}

/// The canary of one run; its stalls and waits are read at the end.
pub struct Canary {
    task: JoinHandle<()>,
    kept: Arc<Mutex<Kept>>,
}

impl Canary {
    /// Starts waking every `EVERY` from `t0` (the run's start).
    pub fn start(t0: Instant) -> Canary {
        let kept = Arc::new(Mutex::new(Kept {
            stalls: Vec::with_capacity(MOST),
            waits: Vec::with_capacity(MOST),
        }));
        let list = kept.clone();
        let ns = move |at: Instant| at.saturating_duration_since(t0).as_nanos() as i64;
        let task = tokio::spawn(async move {
            let mut due = t0.max(clock::now()) + EVERY;
            let mut queue = RunQueueWait::default();
            let mut last = queue.read().map(|r| (r, clock::now()));
            loop {
                sleep_until(due.into()).await;
                let woke = clock::now();
                let read = queue.read();
                let waited = match (last, read) {
                    (Some(((was, before), at)), Some((on, now))) if was == on => {
                        Some((ns(at), now.saturating_sub(before)))
                    }
                    _ => None,
                };
                last = read.map(|r| (r, woke));
                let stalled = woke.saturating_duration_since(due) > STALL;
                let waited = waited.filter(|(_, w)| *w >= WAITED.as_nanos() as u64);
                if stalled || waited.is_some() {
                    let mut k = list.lock().unwrap_or_else(|p| p.into_inner());
                    if stalled && k.stalls.len() < MOST {
                        k.stalls.push(Stall {
                            from_ns: ns(due),
                            to_ns: ns(woke),
                        });
                    }
                    if let Some((from_ns, w)) = waited
                        && k.waits.len() < MOST
                    {
                        k.waits.push(Wait {
                            from_ns,
                            to_ns: ns(woke),
                            waited_ns: w as i64,
                        });
                    }
                }
                due = woke + EVERY;
            }
        });
        Canary { task, kept }
    }

    /// Stops it and gives its stalls and waits, each in order.
    pub fn finish(self) -> (Vec<Stall>, Vec<Wait>) {
        self.task.abort();
        let k = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()));
        (k.stalls, k.waits)
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
        let (stalls, _) = canary.finish();
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        let ms = |ns: i64| ns / 1_000_000;
        assert_eq!((ms(stalls[0].from_ns), ms(stalls[0].to_ns)), (110, 155));
    }
}
