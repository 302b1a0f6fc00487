//! Loaders of one run agree on when measuring starts. Each settles on its own (the automatic
//! warm-up's rule reads its own client); left at that, their measured windows begin in
//! different seconds and the merge has partial seconds at both ends. So each loader, once it
//! has settled, records it in a small table of the cluster under test
//! (`caplab_loaders.settled`: run, loader, when), keeps warming up, and reads the table once a
//! second; when every loader of the run has settled, all of them start measuring at the same
//! whole second: two seconds after the last one settled, time enough for every loader to have
//! read it. A loader's warm-up maximum still ends it alone, as without an agreement.
//!
//! Loaders know they belong to one run by `--start-at` (the same anchor second) and the
//! workload's name; without `--start-at` there is no agreement, and the run says so.

use anyhow::{Context, Result};
use scylla::client::session::Session;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::LoaderSlice;
use crate::workload::schema;

const KEYSPACE: &str = "caplab_loaders";
/// After the last loader settled, how long until measuring starts: every loader reads the table
/// once a second, so two seconds leave each time to hear of it.
const LEAD: Duration = Duration::from_secs(2);

/// Creates the table the loaders record in (once per cluster; every loader asks, the first
/// creates it).
pub async fn prepare(session: &Session) -> Result<()> {
    session
        .query_unpaged(
            schema::ddl(format!(
                "CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
            )),
            (),
        )
        .await
        .context("cannot create the keyspace loaders agree in")?;
    session
        .query_unpaged(
            schema::ddl(format!(
                "CREATE TABLE IF NOT EXISTS {KEYSPACE}.settled (run text, loader int, at_ms bigint, \
                 PRIMARY KEY (run, loader))"
            )),
            (),
        )
        .await
        .context("cannot create the table loaders agree in")?;
    session
        .await_schema_agreement()
        .await
        .context("the cluster did not agree on the loaders' table")?;
    Ok(())
}

/// What the background queries left for the interval thread.
#[derive(Default)]
struct Heard {
    /// The settled times (epoch ms) of the loaders recorded so far, from the last read.
    settled: Option<Vec<i64>>,
    /// A read is under way.
    asking: bool,
}

/// One loader's side of the agreement, polled on the interval thread.
pub struct Agreement {
    session: Arc<Session>,
    runtime: tokio::runtime::Handle,
    run: String,
    slice: LoaderSlice,
    /// The anchor's wall-clock time: the agreed start is given after it.
    started: SystemTime,
    said: bool,
    heard: Arc<Mutex<Heard>>,
    agreed: Option<Duration>,
}

impl Agreement {
    pub fn new(session: Arc<Session>, run: String, slice: LoaderSlice, started: SystemTime) -> Agreement {
        Agreement {
            session,
            runtime: tokio::runtime::Handle::current(),
            run,
            slice,
            started,
            said: false,
            heard: Default::default(),
            agreed: None,
        }
    }

    /// The run's name in the table: the workload and the anchor's second.
    pub fn run_name(workload: &str, started: SystemTime) -> String {
        format!(
            "{workload}@{}",
            started.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
        )
    }

    /// Called after each warm-up second with whether this loader has settled: once every loader
    /// has, when measuring starts (after the anchor).
    pub fn poll(&mut self, settled: bool) -> Option<Duration> {
        if self.agreed.is_some() || !settled {
            return self.agreed;
        }
        if !self.said {
            self.said = true;
            let (session, run, loader) = (self.session.clone(), self.run.clone(), self.slice.index() as i32);
            let at = epoch_ms(SystemTime::now());
            self.runtime.spawn(async move {
                let _ = session
                    .query_unpaged(
                        format!("INSERT INTO {KEYSPACE}.settled (run, loader, at_ms) VALUES (?, ?, ?)"),
                        (run, loader, at),
                    )
                    .await;
            });
        }
        let mut heard = self.heard.lock().expect("not poisoned");
        if let Some(times) = heard.settled.take()
            && times.len() >= self.slice.count() as usize
        {
            let last = times.into_iter().max().unwrap_or(0);
            let at = UNIX_EPOCH + Duration::from_millis(last as u64) + LEAD;
            // The whole second at or after it: every loader's intervals are whole seconds.
            let since = at.duration_since(self.started).unwrap_or_default();
            self.agreed = Some(Duration::from_secs(
                since.as_secs() + u64::from(since.subsec_nanos() > 0),
            ));
            return self.agreed;
        }
        if !heard.asking {
            heard.asking = true;
            let (session, run, into) = (self.session.clone(), self.run.clone(), self.heard.clone());
            self.runtime.spawn(async move {
                let read = session
                    .query_unpaged(format!("SELECT at_ms FROM {KEYSPACE}.settled WHERE run = ?"), (run,))
                    .await
                    .ok()
                    .and_then(|r| r.into_rows_result().ok())
                    .and_then(|rows| rows.rows::<(i64,)>().ok().map(|it| it.flatten().map(|r| r.0).collect()));
                let mut heard = into.lock().expect("not poisoned");
                heard.settled = read;
                heard.asking = false;
            });
        }
        None
    }
}

fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}
