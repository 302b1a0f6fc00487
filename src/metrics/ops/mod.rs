//! Every operation, one row each (`--ops-parquet FILE`): what the histograms summarise, kept
//! for DuckDB, pandas or Polars. Workers add a row to their own shard (a worker always uses the
//! same one, as with the recorder, so the lock is uncontended and the shard's buffer, once
//! grown, is reused); once an interval the run loop hands the shards to a writer thread, which
//! writes them as Parquet row groups away from the workers (`file.rs`) and hands the emptied
//! buffers back.

mod file;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use super::ErrorKind;
use super::recorder::{Completion, ns_since, response_from};

/// Where a run writes its operations, and which loader it is.
#[derive(Debug, Clone, PartialEq)]
pub struct OpsTarget {
    pub path: PathBuf,
    /// The loader's number (1 for a run alone), so that loaders' files make one dataset.
    pub loader: u32,
}

/// What a workload says of operation `i` besides its timing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpFacts {
    /// Its index among all loaders' operations.
    pub index: u64,
    /// The workload's number for the partition it wrote or read (E1 and profiles: the same
    /// number is always the same partition key).
    pub partition: Option<u64>,
    /// The Murmur3 token of its partition key, where the workload knows it (a replay).
    pub token: Option<i64>,
    /// Which of the workload's statements (`Workload::statements`) it sent.
    pub statement: Option<u32>,
}

/// One operation as the writer receives it: times in nanoseconds after the run's start.
#[derive(Debug, Clone, Copy)]
struct OpRow {
    facts: OpFacts,
    op: u16,
    intended: i64,
    /// From where its response time is counted (the earlier of intended and sent).
    from: i64,
    sent: Option<i64>,
    done: i64,
    error: Option<ErrorKind>,
    rows: u64,
    measured: bool,
}

/// The operations file as written (result.json's `files.operations`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpsFile {
    pub path: String,
    pub rows: u64,
    pub row_groups: u64,
    pub bytes: u64,
    /// CPU time the writer thread spent (encoding, compressing, writing), seconds.
    pub writer_cpu_s: f64,
}

/// The operations of one run, on their way to the file.
pub struct OpsLog {
    t0: Instant,
    shards: Vec<Mutex<Vec<OpRow>>>,
    to_writer: Mutex<Option<Sender<Vec<Vec<OpRow>>>>>,
    /// Emptied buffers the writer handed back, for the shards' next interval.
    spare: Arc<Mutex<Vec<Vec<OpRow>>>>,
    failed: Arc<OnceLock<String>>,
    writer: Mutex<Option<JoinHandle<Result<OpsFile>>>>,
}

impl OpsLog {
    /// Creates the file (refusing one that cannot be written) and starts its writer thread.
    /// `wall` is the wall-clock time of `t0`; `names` the operation types, `statements` the
    /// texts `OpFacts::statement` indexes.
    pub fn create(
        target: &OpsTarget,
        t0: Instant,
        wall: SystemTime,
        names: Vec<String>,
        statements: Vec<String>,
        shards: usize,
    ) -> Result<OpsLog> {
        let out = std::fs::File::create(&target.path).with_context(|| {
            format!(
                "cannot create the operations file {}: give --ops-parquet a path in a directory that exists and can be written",
                target.path.display()
            )
        })?;
        let t0_ns = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let mut writer = file::Writer::new(out, target, t0_ns, names, statements)?;
        let (to_writer, rows) = channel::<Vec<Vec<OpRow>>>();
        let spare = Arc::new(Mutex::new(Vec::new()));
        let back = spare.clone();
        let failed = Arc::new(OnceLock::new());
        let fail = failed.clone();
        let writer = std::thread::Builder::new().name("caplab-ops".into()).spawn(move || {
            let cpu = thread_cpu_s();
            for batch in rows {
                for mut shard in batch {
                    if fail.get().is_none()
                        && let Err(e) = writer.add(&shard)
                    {
                        let _ = fail.set(format!("{e:#}"));
                    }
                    shard.clear();
                    back.lock().unwrap_or_else(|p| p.into_inner()).push(shard);
                }
            }
            let mut done = writer.finish()?;
            done.writer_cpu_s = thread_cpu_s() - cpu;
            match fail.get() {
                Some(e) => Err(anyhow::anyhow!("{e}")),
                None => Ok(done),
            }
        })?;
        Ok(OpsLog {
            t0,
            shards: (0..shards.max(1)).map(|_| Mutex::new(Vec::new())).collect(),
            to_writer: Mutex::new(Some(to_writer)),
            spare,
            failed,
            writer: Mutex::new(Some(writer)),
        })
    }

    fn ns(&self, at: Instant) -> i64 {
        ns_since(self.t0, at)
    }

    /// Adds one operation to shard `shard` (the caller, a worker, always passes the same one).
    pub fn record(&self, shard: usize, c: &Completion, facts: OpFacts) {
        let row = OpRow {
            facts,
            op: c.op as u16,
            intended: self.ns(c.intended),
            from: self.ns(response_from(c)),
            sent: c.sent.map(|s| self.ns(s)),
            done: self.ns(c.done),
            error: c.result.err(),
            rows: c.result.map_or(0, |(rows, _)| rows),
            measured: c.measured,
        };
        self.shards[shard % self.shards.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(row);
    }

    /// Hands what the shards hold to the writer, leaving emptied buffers (the writer's, once
    /// it has handed some back) in their place.
    pub fn hand_over(&self) {
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        let batch: Vec<Vec<OpRow>> = self
            .shards
            .iter()
            .map(|s| {
                let fresh = spare.pop().unwrap_or_default();
                std::mem::replace(&mut *s.lock().unwrap_or_else(|p| p.into_inner()), fresh)
            })
            .collect();
        if let Some(tx) = &*self.to_writer.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(batch);
        }
    }

    /// Emptied buffers the writer has handed back so far, ready for the next interval.
    pub fn spare_buffers(&self) -> usize {
        self.spare.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Why writing failed (a full disk), if it did.
    pub fn failed(&self) -> Option<String> {
        self.failed.get().cloned()
    }

    /// Hands over the last rows and waits for the writer to close the file.
    pub fn finish(&self) -> Result<OpsFile> {
        self.hand_over();
        self.to_writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        match writer {
            Some(w) => w
                .join()
                .map_err(|_| anyhow::anyhow!("the operations file's writer panicked"))?,
            None => anyhow::bail!("the operations file was already finished"),
        }
    }
}

/// CPU time of the calling thread, seconds.
fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// The rows of a file, each as its columns by name.
    fn read(path: &std::path::Path) -> Vec<BTreeMap<String, Field>> {
        let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| {
                r.unwrap()
                    .get_column_iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn each_operation_is_a_row_with_its_times_outcome_and_facts() {
        let dir = tempfile::tempdir().unwrap();
        let target = OpsTarget {
            path: dir.path().join("ops.parquet"),
            loader: 2,
        };
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let names = vec!["select".to_string(), "insert".to_string()];
        let log = OpsLog::create(&target, t0, wall, names, vec!["SELECT 1".into()], 2).unwrap();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let done = |op, intended, sent: Option<u64>, end, result, measured| Completion {
            op,
            intended: at(intended),
            sent: sent.map(at),
            done: at(end),
            result,
            measured,
            waited: false,
        };
        let facts = |index, token| OpFacts {
            index,
            partition: Some(index * 10),
            token,
            statement: (index != 2).then_some(0),
        };
        // Sent late; sent a little early (its response counts from the send); never sent; failed.
        log.record(
            1,
            &done(0, 1_000, Some(1_500), 2_000, Ok((3, 1)), true),
            facts(1, Some(-7)),
        );
        log.record(0, &done(1, 500, Some(400), 900, Ok((1, 1)), false), facts(0, None));
        log.hand_over();
        log.record(
            0,
            &done(1, 3_000, None, 9_000, Err(ErrorKind::NotSent), true),
            facts(2, None),
        );
        log.record(
            1,
            &done(0, 4_000, Some(4_000), 5_000, Err(ErrorKind::ServerTimeout), true),
            facts(3, None),
        );
        let file = log.finish().unwrap();
        assert_eq!((file.rows, file.row_groups), (4, 1));
        assert_eq!(file.bytes, std::fs::metadata(&target.path).unwrap().len());

        let rows = read(&target.path);
        let long = |r: &BTreeMap<String, Field>, k: &str| match &r[k] {
            Field::Long(v) => Some(*v),
            Field::Null => None,
            other => panic!("{k}: {other:?}"),
        };
        let text = |r: &BTreeMap<String, Field>, k: &str| match &r[k] {
            Field::Str(s) => Some(s.clone()),
            Field::Null => None,
            other => panic!("{k}: {other:?}"),
        };
        // Sorted by intended start.
        let index: Vec<i64> = rows.iter().map(|r| long(r, "index").unwrap()).collect();
        assert_eq!(index, [0, 1, 2, 3]);
        let us = |v: i64| v / 1_000;
        let expect = [
            // response, service, error, rows, operation, token, measured
            (500, Some(500), None, 1, "insert", None, false),
            (1_000, Some(500), None, 3, "select", Some(-7), true),
            (6_000, None, Some("not_sent"), 0, "insert", None, true),
            (1_000, Some(1_000), Some("server_timeout"), 0, "select", None, true),
        ];
        for (r, e) in rows.iter().zip(expect) {
            assert_eq!(us(long(r, "response_ns").unwrap()), e.0, "{r:?}");
            assert_eq!(long(r, "service_ns").map(us), e.1, "{r:?}");
            assert_eq!(text(r, "error").as_deref(), e.2, "{r:?}");
            assert_eq!(long(r, "rows"), Some(e.3), "{r:?}");
            assert_eq!(text(r, "operation").as_deref(), Some(e.4), "{r:?}");
            assert_eq!(long(r, "token"), e.5, "{r:?}");
            assert_eq!(r["measured"], Field::Bool(e.6), "{r:?}");
            assert_eq!(r["loader"], Field::Int(2));
            assert_eq!(long(r, "partition"), Some(long(r, "index").unwrap() * 10));
        }
        assert_eq!(text(&rows[2], "statement"), None);
        assert_eq!(text(&rows[3], "statement").as_deref(), Some("SELECT 1"));
        // Timestamps are UTC nanoseconds: the run's wall-clock start plus each offset.
        // (This reader gives nanosecond timestamps as their integers.)
        let epoch_ns = 1_700_000_000_000_000_000i64;
        let since = |r: &BTreeMap<String, Field>, k: &str| long(r, k).map(|v| us(v - epoch_ns));
        assert_eq!(
            (
                since(&rows[1], "intended"),
                since(&rows[1], "started"),
                since(&rows[1], "ended")
            ),
            (Some(1_000), Some(1_500), Some(2_000))
        );
        assert_eq!(since(&rows[2], "started"), None);
    }

    #[test]
    fn a_file_that_cannot_be_created_is_refused_with_its_fix() {
        let target = OpsTarget {
            path: "/nonexistent-dir/ops.parquet".into(),
            loader: 1,
        };
        let e = OpsLog::create(&target, Instant::now(), SystemTime::now(), vec![], vec![], 1)
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("a directory that exists"), "{e:#}");
    }
}
