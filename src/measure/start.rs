//! When a step's schedule starts, and with whom: on the next whole second, at `--start-at`
//! (loaders started apart), or once every run of a meeting is ready (a duet's two sides,
//! engine::Meeting); and loaders of one run with an automatic warm-up agree on when measuring
//! starts (`agree`).

use anyhow::{Result, anyhow};
use std::time::{Duration, SystemTime};

use super::agree::{self, Agreement};
use super::target::Site;
use crate::console::say;
use crate::engine::{Anchor, LoaderSlice, Meeting, StartAt, Warmup};

/// The schedule's anchor: with the runs it meets, else at `--start-at`, else the next whole
/// second. The engine starts its workers in the last 100 ms before it.
pub async fn anchor(start_at: Option<StartAt>, meet: Option<&Meeting>) -> Result<Anchor> {
    let lead = Duration::from_millis(100);
    if let Some(meeting) = meet {
        let at = meeting.arrive().await.map_err(|e| anyhow!(e))?;
        return Anchor::starting(StartAt::At(at), lead).map_err(|_| {
            anyhow!(
                "the runs meant to start together were ready only after their common start ({}): the machine \
                 is too busy for them",
                humantime::format_rfc3339_seconds(at)
            )
        });
    }
    Ok(match start_at {
        Some(at) => {
            let anchor = Anchor::starting(at, lead).map_err(|e| anyhow!(e))?;
            say(&format!(
                "Waiting for --start-at: the schedule starts at {}",
                humantime::format_rfc3339_seconds(anchor.wall)
            ));
            anchor
        }
        None => Anchor::next_second(lead),
    })
}

/// Loaders of one run (a slice of several, started at one `--start-at`) with an automatic
/// warm-up agree on when measuring starts, in the cluster under test (`agree`).
pub async fn agreement(
    loader: LoaderSlice,
    warmup: &Warmup,
    start_at: Option<StartAt>,
    site: &Site,
    workload: &str,
    started: SystemTime,
) -> Result<Option<Agreement>> {
    if loader.is_whole() || !matches!(warmup, Warmup::Auto { .. }) {
        return Ok(None);
    }
    let Some(session) = &site.cql else {
        return Ok(None);
    };
    if start_at.is_none() {
        say(
            "Loaders without --start-at each end their automatic warm-up on their own (their measured windows \
             will not line up): give them one --start-at so they agree on when to measure",
        );
        return Ok(None);
    }
    agree::prepare(session).await?;
    Ok(Some(Agreement::new(
        session.clone(),
        Agreement::run_name(workload, started),
        loader,
        started,
    )))
}
