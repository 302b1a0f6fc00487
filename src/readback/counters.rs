//! Read-back for profiles whose writes say what the tables must hold whatever their order:
//! counters and claims here, plain writes and deletes in `plain` (`workload::profile_workload`'s expected counts and claims). Every counter row
//! touched is read and judged against its bounds (the sum of its acknowledged increments below,
//! that plus the increments never answered above), or every row a claim won is read at SERIAL and
//! judged: one winner, and there.

use anyhow::Result;
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::fates::sampled;
use super::found::{ClaimTotals, CounterTotals, ValidateOptions, Validation, read_consistency};
use super::readers::{Reader, again, read_all};
use crate::console::say;
use crate::engine::Stop;
use crate::engine::acks::Acks;
use crate::metrics::ErrorKind;
use crate::workload::profile_workload::{Bounds, Claims, ProfileWorkload};

/// A profile's rows, read back: a counter workload's at `v`'s consistency (default: one that
/// overlaps the writes at `written_at`), a claims workload's at SERIAL by default. When the
/// counter tables held counts before the run (`had_rows`), earlier runs' counts add to this
/// one's and only a shortfall is judged.
pub async fn read_back_profile(
    workload: &Arc<ProfileWorkload>,
    acks: &Acks,
    written_at: Consistency,
    v: ValidateOptions,
    in_flight: usize,
    stop: &Arc<Stop>,
    had_rows: bool,
) -> Result<Validation> {
    if !workload.counts() && !workload.claims_rows() && !workload.writes_plainly() {
        anyhow::bail!(
            "a profile's run whose writes are neither counter increments, claims nor plain writes and deletes cannot be read back"
        );
    }
    // Read where the writes are sure to be: at their own level when it overlaps every read
    // (2 × written > replicas), else at ALL, as for E1.
    let read_at = |w, replicas: Option<u32>| replicas.map_or(Consistency::All, |rf| read_consistency(w, rf));
    if workload.counts() {
        let consistency = v
            .consistency
            .unwrap_or_else(|| read_at(written_at, workload.replicas()));
        say(&format!(
            "Validating: reading every counter row touched back at {consistency:?}"
        ));
        counters(workload, acks, consistency, v.fraction, in_flight, stop, had_rows).await
    } else if !workload.claims_rows() {
        let consistency = v
            .consistency
            .unwrap_or_else(|| read_at(written_at, workload.replicas()));
        say(&format!(
            "Validating: reading every row the run's writes and deletes touched back at {consistency:?}"
        ));
        let mut found = super::plain::plain(workload, acks, consistency, v.fraction, in_flight, stop).await?;
        found.table_had_rows = had_rows;
        Ok(found)
    } else {
        let consistency = v.consistency.unwrap_or(Consistency::Serial);
        say(&format!(
            "Validating: reading every row a claim won back at {consistency:?}"
        ));
        claims(workload, acks, consistency, v.fraction, in_flight, stop).await
    }
}

/// A row to read: (operation, partition, row) and what it should hold.
type Row<T> = ((usize, u64, u64), T);

/// Reads rows of a profile by key, one statement per operation.
struct Rows<T> {
    workload: Arc<ProfileWorkload>,
    reads: Arc<HashMap<usize, PreparedStatement>>,
    rows: Arc<Vec<Row<T>>>,
    keys: Vec<crate::workload::generate::Value>,
    found: Validation,
    totals: CounterTotals,
}

impl<T> Rows<T> {
    fn new(
        workload: &Arc<ProfileWorkload>,
        reads: &Arc<HashMap<usize, PreparedStatement>>,
        rows: &Arc<Vec<Row<T>>>,
    ) -> Rows<T> {
        Rows {
            workload: workload.clone(),
            reads: reads.clone(),
            rows: rows.clone(),
            keys: Vec::new(),
            found: Validation::default(),
            totals: CounterTotals::default(),
        }
    }

    /// The first column of operation `op`'s row (partition `p`, row `r`), tried again while the
    /// read says nothing of the row (the retries counted); None when the row is absent.
    async fn read_row(&mut self, op: usize, p: u64, r: u64) -> Result<Option<Option<CqlValue>>, ErrorKind> {
        let mut tries = 0;
        let row = loop {
            match self.workload.read_row(&self.reads[&op], op, p, r, &mut self.keys).await {
                Err(kind) if again(kind, &mut tries).await => continue,
                answer => break answer,
            }
        };
        self.found.retried += u64::from(tries);
        row
    }
}

impl Reader for Rows<Bounds> {
    type Tally = (Validation, CounterTotals);

    async fn read(&mut self, n: u64) -> bool {
        let Some(&((op, p, r), b)) = self.rows.get(n as usize) else {
            return false;
        };
        let read = match self.read_row(op, p, r).await {
            Ok(None | Some(None)) => Ok(0),
            Ok(Some(Some(CqlValue::Counter(c)))) => Ok(c.0),
            Ok(Some(Some(_))) => Err(ErrorKind::Other),
            Err(e) => Err(e),
        };
        let v = &mut self.found;
        match read {
            Ok(count) => {
                v.rows += 1;
                self.totals.low += b.low;
                self.totals.high += b.high;
                self.totals.read += count;
                if count < b.low {
                    v.missing += 1;
                } else if count > b.high {
                    v.wrong += 1;
                } else {
                    v.found += 1;
                }
            }
            Err(kind) => v.count_unreadable(kind),
        }
        true
    }

    fn tally(self) -> (Validation, CounterTotals) {
        (self.found, self.totals)
    }
}

impl Reader for Rows<Claims> {
    type Tally = Validation;

    async fn read(&mut self, n: u64) -> bool {
        let Some(&((op, p, r), c)) = self.rows.get(n as usize) else {
            return false;
        };
        let row = self.read_row(op, p, r).await;
        let v = &mut self.found;
        match row {
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
            Err(kind) => v.count_unreadable(kind),
        }
        true
    }

    fn tally(self) -> Validation {
        self.found
    }
}

/// Reads each counter row the operations in `acks` touched and judges it against its bounds.
async fn counters(
    workload: &Arc<ProfileWorkload>,
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
    let rows = Arc::new(expected.rows.into_iter().collect());
    let tallies = read_all(in_flight, stop, || Rows::<Bounds>::new(workload, &reads, &rows)).await?;
    let mut all = Validation::begun(consistency, fraction, expected.acknowledged, expected.unknown);
    let mut totals = CounterTotals::default();
    for (v, t) in tallies {
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
    all.finish(began, stop);
    Ok(all)
}

/// Reads each row a claim of the run won (at SERIAL by default, which sees every accepted
/// transaction) and judges it: there with one winner (`found`), absent (`missing`), or won by
/// two claims (`wrong`: the cluster applied `IF NOT EXISTS` twice).
async fn claims(
    workload: &Arc<ProfileWorkload>,
    acks: &Acks,
    consistency: Consistency,
    fraction: f64,
    in_flight: usize,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let began = Instant::now();
    let claimed = workload.expected_claims(acks, |p| sampled(p, fraction));
    let reads = Arc::new(workload.claim_reads(consistency).await?);
    let won = Arc::new(claimed.rows.into_iter().filter(|(_, c)| c.applied > 0).collect());
    let tallies = read_all(in_flight, stop, || Rows::<Claims>::new(workload, &reads, &won)).await?;
    let mut all = Validation {
        claims: Some(ClaimTotals {
            applied: claimed.applied,
            not_applied: claimed.not_applied,
        }),
        ..Validation::begun(consistency, fraction, claimed.applied, claimed.unknown)
    };
    for v in tallies {
        all.add(v);
    }
    all.finish(began, stop);
    Ok(all)
}
