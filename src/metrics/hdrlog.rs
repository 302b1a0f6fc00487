//! The HdrHistogram interval log: one compressed histogram per interval, operation type and
//! measure (tags `<op>.response`, `<op>.service`, `<op>.error`), values in nanoseconds, with
//! the header lines and max-value divisor (ns → ms) that Java's HistogramLogProcessor expects.
//! Written unbuffered, so every completed interval is on disk.

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Interval;

/// Java's HistogramLogWriter prints interval maxima in milliseconds for nanosecond values.
pub const MAX_VALUE_DIVISOR: f64 = 1_000_000.0;

/// Writes the header lines to `file` and returns a writer for the intervals.
pub fn begin<'a>(
    file: &'a mut File,
    serializer: &'a mut V2DeflateSerializer,
    started: SystemTime,
) -> Result<IntervalLogWriter<'a, 'a, File, V2DeflateSerializer>> {
    let secs = started.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    let when = humantime::format_rfc3339_millis(started);
    write!(
        file,
        "#[Logged with caplab {}]\n#[Histogram log format version 1.3]\n#[StartTime: {secs:.3} (seconds since epoch), {when}]\n#[BaseTime: {secs:.3} (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
        env!("CARGO_PKG_VERSION")
    )?;
    IntervalLogWriterBuilder::new()
        .with_max_value_divisor(MAX_VALUE_DIVISOR)
        .begin_log_with(file, serializer)
        .context("cannot start the interval log")
}

/// Appends one interval: three histograms per operation type that had any.
pub fn write_interval(
    log: &mut IntervalLogWriter<'_, '_, File, V2DeflateSerializer>,
    op_names: &[String],
    interval: &Interval,
    tag_buf: &mut String,
) -> Result<()> {
    for (name, s) in op_names.iter().zip(&interval.ops) {
        for (measure, h) in [
            ("response", &s.response),
            ("service", &s.service),
            ("error", &s.error_response),
        ] {
            if h.is_empty() {
                continue;
            }
            tag_buf.clear();
            tag_buf.push_str(name);
            tag_buf.push('.');
            tag_buf.push_str(measure);
            let tag = Tag::new(tag_buf).context("operation names must not contain ',' or spaces")?;
            log.write_histogram(h, interval.start, interval.length, Some(tag))
                .map_err(|e| anyhow::anyhow!("cannot write the interval log: {e}"))?;
        }
    }
    Ok(())
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
