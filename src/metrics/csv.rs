//! The per-second CSV (columns of the E5 talk's client metrics): one row per interval and
//! operation type, each second's rows written together and whole, unbuffered, so each second
//! is on disk when it ends.

use anyhow::Result;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write;
use std::time::SystemTime;

use super::Interval;

/// The E5 talk's columns, then the server's GC and CPU, the rate asked, and the interval's own
/// length (`lengthS`): a run's last interval is usually shorter than a second, and its count and
/// CPU are of that length only (a partial second, not a second at a higher rate).
pub const HEADER: &str = "timestamp,host,table,operationType,count,minMs,medianMs,meanMs,p999Ms,maxMs,serverGcPauseMs,\
                          serverCpuCores,targetRate,lengthS\n";

pub struct CsvLog {
    file: File,
    host: String,
    line: String,
}

impl CsvLog {
    /// `host` names the client machine (several loaders write one CSV each).
    pub fn create(mut file: File, host: String) -> Result<CsvLog> {
        file.write_all(HEADER.as_bytes())?;
        Ok(CsvLog {
            file,
            host,
            line: String::with_capacity(256),
        })
    }

    /// One row per operation type: how many operations were due and their response times
    /// (failures and never-sent ones included, as in the summary); an interval where a type had
    /// none gets a row with count 0 and empty latencies, so every second is present. `server` is the
    /// server's GC pause time (ms) and CPU (cores) in the interval, when known; `target` the
    /// operations a second the schedule asked in it (all types together; None flat out).
    pub fn write(
        &mut self,
        started: SystemTime,
        interval: &Interval,
        ops: &[(String, String)],
        server: Option<(f64, f64)>,
        target: Option<f64>,
    ) -> Result<()> {
        let when = humantime::format_rfc3339_millis(started + interval.start + interval.length);
        self.line.clear();
        for ((op, table), s) in ops.iter().zip(&interval.ops) {
            row(
                &mut self.line,
                &when,
                &self.host,
                (table, op),
                &s.response,
                server,
                (target, interval.length.as_secs_f64()),
            )?;
        }
        self.write_line()
    }

    /// Writes the rows `row` put together since the last write, whole.
    pub fn write_line(&mut self) -> Result<()> {
        // The second's rows all, or none of them.
        super::write_whole(&mut self.file, self.line.as_bytes())?;
        self.line.clear();
        Ok(())
    }

    /// The rows being put together (with `row`), for `write_line`.
    pub fn line(&mut self) -> &mut String {
        &mut self.line
    }
}

/// Appends one row to `line`: `when` (the interval's end), the client host, the operation type's
/// table and name, its response times `h`, the server's GC pause (ms) and CPU (cores), the rate
/// the schedule asked (operations a second, all types together) and the interval's length (s).
pub fn row(
    line: &mut String,
    when: &impl std::fmt::Display,
    host: &str,
    (table, op): (&str, &str),
    h: &hdrhistogram::Histogram<u64>,
    server: Option<(f64, f64)>,
    (target, length_s): (Option<f64>, f64),
) -> Result<()> {
    let ms = |v: u64| v as f64 / 1e6;
    write!(line, "{when},{host},{table},{op},{}", h.len())?;
    if h.is_empty() {
        line.push_str(",,,,,");
    } else {
        write!(
            line,
            ",{:.3},{:.3},{:.3},{:.3},{:.3}",
            ms(h.min()),
            ms(h.value_at_quantile(0.5)),
            h.mean() / 1e6,
            ms(h.value_at_quantile(0.999)),
            ms(h.max())
        )?;
    }
    match server {
        Some((gc_ms, cpu)) => write!(line, ",{gc_ms:.3},{cpu:.3}")?,
        None => line.push_str(",,"),
    }
    match target {
        Some(rate) => write!(line, ",{rate:.1}")?,
        None => line.push(','),
    }
    writeln!(line, ",{length_s:.3}")?;
    Ok(())
}
