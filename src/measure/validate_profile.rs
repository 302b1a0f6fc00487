//! `--validate` for profiles whose writes say what the tables must hold whatever their order:
//! counters and claims (`workload::dynamic::readback`). The run keeps each operation's fate (2
//! bits, as E1's read-back: acknowledged, not applied, unknown), then every counter row touched
//! is read and judged against its bounds (the sum of its acknowledged increments below, that plus
//! the increments never answered above), or every row a claim won is read at SERIAL and judged:
//! one winner and there. Reads go `in_flight` at a time.

use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::Step;
use super::acks_file::{run_tracked, sampled};
use super::result::{About, RunResult};
use super::sinks::Incomplete;
use super::target::Site;
use super::validation::{ClaimTotals, CounterTotals, ValidateOptions, Validation, read_consistency};
use crate::console::say;
use crate::engine::Stop;
use crate::engine::acks::Acks;
use crate::metrics::ErrorKind;
use crate::workload::dynamic::Dynamic;
use scylla::statement::Consistency;
use scylla::value::CqlValue;

/// Runs `step` keeping the operations' fates, then reads every counter row touched, or every
/// row claimed, back.
pub async fn run_validated_profile(
    step: &Step,
    site: &Site,
    workload: &Arc<Dynamic>,
    about: &About,
    v: ValidateOptions,
    stop: Arc<Stop>,
) -> Result<RunResult> {
    let counters = workload.counts();
    let had_rows = counters && workload.counter_tables_have_rows().await;
    let (mut result, acks) = run_tracked(step, site, workload, about, &stop).await?;
    let Some(acks) = acks else { return Ok(result) };
    let written_at = result.config.client.consistency;
    let checked = read_back(workload, &acks, written_at, v, step.engine.concurrency, &stop, had_rows).await;
    match checked {
        Ok(found) => result.validation = Some(found),
        Err(e) => result.incomplete.push(Incomplete {
            file: "validation".into(),
            reason: format!("the read-back failed: {e:#}"),
        }),
    }
    result.save(&step.out)?;
    Ok(result)
}

/// Reads each counter row the operations in `acks` touched and judges it against its bounds;
/// when the tables held counts before the run (`had_rows`), earlier runs' counts add to this
/// one's and only a shortfall is judged.
pub async fn check(
    workload: &Arc<Dynamic>,
    acks: &Acks,
    consistency: Consistency,
    fraction: f64,
    in_flight: usize,
    stop: &Arc<Stop>,
    had_rows: bool,
) -> Result<Validation> {
    let began = Instant::now();
    let expected = workload.expected_counts(acks, |p| sampled(p, fraction));
    let reads = Arc::new(workload.counter_reads(consistency).await?);
    let rows: Arc<Vec<_>> = Arc::new(expected.rows.into_iter().collect());
    let next = Arc::new(AtomicUsize::new(0));
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..in_flight.max(1) {
        let (w, reads, rows, next, stop) = (
            workload.clone(),
            reads.clone(),
            rows.clone(),
            next.clone(),
            stop.clone(),
        );
        readers.spawn(async move {
            let (mut v, mut totals, mut keys) = (Validation::default(), CounterTotals::default(), Vec::new());
            while !stop.is_requested() {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some(&((op, p, r), b)) = rows.get(n) else { break };
                let read = match w.read_row(&reads[&op], op, p, r, &mut keys).await {
                    Ok(None | Some(None)) => Ok(0),
                    Ok(Some(Some(CqlValue::Counter(c)))) => Ok(c.0),
                    Ok(Some(Some(_))) => Err(ErrorKind::Other),
                    Err(e) => Err(e),
                };
                match read {
                    Ok(count) => {
                        v.rows += 1;
                        totals.low += b.low;
                        totals.high += b.high;
                        totals.read += count;
                        if count < b.low {
                            v.missing += 1;
                        } else if count > b.high {
                            v.wrong += 1;
                        } else {
                            v.found += 1;
                        }
                    }
                    Err(kind) => *v.unreadable.entry(kind.name().to_string()).or_default() += 1,
                }
            }
            (v, totals)
        });
    }
    let mut all = Validation {
        consistency: format!("{consistency:?}"),
        fraction,
        operations: expected.acknowledged,
        unknown: expected.unknown,
        ..Validation::default()
    };
    let mut totals = CounterTotals::default();
    while let Some(joined) = readers.join_next().await {
        let (v, t) = joined?;
        all.add(v);
        totals.low += t.low;
        totals.high += t.high;
        totals.read += t.read;
    }
    all.counters = Some(totals);
    all.table_had_rows = had_rows;
    if had_rows {
        all.found += all.wrong;
        all.wrong = 0;
    }
    all.elapsed_s = began.elapsed().as_secs_f64();
    all.stopped = stop.is_requested();
    Ok(all)
}

/// Reads each row a claim of the run won (at SERIAL by default, which sees every accepted
/// transaction) and judges it: there with one winner (`found`), absent (`missing`), or won by
/// two claims (`wrong`: the cluster applied `IF NOT EXISTS` twice).
pub async fn check_claims(
    workload: &Arc<Dynamic>,
    acks: &Acks,
    consistency: Consistency,
    fraction: f64,
    in_flight: usize,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let began = Instant::now();
    let claimed = workload.expected_claims(acks, |p| sampled(p, fraction));
    let reads = Arc::new(workload.claim_reads(consistency).await?);
    let won: Arc<Vec<_>> = Arc::new(claimed.rows.into_iter().filter(|(_, c)| c.applied > 0).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..in_flight.max(1) {
        let (w, reads, won, next, stop) = (workload.clone(), reads.clone(), won.clone(), next.clone(), stop.clone());
        readers.spawn(async move {
            let (mut v, mut keys) = (Validation::default(), Vec::new());
            while !stop.is_requested() {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some(&((op, p, r), c)) = won.get(n) else { break };
                match w.read_row(&reads[&op], op, p, r, &mut keys).await {
                    Ok(row) => {
                        v.rows += 1;
                        if c.applied > 1 {
                            v.wrong += 1;
                        } else if row.is_none() {
                            v.missing += 1;
                        } else {
                            v.found += 1;
                        }
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
        operations: claimed.applied,
        unknown: claimed.unknown,
        claims: Some(ClaimTotals {
            applied: claimed.applied,
            not_applied: claimed.not_applied,
        }),
        ..Validation::default()
    };
    while let Some(v) = readers.join_next().await {
        all.add(v?);
    }
    all.elapsed_s = began.elapsed().as_secs_f64();
    all.stopped = stop.is_requested();
    Ok(all)
}

/// `caplab validate DIR` for a profile's run: its counters or its claims, read back again.
pub async fn again(
    session: Arc<scylla::client::session::Session>,
    profile: &crate::workload::profile::Profile,
    run: &RunResult,
    acks: &Acks,
    v: ValidateOptions,
    in_flight: usize,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let workload = Arc::new(Dynamic::setup(session, profile, false).await?);
    if !workload.counts() && !workload.claims_rows() {
        anyhow::bail!("a profile's run whose writes are neither counter increments nor claims cannot be read back");
    }
    let had_rows = run.validation.as_ref().is_some_and(|v| v.table_had_rows);
    let written_at = run.config.client.consistency;
    read_back(&workload, acks, written_at, v, in_flight, stop, had_rows).await
}

/// Reads a counter workload's rows back at `v`'s consistency (default: one that overlaps the
/// writes at `written_at`), or a claims workload's at SERIAL by default.
async fn read_back(
    workload: &Arc<Dynamic>,
    acks: &Acks,
    written_at: Consistency,
    v: ValidateOptions,
    in_flight: usize,
    stop: &Arc<Stop>,
    had_rows: bool,
) -> Result<Validation> {
    if workload.counts() {
        let consistency = v.consistency.unwrap_or_else(|| read_consistency(written_at, 1));
        say(&format!(
            "Validating: reading every counter row touched back at {consistency:?}"
        ));
        check(workload, acks, consistency, v.fraction, in_flight, stop, had_rows).await
    } else {
        let consistency = v.consistency.unwrap_or(Consistency::Serial);
        say(&format!(
            "Validating: reading every row a claim won back at {consistency:?}"
        ));
        check_claims(workload, acks, consistency, v.fraction, in_flight, stop).await
    }
}
