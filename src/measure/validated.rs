//! Measured steps whose acknowledged writes are read back (`--validate`): the step runs with
//! each operation's fate tracked (2 bits an operation), the fates are saved beside the results,
//! and `readback` reads the writes back after the window (unless the run was stopped: `caplab
//! validate DIR` can do it later, from what the directory keeps).

use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Arc;

use super::Step;
use super::about::About;
use super::result::{RunResult, WorkloadRecord};
use super::sinks::Incomplete;
use super::target::Site;
use crate::console::say;
use crate::engine::acks::{Acks, Tracked};
use crate::engine::{Stop, Workload};
use crate::readback::{
    ACKS_FILE, ValidateOptions, Validation, load_acks, read_back_e1, read_back_profile, read_consistency, save_acks,
};
use crate::workload::e1::E1;
use crate::workload::profile_workload::ProfileWorkload;

/// Runs `step` with `workload`, keeping which operations were acknowledged, and saves that
/// beside the results. None for the fates when the run was stopped: nothing is read back then,
/// and the result is saved as it is.
async fn run_tracked<W: Workload>(
    step: &Step,
    site: &Site,
    workload: &Arc<W>,
    about: &About,
    stop: &Arc<Stop>,
) -> Result<(RunResult, Option<Arc<Acks>>)> {
    let acks = Arc::new(Acks::new());
    let tracked = Arc::new(Tracked {
        inner: workload.clone(),
        acks: acks.clone(),
    });
    let mut result = step.run(site, tracked, about.clone(), stop.clone()).await?;
    if let Err(e) = save_acks(&step.out, &acks) {
        result.incomplete.push(Incomplete {
            file: ACKS_FILE.into(),
            reason: format!("{e:#}"),
        });
    }
    if stop.is_requested() {
        say(&format!(
            "Not validated: the run was stopped. `caplab validate {}` reads its writes back later",
            step.out.display()
        ));
        result.save(&step.out)?;
        return Ok((result, None));
    }
    Ok((result, Some(acks)))
}

/// Keeps what the read-back found in the result (or why it failed), and saves the result.
fn record(step: &Step, mut result: RunResult, found: Result<Validation>) -> Result<RunResult> {
    match found {
        Ok(found) => result.validation = Some(found),
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

/// Runs `step` with E1's `workload`, then reads back its acknowledged writes and records what it
/// found in the step's result.json.
pub async fn run_validated_e1(
    step: &Step,
    site: &Site,
    workload: &Arc<E1>,
    about: &About,
    v: ValidateOptions,
    stop: Arc<Stop>,
) -> Result<RunResult> {
    let had_rows = workload.has_rows().await.unwrap_or(false);
    let (result, acks) = run_tracked(step, site, workload, about, &stop).await?;
    let Some(acks) = acks else { return Ok(result) };
    let consistency = v
        .consistency
        .unwrap_or_else(|| read_consistency(result.config.client.consistency, workload.options().replication_factor));
    say(&format!(
        "Validating: reading back the acknowledged writes at {consistency:?}"
    ));
    let found = read_back_e1(workload, &acks, consistency, v.fraction, step.engine.concurrency, &stop)
        .await
        .map(|found| Validation {
            table_had_rows: had_rows,
            ..found
        });
    record(step, result, found)
}

/// Runs `step` with a counter, claims or plain-writes profile, then reads every counter row
/// touched, every row claimed, or every row written or deleted, back.
pub async fn run_validated_profile(
    step: &Step,
    site: &Site,
    workload: &Arc<ProfileWorkload>,
    about: &About,
    v: ValidateOptions,
    stop: Arc<Stop>,
) -> Result<RunResult> {
    let had_rows = if workload.counts() {
        workload.counter_tables_have_rows().await
    } else {
        !workload.claims_rows() && workload.row_tables_have_rows().await
    };
    let (result, acks) = run_tracked(step, site, workload, about, &stop).await?;
    let Some(acks) = acks else { return Ok(result) };
    let written_at = result.config.client.consistency;
    let found = read_back_profile(workload, &acks, written_at, v, step.engine.concurrency, &stop, had_rows).await;
    record(step, result, found)
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
    let session = target.session.clone();
    match &run.config.workload {
        WorkloadRecord::Profile { definition, .. } => {
            let workload = Arc::new(ProfileWorkload::setup(session, definition, false).await?);
            let had_rows = run.validation.as_ref().is_some_and(|v| v.table_had_rows);
            let written_at = run.config.client.consistency;
            read_back_profile(&workload, &acks, written_at, v, in_flight, stop, had_rows).await
        }
        WorkloadRecord::Replay { .. } => anyhow::bail!(
            "{} is a replay: it sends what its trace holds and keeps no acknowledged writes to read back",
            dir.display()
        ),
        WorkloadRecord::Bank { .. } => anyhow::bail!(
            "{} is a bank run: it checked its invariant itself (result.json `bank`); a bank run keeps no acknowledged writes to read back",
            dir.display()
        ),
        WorkloadRecord::E1(opts) => {
            let workload = Arc::new(E1::setup(session, opts.clone(), false).await?);
            let consistency = v
                .consistency
                .unwrap_or_else(|| read_consistency(run.config.client.consistency, opts.replication_factor));
            say(&format!(
                "Validating {}: reading back its acknowledged writes at {consistency:?}",
                dir.display()
            ));
            read_back_e1(&workload, &acks, consistency, v.fraction, in_flight, stop).await
        }
    }
}
