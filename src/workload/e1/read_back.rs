//! Reading E1's rows back (`--validate`): operation `i`'s rows and values recomputed from `i`
//! and compared with what one query of its partition's clustering range returns.

use anyhow::{Context, Result};
use scylla::statement::prepared::PreparedStatement;

use super::{E1, RowBuf};
use crate::client::classify;
use crate::metrics::ErrorKind;

/// What reading back one operation's rows found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadBack {
    /// Rows the operation wrote.
    pub rows: u64,
    /// Read back with the values written.
    pub found: u64,
    pub missing: u64,
    /// Read back with other values.
    pub wrong: u64,
}

impl E1 {
    /// The statements that read back an operation's rows, one per table (one partition, a
    /// range of clustering keys: they are fixed-length base-32 text, so their order is the
    /// rows' order).
    pub async fn read_back_statements(
        &self,
        consistency: scylla::statement::Consistency,
    ) -> Result<Vec<PreparedStatement>> {
        let cols: Vec<String> = (1..=self.opts.value_columns).map(|i| format!("v{i}")).collect();
        let mut all = Vec::with_capacity(self.opts.tables as usize);
        for table in self.opts.table_names() {
            let cql = format!(
                "SELECT ck, {} FROM {}.{table} WHERE pk = ? AND ck >= ? AND ck <= ?",
                cols.join(", "),
                self.opts.keyspace,
            );
            let mut stmt = crate::client::prepare_when_reachable(&self.session, &cql)
                .await
                .context("cannot prepare the read-back")?;
            stmt.set_consistency(consistency);
            stmt.set_is_idempotent(true);
            all.push(stmt);
        }
        Ok(all)
    }

    /// Whether any of the tables holds a row (before a run: an earlier run's rows can hide a
    /// lost write of this one, being the same rows with the same values).
    pub async fn has_rows(&self) -> Result<bool> {
        for table in self.opts.table_names() {
            let cql = format!("SELECT pk FROM {}.{table} LIMIT 1", self.opts.keyspace);
            let r = self.session.query_unpaged(cql, ()).await?;
            if r.into_rows_result().map(|r| r.rows_num() > 0).unwrap_or(false) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Reads back operation `i`'s rows with its table's statement of `stmts` (`rows`: a
    /// worker's buffers) and compares them with what it wrote.
    pub async fn read_back(
        &self,
        stmts: &[PreparedStatement],
        rows: &mut [RowBuf],
        i: u64,
    ) -> Result<ReadBack, ErrorKind> {
        let partition = i % self.opts.partitions;
        let stmt = &stmts[self.opts.table_of(partition)];
        let first_row = (i / self.opts.partitions) * rows.len() as u64;
        for (k, r) in rows.iter_mut().enumerate() {
            r.fill(partition, first_row + k as u64);
        }
        let last = rows.len() - 1;
        let r = self
            .session
            .execute_unpaged(stmt, (rows[0].column(0), rows[0].column(1), rows[last].column(1)))
            .await
            .map_err(|e| classify(&e))?;
        let r = r.into_rows_result().map_err(|_| ErrorKind::Other)?;
        let mut out = ReadBack {
            rows: rows.len() as u64,
            ..ReadBack::default()
        };
        // Both in clustering order: walk them together.
        let mut k = 0;
        for row in r.rows::<scylla::value::Row>().map_err(|_| ErrorKind::Other)? {
            let row = row.map_err(|_| ErrorKind::Other)?;
            let text = |c: usize| match row.columns.get(c) {
                Some(Some(scylla::value::CqlValue::Text(t))) => Some(t.as_str()),
                _ => None,
            };
            let Some(ck) = text(0) else { continue };
            while k < rows.len() && rows[k].column(1) < ck {
                k += 1;
            }
            if k < rows.len() && rows[k].column(1) == ck {
                let same = (0..self.opts.value_columns).all(|c| text(c + 1) == Some(rows[k].column(c + 2)));
                if same {
                    out.found += 1;
                } else {
                    out.wrong += 1;
                }
                k += 1;
            }
        }
        out.missing = out.rows - out.found - out.wrong;
        Ok(out)
    }
}
