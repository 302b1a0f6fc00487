//! Asking a run to stop: set from outside (Ctrl-C) or by the engine itself (the cluster
//! stopped answering, results could not be written). It remembers when it was first asked, so
//! the measured window ends there, and wakes whatever waits for it at once, so a worker asleep
//! until a distant intended start does not hold the stop up.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::Notify;

use super::clock;

#[derive(Debug, Default)]
pub struct Stop {
    requested: AtomicBool,
    at: OnceLock<Instant>,
    /// Who asked first, when it came from outside (`SIGTERM`…).
    cause: OnceLock<String>,
    notify: Notify,
    /// The file of the step being measured, that a stop from outside marks as interrupted
    /// (`measure::signal`): the lock is held while either side writes it.
    result_file: std::sync::Mutex<Option<std::path::PathBuf>>,
}

impl Stop {
    pub fn new() -> std::sync::Arc<Stop> {
        std::sync::Arc::new(Stop::default())
    }

    /// Asks the run to stop because of `cause` (a signal's name); the first cause is kept.
    pub fn request_because(&self, cause: &str) {
        let _ = self.cause.set(cause.to_string());
        self.request();
    }

    /// What asked the run to stop from outside, if anything did.
    pub fn cause(&self) -> Option<&str> {
        self.cause.get().map(String::as_str)
    }

    /// Asks the run to stop (the first request's time is kept).
    pub fn request(&self) {
        let _ = self.at.set(clock::now());
        self.requested.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// When the stop was first asked for.
    pub fn requested_at(&self) -> Option<Instant> {
        self.at.get().copied()
    }

    /// The result file slot, locked (see the field).
    pub fn result_file(&self) -> std::sync::MutexGuard<'_, Option<std::path::PathBuf>> {
        self.result_file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Returns once a stop is asked for.
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_requested() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// In paused time: the clock moves only when every task waits on a timer, so "at once"
    /// is exact, on any machine.
    #[tokio::test(start_paused = true)]
    async fn waiters_wake_at_once_and_the_first_time_is_kept() {
        let stop = Stop::new();
        let s = stop.clone();
        let waiter = tokio::spawn(async move {
            s.wait().await;
            clock::now()
        });
        // Lets the waiter run until it waits (virtual time: no real 50 ms pass).
        tokio::time::sleep(Duration::from_millis(50)).await;
        let asked = clock::now();
        stop.request();
        let first = stop.requested_at().unwrap();
        stop.request();
        assert_eq!(stop.requested_at(), Some(first));
        let woke = waiter.await.unwrap();
        assert_eq!(woke, asked, "woken without any time passing");
        // Asked before anyone waits: waiting returns at once.
        tokio::time::timeout(Duration::from_millis(10), stop.wait())
            .await
            .unwrap();
    }
}
