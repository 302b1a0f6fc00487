//! Populating a profile's table before measurement: one operation writes every row of every
//! partition (a partition smaller than the largest is skipped once full).

use super::{Buffers, ProfileWorkload};
use crate::engine::{Outcome, Workload};
use std::sync::Arc;

/// Writes every row of every partition with one operation, before measurement.
pub struct Populate {
    pub inner: Arc<ProfileWorkload>,
    pub op: usize,
}

impl Workload for Populate {
    type Worker = Buffers;

    fn op_names(&self) -> Vec<String> {
        self.inner.op_names()
    }

    fn worker(&self, id: usize) -> Buffers {
        self.inner.worker(id)
    }

    fn op_of(&self, _i: u64) -> usize {
        self.op
    }

    async fn execute(&self, w: &mut Buffers, i: u64) -> Outcome {
        let o = &self.inner.ops[self.op];
        let groups = self.inner.partition_groups(o);
        let p = (i % groups) * (o.rows / o.per_partition) as u64;
        let first_row = (i / groups) * o.per_partition as u64;
        if o.rows == o.per_partition && first_row >= self.inner.rows_per_partition.rows_in(p) {
            // A partition smaller than the largest: all its rows are written already.
            return Outcome {
                op: self.op,
                result: Ok((0, 0)),
            };
        }
        self.inner.execute_at(w, self.op, p, first_row, false).await.0
    }
}
