//! Read-back for profiles whose writes are plain writes and whole-row deletes
//! (`workload::profile_workload`'s expected rows): every row the run left in a known state is read
//! by key and judged: there with every bound column as generated (`found`), absent though written
//! (`missing`), there with another value or back after a delete (`wrong`), or absent as deleted
//! (`found`, and counted as `deleted`).

use anyhow::Result;
use scylla::statement::Consistency;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::fates::sampled;
use super::found::{PlainTotals, Validation};
use super::readers::{Reader, again, read_all};
use crate::engine::Stop;
use crate::engine::acks::Acks;
use crate::workload::generate::Value;
use crate::workload::profile_workload::{ProfileWorkload, RowFate, TableRead};

type Row = ((usize, u64, u64), RowFate);

struct Rows {
    workload: Arc<ProfileWorkload>,
    reads: Arc<HashMap<usize, TableRead>>,
    rows: Arc<Vec<Row>>,
    keys: Vec<Value>,
    found: Validation,
    deleted: u64,
}

impl Reader for Rows {
    type Tally = (Validation, u64);

    async fn read(&mut self, n: u64) -> bool {
        let Some(&((table, p, r), fate)) = self.rows.get(n as usize) else {
            return false;
        };
        let Some(there) = fate.expect() else { return true };
        let Some(read) = self.reads.get(&table) else {
            self.found.count_unreadable(crate::metrics::ErrorKind::Other);
            return true;
        };
        let mut tries = 0;
        let cells = loop {
            match self.workload.read_cells(read, table, p, r, &mut self.keys).await {
                Err(kind) if again(kind, &mut tries).await => continue,
                answer => break answer,
            }
        };
        let v = &mut self.found;
        v.retried += u64::from(tries);
        match cells {
            Ok(cells) => {
                v.rows += 1;
                match (there, cells) {
                    (true, None) => v.missing += 1,
                    (true, Some(c)) if self.workload.holds(read, &c, fate.written, p, r) => v.found += 1,
                    (false, None) => {
                        v.found += 1;
                        self.deleted += 1;
                    }
                    _ => v.wrong += 1,
                }
            }
            Err(kind) => v.count_unreadable(kind),
        }
        true
    }

    fn tally(self) -> (Validation, u64) {
        (self.found, self.deleted)
    }
}

/// Reads back every row the plain writes and deletes in `acks` left in a known state, at
/// `consistency`, `in_flight` at once, a `fraction` of partitions.
pub async fn plain(
    workload: &Arc<ProfileWorkload>,
    acks: &Acks,
    consistency: Consistency,
    fraction: f64,
    in_flight: usize,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let began = Instant::now();
    let touched = workload.expected_rows(acks, |p| sampled(p, fraction));
    let reads = Arc::new(workload.row_reads(consistency).await?);
    let not_judged = touched.rows.values().filter(|f| f.expect().is_none()).count() as u64;
    let mut columns: Vec<String> = reads.values().flat_map(|r| r.columns.iter().cloned()).collect();
    columns.sort();
    let rows = Arc::new(touched.rows.into_iter().collect());
    let tallies = read_all(in_flight, stop, || Rows {
        workload: workload.clone(),
        reads: reads.clone(),
        rows: Arc::clone(&rows),
        keys: Vec::new(),
        found: Validation::default(),
        deleted: 0,
    })
    .await?;
    let mut all = Validation::begun(consistency, fraction, touched.acknowledged, touched.unknown);
    let mut deleted = 0;
    for (v, d) in tallies {
        all.add(v);
        deleted += d;
    }
    all.plain = Some(PlainTotals {
        deleted,
        not_judged,
        columns,
    });
    all.finish(began, stop);
    Ok(all)
}
