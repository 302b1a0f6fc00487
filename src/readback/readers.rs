//! The one concurrent read-back loop: `in_flight` readers take the next item from a shared
//! counter until the items end or a stop is asked, each keeping its own tally (no lock between
//! them), and the tallies are returned for the caller to add up.

use anyhow::{Context, Result};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::Stop;
use crate::metrics::ErrorKind;

/// Tries of one read that fails in a way that says nothing of the row (a timeout, a coordinator
/// unavailable or overloaded): a loaded cluster just after a fault times some reads out (101 of
/// 13,176 at QUORUM with 2 s timeouts, on two cores running a second test file beside three
/// nodes), and a row is judged missing or wrong only from an answer.
pub const TRIES: u32 = 4;

/// Whether a read that failed with `kind` is tried again (after `tries` retries so far): if so,
/// counts the retry and waits 100 ms more than the last time first.
pub async fn again(kind: ErrorKind, tries: &mut u32) -> bool {
    if !kind.is_transient() || *tries + 1 >= TRIES {
        return false;
    }
    *tries += 1;
    tokio::time::sleep(std::time::Duration::from_millis(100 * u64::from(*tries))).await;
    true
}

/// One reader: its own buffers and tally.
pub trait Reader: Send + 'static {
    type Tally: Send + 'static;

    /// Reads item `n` into the tally; false when there is no item `n` (the end).
    fn read(&mut self, n: u64) -> impl Future<Output = bool> + Send;

    /// What this reader found.
    fn tally(self) -> Self::Tally;
}

/// Reads items 0, 1, … with `in_flight` readers made by `reader` (the run's concurrency: 256
/// readers were a little faster than 64, bench/RESULTS.md) until one finds no item or
/// `stop` is asked; returns every reader's tally.
pub async fn read_all<R: Reader>(in_flight: usize, stop: &Arc<Stop>, reader: impl Fn() -> R) -> Result<Vec<R::Tally>> {
    let next = Arc::new(AtomicU64::new(0));
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..in_flight.max(1) {
        let (mut r, next, stop) = (reader(), next.clone(), stop.clone());
        readers.spawn(async move {
            while !stop.is_requested() {
                if !r.read(next.fetch_add(1, Ordering::Relaxed)).await {
                    break;
                }
            }
            r.tally()
        });
    }
    let mut tallies = Vec::with_capacity(in_flight.max(1));
    while let Some(t) = readers.join_next().await {
        tallies.push(t.context("a read-back task failed")?);
    }
    Ok(tallies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn only_reads_that_said_nothing_of_the_row_are_tried_again_and_not_for_ever() {
        let mut tries = 0;
        let mut asked = 0;
        while again(ErrorKind::ClientTimeout, &mut tries).await {
            asked += 1;
        }
        assert_eq!((asked, tries), (TRIES - 1, TRIES - 1));
        let mut tries = 0;
        assert!(!again(ErrorKind::Other, &mut tries).await, "an error that is an answer");
        assert!(!again(ErrorKind::Connection, &mut tries).await);
        assert_eq!(tries, 0);
    }

    /// Counts the items it read, and stops the run at item `stop_at` when asked to.
    struct Counting {
        items: u64,
        read: Vec<u64>,
        stop_at: Option<(u64, Arc<Stop>)>,
    }

    impl Reader for Counting {
        type Tally = Vec<u64>;

        async fn read(&mut self, n: u64) -> bool {
            if n >= self.items {
                return false;
            }
            if let Some((at, stop)) = &self.stop_at
                && n == *at
            {
                stop.request();
            }
            tokio::task::yield_now().await;
            self.read.push(n);
            true
        }

        fn tally(self) -> Vec<u64> {
            self.read
        }
    }

    #[tokio::test]
    async fn every_item_is_read_once_by_one_of_the_readers() {
        let stop = Stop::new();
        let tallies = read_all(7, &stop, || Counting {
            items: 1000,
            read: Vec::new(),
            stop_at: None,
        })
        .await
        .unwrap();
        assert_eq!(tallies.len(), 7);
        let mut all: Vec<u64> = tallies.into_iter().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_stop_ends_the_read_back_with_what_was_read_kept() {
        let stop = Stop::new();
        let s = stop.clone();
        let tallies = read_all(4, &stop, || Counting {
            items: 1_000_000,
            read: Vec::new(),
            stop_at: Some((100, s.clone())),
        })
        .await
        .unwrap();
        let read: usize = tallies.iter().map(Vec::len).sum();
        // Each reader finishes the item in hand: at most one more each after the stop.
        assert!((101..=104).contains(&read), "{read}");
    }
}
