//! One loader's results directory, read: its result, slice, interval log and the seconds its
//! CSV reported, and each histogram of its log placed on the wall clock.

use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::engine::LoaderSlice;
use crate::measure::result::RunResult;

/// One loader's results, read and checked.
pub struct Loader {
    pub dir: PathBuf,
    pub result: RunResult,
    pub slice: LoaderSlice,
    /// Its interval log's text and base time (epoch milliseconds).
    pub log: Vec<u8>,
    pub base_ms: i64,
    /// The start (epoch ms) of every interval its CSV has a row for: the seconds it reported.
    pub seconds: BTreeSet<i64>,
    /// The rate its schedule asked in each of them (its CSV's `targetRate`; none flat out, or
    /// in a CSV from before the column).
    pub targets: BTreeMap<i64, f64>,
}

/// One histogram of a loader's log, placed on the wall clock.
pub struct Entry<'a> {
    pub at_ms: i64,
    pub length: Duration,
    pub tag: Option<&'a str>,
    pub encoded: &'a str,
}

impl Loader {
    pub fn read(dir: &Path) -> Result<Loader> {
        let result = RunResult::load(dir)?;
        let name = dir.display();
        if result.summary.is_none() {
            bail!(
                "{name}: this loader never finished (status {}): it has no summary to merge; leave it out, or run it again",
                result.status.name()
            );
        }
        let slice = LoaderSlice::parse(&result.config.engine.loader)
            .map_err(|e| anyhow::anyhow!("{name}: its loader slice: {e}"))?;
        let log_path = dir.join(&result.files.hdr_log);
        let log = std::fs::read(&log_path).with_context(|| format!("cannot read {}", log_path.display()))?;
        let base_ms =
            base_time_ms(&log).with_context(|| format!("{}: no BaseTime or StartTime", log_path.display()))?;
        let csv_path = dir.join(&result.files.csv);
        let csv = std::fs::read_to_string(&csv_path).with_context(|| format!("cannot read {}", csv_path.display()))?;
        let interval_ms = (result.config.engine.interval_s * 1000.0).round() as i64;
        let (mut seconds, mut targets) = (BTreeSet::new(), BTreeMap::new());
        for line in csv.lines().skip(1) {
            let when = line.split(',').next().unwrap_or_default();
            let end = humantime::parse_rfc3339_weak(when)
                .with_context(|| format!("{}: '{when}' is not a time", csv_path.display()))?;
            let at = epoch_ms(end) - interval_ms;
            seconds.insert(at);
            if let Some(rate) = line.split(',').nth(12).and_then(|t| t.parse::<f64>().ok()) {
                targets.insert(at, rate);
            }
        }
        Ok(Loader {
            dir: dir.to_path_buf(),
            result,
            slice,
            log,
            base_ms,
            seconds,
            targets,
        })
    }

    /// Every histogram of its log, on the wall clock.
    pub fn entries(&self) -> Result<Vec<Entry<'_>>> {
        use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
        let mut out = Vec::new();
        for entry in IntervalLogIterator::new(&self.log) {
            let entry =
                entry.map_err(|e| anyhow::anyhow!("{}: not an interval log line: {e:?}", self.dir.display()))?;
            if let LogEntry::Interval(h) = entry {
                out.push(Entry {
                    at_ms: self.base_ms + h.start_timestamp().as_millis() as i64,
                    length: h.duration(),
                    tag: h.tag().map(|t| t.as_str()),
                    encoded: h.encoded_histogram(),
                });
            }
        }
        Ok(out)
    }

    pub fn name(&self) -> String {
        format!("{} (loader {})", self.dir.display(), self.slice)
    }

    /// Its measured window on the wall clock (epoch ms), when it measured anything.
    pub fn span_ms(&self) -> Option<(i64, i64)> {
        let start = humantime::parse_rfc3339_weak(&self.result.started_at).ok()?;
        let from = self.result.warmup.as_ref()?.length_s?;
        let length = self.result.summary.as_ref()?.operation_time_s;
        let from_ms = epoch_ms(start) + (from * 1000.0).round() as i64;
        Some((from_ms, from_ms + (length * 1000.0).round() as i64))
    }
}

pub fn epoch_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}

fn base_time_ms(log: &[u8]) -> Option<i64> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let (mut base, mut start) = (None, None);
    for entry in IntervalLogIterator::new(log).flatten() {
        match entry {
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::Interval(_) => break,
        }
    }
    base.or(start).map(|t| t.as_millis() as i64)
}
