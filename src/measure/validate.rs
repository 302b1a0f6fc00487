//! Reading back what the cluster acknowledged (`--validate`): after the measured window (and
//! after any fault has been undone), every write the cluster acknowledged, or a fraction of them
//! chosen by a hash of the operation's index, is read back at a consistency that overlaps the
//! write's, and compared with the rows and values the operation wrote (recomputed from its
//! index: nothing is kept but 2 bits per operation, `engine::acks`). Writes that failed or timed
//! out are *unknown* (they may or may not have been applied) and counted apart; never-sent ones
//! are not writes. The operations' fates are saved beside the results (`acks.bin`), so `caplab
//! validate DIR` can check them again later: after a repair, a node replacement, an upgrade.

use anyhow::{Context, Result};
use scylla::statement::Consistency;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::Step;
pub use super::acks_file::{ACKS_FILE, load_acks, run_tracked, sampled, save_acks};
use super::result::{About, RunResult, WorkloadRecord};
use super::sinks::Incomplete;
use super::target::Site;
pub use super::validation::{ValidateOptions, Validation, parse_fraction, read_consistency};
use crate::console::say;
use crate::engine::acks::{Acks, Fate};
use crate::engine::{Stop, Workload};
use crate::workload::e1::{E1, RowBuf};

/// Examples of operations with missing or wrong rows kept in the result.
const EXAMPLES: usize = 10;

/// Reads back the acknowledged operations of `acks` from `workload` at `consistency`, `in_flight`
/// reads at once (the run's concurrency: 256 read back 657,285 rows in 14-15 s here, 64 in
/// 16-17 s, ABAB); `stop` ends it early (what was read so far is returned).
pub async fn validate(
    workload: &Arc<E1>,
    acks: &Arc<Acks>,
    consistency: Consistency,
    fraction: f64,
    in_flight: usize,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let began = Instant::now();
    let stmt = Arc::new(workload.read_back_statement(consistency).await?);
    let next = Arc::new(AtomicU64::new(0));
    let extent = acks.extent();
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..in_flight.max(1) {
        let (w, acks, stmt, next, stop) = (workload.clone(), acks.clone(), stmt.clone(), next.clone(), stop.clone());
        readers.spawn(async move {
            let mut rows: Vec<RowBuf> = w.worker(0);
            let mut v = Validation::default();
            while !stop.is_requested() {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= extent {
                    break;
                }
                match acks.fate(i) {
                    Fate::NotSent | Fate::NotApplied => continue,
                    Fate::Unknown => {
                        v.unknown += 1;
                        continue;
                    }
                    Fate::Acknowledged if !sampled(i, fraction) => continue,
                    Fate::Acknowledged => {}
                }
                v.operations += 1;
                match w.read_back(&stmt, &mut rows, i).await {
                    Ok(back) => {
                        let one = Validation {
                            rows: back.rows,
                            found: back.found,
                            missing: back.missing,
                            wrong: back.wrong,
                            ..Validation::default()
                        };
                        // Each reader meets its indices in increasing order: its first
                        // EXAMPLES hold every one of the run's first EXAMPLES it read.
                        if one.lost() > 0 && v.examples.len() < EXAMPLES {
                            v.examples.push(i);
                        }
                        v.add(one);
                    }
                    Err(kind) => *v.unreadable.entry(kind.name().to_string()).or_default() += 1,
                }
            }
            v
        });
    }
    let mut all = Validation {
        consistency: format!("{consistency:?}"),
        fraction,
        ..Validation::default()
    };
    while let Some(v) = readers.join_next().await {
        all.add(v.context("a read-back task failed")?);
    }
    all.examples.sort_unstable();
    all.examples.truncate(EXAMPLES);
    all.elapsed_s = began.elapsed().as_secs_f64();
    all.stopped = stop.is_requested();
    Ok(all)
}

/// Runs `step` with E1's `workload`, keeping which operations were acknowledged, then reads
/// them back (unless the step was interrupted: `caplab validate DIR` can do it later) and
/// records what it found in the step's result.json.
pub async fn run_validated(
    step: &Step,
    site: &Site,
    workload: &Arc<E1>,
    about: &About,
    v: ValidateOptions,
    stop: Arc<Stop>,
) -> Result<RunResult> {
    let had_rows = workload.has_rows().await.unwrap_or(false);
    let (mut result, acks) = run_tracked(step, site, workload, about, &stop).await?;
    let Some(acks) = acks else { return Ok(result) };
    let consistency = v
        .consistency
        .unwrap_or_else(|| read_consistency(result.config.client.consistency, workload.options().replication_factor));
    say(&format!(
        "Validating: reading back the acknowledged writes at {consistency:?}"
    ));
    match validate(workload, &acks, consistency, v.fraction, step.engine.concurrency, &stop).await {
        Ok(mut found) => {
            found.table_had_rows = had_rows;
            result.validation = Some(found);
        }
        Err(e) => result.incomplete.push(Incomplete {
            file: "validation".into(),
            reason: format!(
                "the read-back failed: {e:#}; `caplab validate {}` tries again",
                step.out.display()
            ),
        }),
    }
    result.save(&step.out)?;
    Ok(result)
}

/// Reads back the acknowledged writes of the run in `dir` again (`caplab validate DIR`), from
/// the hosts it used (or `hosts`), at `v`'s consistency (None: as the run would have), with
/// `in_flight` reads at once (None: the run's concurrency).
pub async fn validate_dir(
    dir: &Path,
    hosts: Option<Vec<String>>,
    v: ValidateOptions,
    in_flight: Option<usize>,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let run = RunResult::load(dir)?;
    let acks = Arc::new(load_acks(dir)?);
    let mut client = run.config.client.clone();
    if let Some(h) = hosts {
        client.hosts = h;
    }
    let hosts = client.hosts.join(",");
    let target = super::Target::connect(client, Vec::new())
        .await
        .with_context(|| format!("the run reached the cluster at {hosts}; if it is elsewhere now, give --hosts"))?;
    let in_flight = in_flight.unwrap_or(run.config.engine.concurrency);
    let opts = match &run.config.workload {
        WorkloadRecord::E1(opts) => opts,
        WorkloadRecord::Profile { definition, .. } => {
            let session = target.session.clone();
            return super::validate_profile::again(session, definition, &run, &acks, v, in_flight, stop).await;
        }
    };
    let workload = Arc::new(E1::setup(target.session.clone(), opts.clone(), false).await?);
    let consistency = v
        .consistency
        .unwrap_or_else(|| read_consistency(run.config.client.consistency, opts.replication_factor));
    say(&format!(
        "Validating {}: reading back its acknowledged writes at {consistency:?}",
        dir.display()
    ));
    validate(&workload, &acks, consistency, v.fraction, in_flight, stop).await
}
