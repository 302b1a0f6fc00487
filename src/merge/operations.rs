//! The loaders' operations files (`--ops-parquet`), kept as one Parquet dataset: each is copied
//! into the merged directory's `operations/` as `loader-N.parquet`. They share one schema and
//! each row names its loader, so DuckDB (`read_parquet('operations/*.parquet')`), pyarrow
//! (`pq.read_table('operations')`) or Polars read them as one table.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

use super::loader::Loader;
use crate::metrics::ops::OpsFile;

/// Where the merged dataset lives in a merged results directory.
pub const DIR: &str = "operations";

/// Copies each loader's operations file into `out/operations/`, and describes the dataset; None
/// when no loader wrote one. A loader whose file is not where its result.json says (nor beside
/// it) is named and left out.
pub fn gather(loaders: &[Loader], out: &Path) -> Result<Option<OpsFile>> {
    let mut written: Option<OpsFile> = None;
    for l in loaders {
        let Some(file) = &l.result.files.operations else {
            continue;
        };
        let Some(from) = locate(&l.dir, &file.path) else {
            crate::console::say(&format!(
                "loader {}'s operations file {} is missing (nor beside its result.json): the merged dataset leaves it out",
                l.slice, file.path
            ));
            continue;
        };
        let dir = out.join(DIR);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let to = dir.join(format!("loader-{}.parquet", l.slice.index() + 1));
        std::fs::copy(&from, &to).with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
        let all = written.get_or_insert_with(|| OpsFile {
            path: std::path::absolute(&dir).unwrap_or(dir.clone()).display().to_string(),
            rows: 0,
            row_groups: 0,
            bytes: 0,
            writer_cpu_s: 0.0,
        });
        all.rows += file.rows;
        all.row_groups += file.row_groups;
        all.bytes += file.bytes;
        all.writer_cpu_s += file.writer_cpu_s;
    }
    Ok(written)
}

/// The file at `recorded`, or one of its name in the loader's directory (results copied from
/// the machine that ran it).
fn locate(dir: &Path, recorded: &str) -> Option<PathBuf> {
    let recorded = PathBuf::from(recorded);
    if recorded.is_file() {
        return Some(recorded);
    }
    let beside = dir.join(recorded.file_name()?);
    beside.is_file().then_some(beside)
}
