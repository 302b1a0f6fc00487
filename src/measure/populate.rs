//! A profile's populate phase: every row of every partition written with its populate
//! operation, flat out, before the measured run (progress on stderr, nothing in the results).

use anyhow::{Result, bail};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::console::{group, say};
use crate::engine::{self, Anchor, EndReason, EngineConfig, IntervalSink, LoaderSlice, Sliced, Stop, Warmup};
use crate::metrics::Interval;
use crate::workload::profile_workload::{Populate, ProfileWorkload};

/// A profile's populate phase: its operation, the rows of each partition it writes (None: all)
/// and the operations in flight (None: the run's).
pub struct Populating {
    pub op: String,
    pub rows: Option<u64>,
    pub concurrency: Option<usize>,
}

/// Writes every row of every partition with the profile's populate operation, flat out,
/// before measuring (only the first `rows` of each when the profile bounds them); progress
/// goes to stderr, nothing to the results.
pub async fn populate(
    workload: &Arc<ProfileWorkload>,
    how: &Populating,
    base: &EngineConfig,
    loader: LoaderSlice,
    quiet: bool,
    stop: Arc<Stop>,
) -> Result<()> {
    let (op_name, rows) = (how.op.as_str(), how.rows);
    let op = workload.op_index(op_name).expect("validated populate operation");
    let all = workload.populate_ops(op, rows);
    let total = loader.share(all);
    let what = match rows {
        Some(r) => format!("the first {} row(s) of every partition", group(r as f64)),
        None => "every row of every partition".to_string(),
    };
    say(&format!(
        "Populating: {} operations of '{op_name}' ({})",
        group(total as f64),
        if loader.is_whole() {
            what
        } else {
            format!("loader {loader}'s share of {}: {what}", group(all as f64))
        }
    ));
    struct Progress {
        quiet: bool,
        done: u64,
        errors: u64,
    }
    impl IntervalSink for Progress {
        fn interval(&mut self, iv: &Interval) -> Result<()> {
            let ok: u64 = iv.ops.iter().map(|o| o.ok).sum();
            self.done += ok;
            self.errors += iv.ops.iter().map(|o| o.error_count()).sum::<u64>();
            if !self.quiet && iv.length >= Duration::from_millis(200) {
                eprintln!(
                    "populate {:>10} done  {:>9} op/s",
                    group(self.done as f64),
                    group(ok as f64 / iv.length.as_secs_f64())
                );
            }
            Ok(())
        }
    }
    let cfg = EngineConfig {
        rate: 0.0,
        shape: None,
        duration: None,
        ops: Some(total),
        warmup: Warmup::None,
        concurrency: how.concurrency.unwrap_or(base.concurrency),
        trace: None,
        ..base.clone()
    };
    let progress = Progress {
        quiet,
        done: 0,
        errors: 0,
    };
    let begin = Instant::now();
    let (end, progress) = engine::run(
        Arc::new(Sliced {
            inner: Arc::new(Populate {
                inner: workload.clone(),
                op,
            }),
            slice: loader,
        }),
        &cfg,
        Anchor::now(),
        stop.clone(),
        progress,
    )
    .await;
    if let Some(why) = stop.cause() {
        bail!("populating was interrupted ({why}); the measured run did not start");
    }
    if end.reason != EndReason::Completed || progress.errors > 0 {
        bail!(
            "populating failed: {} of {} operations succeeded, {} failed ({:?}); the measured run did not start",
            group(progress.done as f64),
            group(total as f64),
            group(progress.errors as f64),
            end.reason
        );
    }
    say(&format!("Populated in {:.1}s", begin.elapsed().as_secs_f64()));
    Ok(())
}
