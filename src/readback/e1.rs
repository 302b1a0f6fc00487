//! E1's read-back: each acknowledged operation's rows are recomputed from its index and read
//! back by key (`workload::e1`'s `read_back`), and compared with what was written.

use anyhow::Result;
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use std::sync::Arc;
use std::time::Instant;

use super::fates::sampled;
use super::found::Validation;
use super::readers::{Reader, again, read_all};
use crate::engine::acks::{Acks, Fate};
use crate::engine::{Stop, Workload};
use crate::workload::e1::{E1, RowBuf};

/// Examples of operations with missing or wrong rows kept in the result.
const EXAMPLES: usize = 10;

/// Reads back the acknowledged operations of `acks` from `workload` at `consistency`, `in_flight`
/// reads at once; `stop` ends it early (what was read so far is returned).
pub async fn read_back_e1(
    workload: &Arc<E1>,
    acks: &Arc<Acks>,
    consistency: Consistency,
    fraction: f64,
    in_flight: usize,
    stop: &Arc<Stop>,
) -> Result<Validation> {
    let began = Instant::now();
    let stmts = Arc::new(workload.read_back_statements(consistency).await?);
    // Once: `extent` looks through every chunk slot of the bitmaps (asked before each read, it
    // cost 74 s of client CPU to read back 1,000 rows in a debug build).
    let extent = acks.extent();
    let tallies = read_all(in_flight, stop, || Operations {
        workload: workload.clone(),
        acks: acks.clone(),
        extent,
        stmts: stmts.clone(),
        fraction,
        rows: workload.worker(0),
        found: Validation::default(),
    })
    .await?;
    let mut all = Validation::begun(consistency, fraction, 0, 0);
    for v in tallies {
        all.add(v);
    }
    all.examples.sort_unstable();
    all.examples.truncate(EXAMPLES);
    all.finish(began, stop);
    Ok(all)
}

/// A reader of operations by index.
struct Operations {
    workload: Arc<E1>,
    acks: Arc<Acks>,
    /// One past the last operation index that may have been sent.
    extent: u64,
    /// One per table.
    stmts: Arc<Vec<PreparedStatement>>,
    fraction: f64,
    rows: Vec<RowBuf>,
    found: Validation,
}

impl Reader for Operations {
    type Tally = Validation;

    async fn read(&mut self, i: u64) -> bool {
        if i >= self.extent {
            return false;
        }
        let v = &mut self.found;
        match self.acks.fate(i) {
            Fate::NotSent | Fate::NotApplied => return true,
            Fate::Unknown => {
                v.unknown += 1;
                return true;
            }
            Fate::Acknowledged if !sampled(i, self.fraction) => return true,
            Fate::Acknowledged => {}
        }
        v.operations += 1;
        let mut tries = 0;
        let back = loop {
            match self.workload.read_back(&self.stmts, &mut self.rows, i).await {
                Err(kind) if again(kind, &mut tries).await => continue,
                answer => break answer,
            }
        };
        v.retried += u64::from(tries);
        match back {
            Ok(back) => {
                let one = Validation {
                    rows: back.rows,
                    found: back.found,
                    missing: back.missing,
                    wrong: back.wrong,
                    ..Validation::default()
                };
                // Each reader meets its indices in increasing order: its first EXAMPLES hold
                // every one of the run's first EXAMPLES it read.
                if one.lost() > 0 && v.examples.len() < EXAMPLES {
                    v.examples.push(i);
                }
                v.add(one);
            }
            Err(kind) => v.count_unreadable(kind),
        }
        true
    }

    fn tally(self) -> Validation {
        self.found
    }
}
