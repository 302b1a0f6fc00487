//! Runs in one process that start their schedules in the same wall-clock second once all of them
//! are ready: a duet's two sides (experiment/duet.rs). Each side sets its schema up before its
//! schedule, which takes a second or two on a fresh node and next to nothing on a kept one, so a
//! start fixed ahead would either leave both waiting or come too soon on a busy machine; here the
//! last side to be ready names the start, a whole second at least [`LEAD`] later.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// From the last side ready to the common start: room for the others to wake and start their
/// workers before the first operation falls due.
pub const LEAD: Duration = Duration::from_secs(1);

/// How long a side waits for the others before it gives up: longer than any schema setup.
pub const PATIENCE: Duration = Duration::from_secs(300);

/// Where the meeting stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Met {
    /// This many sides are ready.
    Waiting(usize),
    /// Every side is ready; the schedules start at this whole second.
    At(SystemTime),
    /// A side will not come (its run failed or stopped first), for this reason.
    Abandoned(String),
}

/// A start that `parties` runs agree on once each has said it is ready.
#[derive(Debug)]
pub struct Meeting {
    parties: usize,
    state: watch::Sender<Met>,
}

impl Meeting {
    pub fn new(parties: usize) -> Meeting {
        Meeting {
            parties,
            state: watch::Sender::new(Met::Waiting(0)),
        }
    }

    /// This side is ready: waits for the others and returns the common start, or why there is
    /// none (a side gave up, or the others were not ready within [`PATIENCE`]).
    pub async fn arrive(&self) -> Result<SystemTime, String> {
        let mut seen = self.state.subscribe();
        self.state.send_modify(|m| {
            if let Met::Waiting(n) = m {
                *n += 1;
                if *n >= self.parties {
                    *m = Met::At(whole_second_after(SystemTime::now() + LEAD));
                }
            }
        });
        let met = tokio::time::timeout(PATIENCE, seen.wait_for(|m| !matches!(m, Met::Waiting(_))))
            .await
            .map_err(|_| format!("the runs meant to start together were not ready within {PATIENCE:?}"))?
            .map_err(|_| "the runs meant to start together are gone".to_string())?
            .clone();
        match met {
            Met::At(t) => Ok(t),
            Met::Abandoned(why) => Err(why),
            Met::Waiting(_) => unreachable!("waited for the meeting to be decided"),
        }
    }

    /// This side will not arrive (its run ended before its schedule began): the others stop
    /// waiting, with `why`. Once the start is set, or another side gave up, nothing changes.
    /// Returns whether this call released the others (so this side's error is their cause).
    pub fn abandon(&self, why: &str) -> bool {
        self.state.send_if_modified(|m| {
            let waiting = matches!(m, Met::Waiting(_));
            if waiting {
                *m = Met::Abandoned(why.to_string());
            }
            waiting
        })
    }
}

/// The first whole second at or after `t`.
fn whole_second_after(t: SystemTime) -> SystemTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A side arriving on a task of its own.
    fn arriving(m: &Arc<Meeting>) -> tokio::task::JoinHandle<Result<SystemTime, String>> {
        let m = m.clone();
        tokio::spawn(async move { m.arrive().await })
    }

    #[tokio::test]
    async fn both_sides_get_one_whole_second_a_lead_after_the_later_one() {
        let m = Arc::new(Meeting::new(2));
        let first = arriving(&m);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!first.is_finished(), "the first side waits for the second");
        let before = SystemTime::now();
        let second = m.arrive().await.unwrap();
        let after = SystemTime::now();
        assert_eq!(first.await.unwrap(), Ok(second));
        assert_eq!(second.duration_since(UNIX_EPOCH).unwrap().subsec_nanos(), 0);
        assert!(second >= before + LEAD && second <= after + LEAD + Duration::from_secs(1));
    }

    #[tokio::test]
    async fn a_side_that_gives_up_releases_the_other_and_a_set_start_stays() {
        let m = Arc::new(Meeting::new(2));
        let waiting = arriving(&m);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(m.abandon("variant b failed: no node"));
        assert!(!m.abandon("the other side, released"), "the first reason stays");
        assert_eq!(waiting.await.unwrap(), Err("variant b failed: no node".to_string()));

        let m = Meeting::new(1);
        let at = m.arrive().await.unwrap();
        assert!(!m.abandon("too late to matter"));
        assert_eq!(m.arrive().await, Ok(at), "a decided start is kept");
    }

    #[tokio::test(start_paused = true)]
    async fn a_side_alone_gives_up_after_its_patience() {
        let err = Meeting::new(2).arrive().await.unwrap_err();
        assert!(err.contains("not ready within"), "{err}");
    }
}
