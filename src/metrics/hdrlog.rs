//! The HdrHistogram interval log: per interval, one untagged histogram of every operation's
//! response time (what Java's HistogramLogProcessor reads when no `-tag` is given), then one
//! per operation type and measure (tags `<op>.response`: every due operation, failures and
//! never-sent ones included; `<op>.ok`: successes only; `<op>.service`; `<op>.error`), values in
//! nanoseconds, with the header lines and max-value divisor (ns → ms) that
//! HistogramLogProcessor expects. Written unbuffered, so every completed interval is on disk.
//! Before an interval's histograms, when the run asked a rate, a comment line
//! `#[TargetRate: START,LENGTH,RATE]` gives the operations a second asked over it (the format
//! has no field for it; its readers, Java's and the `hdrhistogram` crate's, skip comments).

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Interval, OpStats};

/// What an operation type's tagged histogram holds: the one owner of the tag names
/// `<op>.response`, `<op>.ok`, `<op>.service` and `<op>.error`, in the interval log and in
/// result.json's `histograms` alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagKind {
    /// Every due operation's response time: successes, failures and never-sent ones.
    Response,
    /// Successes only.
    Ok,
    /// Service time (completion − send) of every operation sent.
    Service,
    /// Failures' response times.
    Error,
}

impl TagKind {
    pub const ALL: [TagKind; 4] = [TagKind::Response, TagKind::Ok, TagKind::Service, TagKind::Error];

    /// The word after the operation's name.
    pub fn suffix(self) -> &'static str {
        match self {
            TagKind::Response => "response",
            TagKind::Ok => "ok",
            TagKind::Service => "service",
            TagKind::Error => "error",
        }
    }

    /// The tag of operation type `op`'s histogram of this kind.
    pub fn tag(self, op: &str) -> String {
        format!("{op}.{}", self.suffix())
    }

    /// The operation type and kind a tag names; None for a tag caplab does not write.
    pub fn parse(tag: &str) -> Option<(&str, TagKind)> {
        let (op, suffix) = tag.rsplit_once('.')?;
        TagKind::ALL.into_iter().find(|k| k.suffix() == suffix).map(|k| (op, k))
    }

    /// Whether `tag` names a histogram of this kind.
    pub fn is(self, tag: &str) -> bool {
        TagKind::parse(tag).is_some_and(|(_, k)| k == self)
    }

    /// This kind's histogram in an operation type's measurements.
    pub fn of(self, s: &OpStats) -> &Histogram<u64> {
        match self {
            TagKind::Response => &s.response,
            TagKind::Ok => &s.response_ok,
            TagKind::Service => &s.service,
            TagKind::Error => &s.error_response,
        }
    }

    /// An operation type's four histograms, each with its kind (as `of` pairs them).
    pub fn histograms(s: OpStats) -> [(TagKind, Histogram<u64>); 4] {
        [
            (TagKind::Response, s.response),
            (TagKind::Ok, s.response_ok),
            (TagKind::Service, s.service),
            (TagKind::Error, s.error_response),
        ]
    }
}

/// How the comment line giving an interval's target rate starts.
const TARGET_RATE: &str = "#[TargetRate: ";

/// One interval's rate asked, read back from the log's `#[TargetRate: …]` comments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// After the log's base time.
    pub start: Duration,
    pub length: Duration,
    /// Operations a second.
    pub rate: f64,
}

/// The rates asked, interval by interval, from an interval log's comments (none for a run
/// flat out, or a log written before caplab wrote them).
pub fn targets(path: &Path) -> Result<Vec<Target>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let parse = |l: &str| -> Option<Target> {
        let mut f = l.strip_prefix(TARGET_RATE)?.strip_suffix(']')?.split(',');
        let mut next = || f.next()?.parse::<f64>().ok();
        Some(Target {
            start: Duration::try_from_secs_f64(next()?).ok()?,
            length: Duration::try_from_secs_f64(next()?).ok()?,
            rate: next()?,
        })
    };
    Ok(text.lines().filter_map(parse).collect())
}

/// Java's HistogramLogWriter prints interval maxima in milliseconds for nanosecond values.
pub const MAX_VALUE_DIVISOR: f64 = 1_000_000.0;

/// An interval log being written. Each line is formatted whole and written with one call, so
/// a line is on disk entirely or not at all; the histogram encoding is the `hdrhistogram`
/// crate's (V2, deflate, base64), and its log reader reads the file back.
pub struct HdrLog {
    file: File,
    serializer: V2DeflateSerializer,
    encoded: Vec<u8>,
    line: String,
    tag: String,
}

impl HdrLog {
    /// Creates the log at `path` with its header; interval times count from `started`.
    pub fn create(path: &Path, started: SystemTime) -> Result<HdrLog> {
        let mut file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let secs = started.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        let when = humantime::format_rfc3339_millis(started);
        let header = format!(
            "#[Logged with caplab {}]\n#[Histogram log format version 1.3]\n#[StartTime: {secs:.3} (seconds since epoch), {when}]\n#[BaseTime: {secs:.3} (seconds since epoch)]\n#[MaxValueDivisor: {MAX_VALUE_DIVISOR:.3}]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            env!("CARGO_PKG_VERSION")
        );
        file.write_all(header.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(HdrLog {
            file,
            serializer: V2DeflateSerializer::new(),
            encoded: Vec::new(),
            line: String::new(),
            tag: String::new(),
        })
    }

    /// Appends one histogram covering `[start, start + length)` after the log's start time.
    pub fn write(&mut self, tag: Option<&str>, h: &Histogram<u64>, start: Duration, length: Duration) -> Result<()> {
        use base64::Engine;
        self.line.clear();
        if let Some(t) = tag {
            anyhow::ensure!(
                !t.contains([',', ' ', '\r', '\n']),
                "operation names must not contain ',' or spaces"
            );
            write!(self.line, "Tag={t},")?;
        }
        write!(
            self.line,
            "{:.3},{:.3},{:.3},",
            start.as_secs_f64(),
            length.as_secs_f64(),
            h.max() as f64 / MAX_VALUE_DIVISOR
        )?;
        self.encoded.clear();
        self.serializer
            .serialize(h, &mut self.encoded)
            .map_err(|e| anyhow::anyhow!("cannot encode a histogram: {e:?}"))?;
        base64::engine::general_purpose::STANDARD.encode_string(&self.encoded, &mut self.line);
        self.line.push('\n');
        super::write_whole(&mut self.file, self.line.as_bytes()).context("cannot write the interval log")
    }

    /// Appends the comment giving the rate asked (operations a second) over `[start, start +
    /// length)`: `#[TargetRate: START,LENGTH,RATE]`, times as the intervals' own.
    pub fn write_target(&mut self, start: Duration, length: Duration, rate: f64) -> Result<()> {
        self.line.clear();
        writeln!(
            self.line,
            "{TARGET_RATE}{:.3},{:.3},{rate:.3}]",
            start.as_secs_f64(),
            length.as_secs_f64()
        )?;
        super::write_whole(&mut self.file, self.line.as_bytes()).context("cannot write the interval log")
    }

    /// Appends one interval: the untagged all-operations histogram (`all` is scratch space for
    /// it), then up to four per operation type, those that have values. The untagged one is
    /// written even when empty: a second in which no operation ended (a stall) is a second of
    /// the window all the same, with no latency and 0 op/s, not a second left out (left out, a
    /// page would draw a 3 s stall as two points). An empty
    /// partial interval under half a second (the window's ragged end, which the readers leave
    /// out) is not written.
    pub fn write_interval(&mut self, op_names: &[String], interval: &Interval, all: &mut Histogram<u64>) -> Result<()> {
        all.reset();
        for s in &interval.ops {
            all.add(&s.response).expect("same bounds");
        }
        if !all.is_empty() || interval.length >= Duration::from_millis(500) {
            self.write(None, all, interval.start, interval.length)?;
        }
        for (name, s) in op_names.iter().zip(&interval.ops) {
            for kind in TagKind::ALL {
                let h = kind.of(s);
                if h.is_empty() {
                    continue;
                }
                let mut tag = std::mem::take(&mut self.tag);
                tag.clear();
                tag.push_str(name);
                tag.push('.');
                tag.push_str(kind.suffix());
                let written = self.write(Some(&tag), h, interval.start, interval.length);
                self.tag = tag;
                written?;
            }
        }
        Ok(())
    }
}

/// One histogram read back from an interval log.
#[derive(Debug, Clone)]
pub struct Logged {
    /// None for the all-operations histogram.
    pub tag: Option<String>,
    /// After the log's base time.
    pub start: Duration,
    pub length: Duration,
    pub histogram: Histogram<u64>,
}

/// Hands every histogram of an interval log to `f`, in order, one at a time (an interval
/// starts at base + `start`), and returns the log's base time (since the Unix epoch: its
/// `BaseTime`, else its `StartTime`). There is no reader that returns them all: an hour's log
/// holds 14,400 histograms of ~270 kB each decoded, which must never be in memory together
/// (reading them all first made a 30 s run's page peak at 116 MiB).
pub fn each(path: &Path, mut f: impl FnMut(Logged) -> Result<()>) -> Result<Option<Duration>> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (mut base, mut start_time) = (None, None);
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|e| anyhow::anyhow!("{}: not an interval log line: {e:?}", path.display()))?;
        match entry {
            LogEntry::Interval(h) => f(Logged {
                tag: h.tag().map(|t| t.as_str().to_string()),
                start: h.start_timestamp(),
                length: h.duration(),
                histogram: decode(h.encoded_histogram())?,
            })?,
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(t) => start_time = Some(t),
        }
    }
    Ok(base.or(start_time))
}

/// How many intervals (distinct start times) an interval log holds, without decoding any.
pub fn interval_count(path: &Path) -> Result<usize> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut starts = std::collections::BTreeSet::new();
    for entry in IntervalLogIterator::new(&bytes) {
        if let Ok(LogEntry::Interval(h)) = entry {
            starts.insert(h.start_timestamp());
        }
    }
    Ok(starts.len())
}

/// A histogram as base64 of its compressed V2 encoding (what interval logs carry).
pub fn encode(h: &Histogram<u64>) -> String {
    use base64::Engine;
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serialising to memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// A histogram from `encode`'s text (or an interval log line's histogram field).
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("not base64")?;
    Deserializer::new()
        .deserialize(&mut raw.as_slice())
        .map_err(|e| anyhow::anyhow!("not an HdrHistogram V2 encoding: {e:?}"))
}

/// A histogram that travels in JSON as `encode`'s text, so result files carry whole
/// histograms that `compare` and `report` can merge, never only their percentiles.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded(pub Histogram<u64>);

impl Serialize for Encoded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Encoded {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map(Encoded).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_names_its_operation_and_kind_and_only_caplab_s_tags_parse() {
        for kind in TagKind::ALL {
            assert_eq!(TagKind::parse(&kind.tag("read.rows")), Some(("read.rows", kind)));
        }
        assert_eq!(TagKind::Ok.tag("insert"), "insert.ok");
        assert!(TagKind::Response.is("insert.response") && !TagKind::Response.is("insert.ok"));
        for other in ["insert", "insert.latency", "response"] {
            assert_eq!(TagKind::parse(other), None, "{other}");
        }
    }

    #[test]
    fn target_rates_ride_in_comments_the_histogram_readers_skip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hlog");
        let mut log = HdrLog::create(&path, SystemTime::now()).unwrap();
        let mut h = super::super::recorder::new_histogram();
        h.record(1_000_000).unwrap();
        let second = Duration::from_secs(1);
        for (i, rate) in [250.0, 312.5].into_iter().enumerate() {
            let start = Duration::from_secs(2 + i as u64);
            log.write_target(start, second, rate).unwrap();
            log.write(None, &h, start, second).unwrap();
            log.write(Some("insert.response"), &h, start, second).unwrap();
        }
        let mut read = 0;
        each(&path, |l| {
            assert_eq!(l.histogram.len(), 1);
            read += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(read, 4, "every histogram, no comment taken for one");
        let t = targets(&path).unwrap();
        assert_eq!(
            t.iter()
                .map(|t| (t.start.as_secs(), t.length, t.rate))
                .collect::<Vec<_>>(),
            [(2, second, 250.0), (3, second, 312.5)]
        );
    }

    #[test]
    fn a_second_in_which_no_operation_ended_is_in_the_log_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stall.hlog");
        let mut log = HdrLog::create(&path, SystemTime::now()).unwrap();
        let names = ["insert".to_string()];
        let mut done = OpStats::default();
        done.response.record(2_000_000).unwrap();
        done.ok = 1;
        let second = Duration::from_secs(1);
        let mut all = super::super::recorder::new_histogram();
        for (at, op) in [(2, OpStats::default()), (3, done)] {
            let interval = Interval {
                start: Duration::from_secs(at),
                length: second,
                warmup: false,
                ops: vec![op],
                sent: 1,
            };
            log.write_interval(&names, &interval, &mut all).unwrap();
        }
        let mut read = Vec::new();
        each(&path, |l| {
            read.push((l.start.as_secs(), l.tag, l.histogram.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            read,
            [(2, None, 0), (3, None, 1), (3, Some("insert.response".to_string()), 1)],
            "the stalled second is there, empty, and no tag of an operation that did nothing"
        );
    }

    #[test]
    fn histograms_travel_in_json_whole() {
        let mut h = super::super::recorder::new_histogram();
        for v in [1_500u64, 2_000_000, 3_000_000_000] {
            h.record(v).unwrap();
        }
        let json = serde_json::to_string(&Encoded(h.clone())).unwrap();
        assert!(json.starts_with('"'), "a string: {json}");
        let back: Encoded = serde_json::from_str(&json).unwrap();
        assert_eq!((back.0.len(), back.0.max(), back.0.min()), (3, h.max(), h.min()));
        assert_eq!(back.0.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert!(serde_json::from_str::<Encoded>("\"bm90IGEgaGlzdG9ncmFt\"").is_err());
    }
}
