//! Where a run's schedule starts: the anchor instant and its wall-clock time, on the next whole
//! second or at `--start-at`, so that loaders started apart share one grid of intervals.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::clock;

/// The instant a run's schedule starts and the wall-clock time it corresponds to: the one
/// anchor of the schedule, the intervals, the interval log and the server's window.
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    pub instant: Instant,
    pub wall: SystemTime,
}

impl Anchor {
    pub fn now() -> Anchor {
        Anchor {
            wall: SystemTime::now(),
            instant: clock::now(),
        }
    }

    /// The next whole wall-clock second at least `lead` from now, so that every interval is a
    /// whole wall-clock second and the intervals of loaders started apart line up. The engine
    /// starts its workers before it, so the first operations go out on time.
    pub fn next_second(lead: Duration) -> Anchor {
        let now = Anchor::now();
        let earliest = now.wall + lead;
        let into = earliest.duration_since(UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        let wait = lead
            + if into == 0 {
                Duration::ZERO
            } else {
                Duration::from_nanos(1_000_000_000 - u64::from(into))
            };
        Anchor {
            instant: now.instant + wait,
            wall: now.wall + wait,
        }
    }

    /// The anchor `start` asks for (`--start-at`): loaders started apart begin their schedules
    /// in the same wall-clock second. Refused when that time is less than `lead` away.
    pub fn starting(start: StartAt, lead: Duration) -> Result<Anchor, String> {
        let now = Anchor::now();
        let since_epoch = now.wall.duration_since(UNIX_EPOCH).unwrap_or_default();
        let wall = match start {
            StartAt::At(t) => t,
            StartAt::Every(n) => {
                let n = n.as_secs().max(1);
                let earliest = (since_epoch + lead).as_secs_f64();
                UNIX_EPOCH + Duration::from_secs((earliest / n as f64).ceil() as u64 * n)
            }
        };
        let wait = wall.duration_since(now.wall).ok().filter(|w| *w >= lead).ok_or_else(|| {
            format!(
                "--start-at {} has passed (it is {} now): give a later time, or next:N to start at the next multiple \
                 of N seconds",
                humantime::format_rfc3339_millis(wall),
                humantime::format_rfc3339_millis(now.wall)
            )
        })?;
        Ok(Anchor {
            instant: now.instant + wait,
            wall,
        })
    }

    /// `lead` from now (tests).
    pub fn after(lead: Duration) -> Anchor {
        let now = Anchor::now();
        Anchor {
            instant: now.instant + lead,
            wall: now.wall + lead,
        }
    }
}

/// When a run's schedule starts (`--start-at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// At this wall-clock time (whole seconds keep the intervals on the second grid).
    At(SystemTime),
    /// At the next wall-clock time that is a multiple of this many seconds since the epoch.
    Every(Duration),
}

impl StartAt {
    /// `2026-11-24T21:30:00Z` (RFC 3339, UTC), a Unix time in seconds (`1795555800`), or
    /// `next:30s`.
    pub fn parse(s: &str) -> Result<StartAt, String> {
        let t = s.trim();
        let bad = || {
            format!(
                "'{s}' is not a start time: write a UTC time (2026-11-24T21:30:00Z), Unix seconds (date +%s), or \
                 next:30s for the next multiple of 30 s on the wall clock"
            )
        };
        if let Some(every) = t.strip_prefix("next:") {
            let d = humantime::parse_duration(every).map_err(|_| bad())?;
            if d.as_secs() == 0 || d.subsec_nanos() != 0 {
                return Err(format!("--start-at next:{every}: give whole seconds, at least 1s"));
            }
            return Ok(StartAt::Every(d));
        }
        let at = match t.parse::<u64>() {
            Ok(secs) => UNIX_EPOCH + Duration::from_secs(secs),
            Err(_) => humantime::parse_rfc3339_weak(t).map_err(|_| bad())?,
        };
        if at.duration_since(UNIX_EPOCH).unwrap_or_default().subsec_nanos() != 0 {
            return Err(format!(
                "--start-at {s}: give a whole second, so that every loader's intervals are whole seconds"
            ));
        }
        Ok(StartAt::At(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_time_is_a_whole_second_ahead_and_next_n_lands_on_the_grid() {
        let epoch = |s: u64| StartAt::At(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(StartAt::parse("1795555800"), Ok(epoch(1_795_555_800)));
        assert_eq!(StartAt::parse("2026-11-24T21:30:00Z"), Ok(epoch(1_795_555_800)));
        assert_eq!(StartAt::parse("next:30s"), Ok(StartAt::Every(Duration::from_secs(30))));
        for bad in ["soon", "next:0s", "next:1.5s", "2026-11-24T21:30:00.5Z"] {
            assert!(StartAt::parse(bad).is_err(), "{bad}");
        }
        let lead = Duration::from_millis(100);
        let before = SystemTime::now();
        let a = Anchor::starting(StartAt::Every(Duration::from_secs(5)), lead).unwrap();
        let after = SystemTime::now();
        let secs = a.wall.duration_since(UNIX_EPOCH).unwrap();
        assert_eq!((secs.as_secs() % 5, secs.subsec_nanos()), (0, 0));
        // At least the lead ahead of when it was asked, and the next multiple of 5 s after that
        // (bounds on the clock readings around the call, so a slow machine cannot break them).
        assert!(a.wall >= before + lead, "{a:?}");
        assert!(a.wall <= after + lead + Duration::from_secs(5), "{a:?}");
        let err = Anchor::starting(epoch(1_000), Duration::from_millis(100)).unwrap_err();
        assert!(err.contains("has passed"), "{err}");
    }
}
