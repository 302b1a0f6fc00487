//! `--validate` for counter workloads: the run keeps which increments were acknowledged (2 bits
//! per operation, as E1's read-back), then every counter row it touched is read and judged
//! against its bounds (`workload::dynamic::Expected`): the sum of its acknowledged increments
//! below, that plus the increments never answered above. Reads go `in_flight` at a time.

use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::Step;
use super::acks_file::{run_tracked, sampled};
use super::result::{About, RunResult};
use super::sinks::Incomplete;
use super::target::Site;
use super::validation::{CounterTotals, ValidateOptions, Validation, read_consistency};
use crate::console::say;
use crate::engine::Stop;
use crate::engine::acks::Acks;
use crate::workload::dynamic::Dynamic;

/// Runs `step` keeping the increments' fates, then reads every counter row touched back.
pub async fn run_validated_counts(
    step: &Step,
    site: &Site,
    workload: &Arc<Dynamic>,
    about: &About,
    v: ValidateOptions,
    stop: Arc<Stop>,
) -> Result<RunResult> {
    let had_rows = workload.counter_tables_have_rows().await;
    let (mut result, acks) = run_tracked(step, site, workload, about, &stop).await?;
    let Some(acks) = acks else { return Ok(result) };
    let consistency = v
        .consistency
        .unwrap_or_else(|| read_consistency(result.config.client.consistency, 1));
    say(&format!(
        "Validating: reading every counter row touched back at {consistency:?}"
    ));
    let in_flight = step.engine.concurrency;
    match check(workload, &acks, consistency, v.fraction, in_flight, &stop, had_rows).await {
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
    consistency: scylla::statement::Consistency,
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
                match w.read_count(&reads[&op], op, p, r, &mut keys).await {
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
