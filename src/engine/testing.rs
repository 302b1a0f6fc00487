//! Workloads for tests of the engine and of what drives it, without a server: operations that
//! take a set time, stall together, or fail, or note when each was sent.

use std::time::{Duration, Instant};
use tokio::time::sleep_until;

use super::{Outcome, Workload, clock};
use crate::metrics::ErrorKind;

/// A stand-in for a server: operations take `service` each, except that whatever is
/// in flight during [stall_at, stall_at + stall) completes only at the end of the stall.
pub struct Stalling {
    pub t0: Instant,
    pub service: Duration,
    pub stall_at: Duration,
    pub stall: Duration,
    pub fail: bool,
}

impl Workload for Stalling {
    type Worker = ();
    fn op_names(&self) -> Vec<String> {
        vec!["op".into()]
    }
    fn worker(&self, _: usize) {}
    fn op_of(&self, _: u64) -> usize {
        0
    }
    async fn execute(&self, _: &mut (), _i: u64) -> Outcome {
        let now = clock::now();
        let (a, b) = (self.t0 + self.stall_at, self.t0 + self.stall_at + self.stall);
        if now >= a && now < b {
            sleep_until(b.into()).await;
        } else if self.service.is_zero() {
            tokio::task::yield_now().await;
        } else {
            sleep_until((now + self.service).into()).await;
        }
        Outcome {
            op: 0,
            result: if self.fail {
                Err(ErrorKind::Connection)
            } else {
                Ok((1, 1))
            },
        }
    }
}

impl Stalling {
    /// Operations that each take `service` and succeed, with no stall.
    pub fn steady(service: Duration) -> Stalling {
        Stalling {
            t0: clock::now(),
            service,
            stall_at: Duration::from_secs(1 << 20),
            stall: Duration::ZERO,
            fail: false,
        }
    }
}

/// Operations whose type, service time and success are a function of their index.
pub struct Scripted<F> {
    pub names: Vec<String>,
    /// (operation type, service time, fails) of operation `i`.
    pub script: F,
}

impl<F: Fn(u64) -> (usize, Duration, bool) + Send + Sync + 'static> Workload for Scripted<F> {
    type Worker = ();
    fn op_names(&self) -> Vec<String> {
        self.names.clone()
    }
    fn worker(&self, _: usize) {}
    fn op_of(&self, i: u64) -> usize {
        (self.script)(i).0
    }
    async fn execute(&self, _: &mut (), i: u64) -> Outcome {
        let (op, service, fails) = (self.script)(i);
        sleep_until((clock::now() + service).into()).await;
        Outcome {
            op,
            result: if fails {
                Err(ErrorKind::ClientTimeout)
            } else {
                Ok((1, 1))
            },
        }
    }
}

/// Instant operations that note when each was sent, on the engine's clock.
#[derive(Default)]
pub struct Clocked(pub std::sync::Mutex<Vec<(u64, Instant)>>);

impl Workload for Clocked {
    type Worker = ();
    fn op_names(&self) -> Vec<String> {
        vec!["op".into()]
    }
    fn worker(&self, _: usize) {}
    fn op_of(&self, _: u64) -> usize {
        0
    }
    async fn execute(&self, _: &mut (), i: u64) -> Outcome {
        self.0.lock().unwrap().push((i, clock::now()));
        Outcome {
            op: 0,
            result: Ok((1, 1)),
        }
    }
}

/// A client that stops: operations take `service`, except that operation `at` holds the whole
/// runtime for `pause` (paused time jumps by it at once, as if the client's threads had not run),
/// so the operations due meanwhile go out late although workers were free.
pub struct ClientPause {
    pub at: u64,
    pub pause: Duration,
    pub service: Duration,
}

impl Workload for ClientPause {
    type Worker = ();
    fn op_names(&self) -> Vec<String> {
        vec!["op".into()]
    }
    fn worker(&self, _: usize) {}
    fn op_of(&self, _: u64) -> usize {
        0
    }
    async fn execute(&self, _: &mut (), i: u64) -> Outcome {
        if i == self.at {
            tokio::time::advance(self.pause).await;
        }
        sleep_until((clock::now() + self.service).into()).await;
        Outcome {
            op: 0,
            result: Ok((1, 1)),
        }
    }
}
