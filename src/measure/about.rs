//! What a prepared workload tells its results: its name and record, the schema as the server
//! has it and as caplab asked for it, its statements and each operation type's table.

use super::result::WorkloadRecord;
use crate::workload::spread::TablesMade;

/// What results say about the workload.
#[derive(Clone)]
pub struct About {
    pub name: String,
    pub record: WorkloadRecord,
    /// The schema as the server has it after setup (as asked, where it cannot say).
    pub schema: Vec<String>,
    /// The schema statements caplab ran.
    pub schema_requested: Vec<String>,
    pub statements: Vec<String>,
    /// Table of each operation type, for the CSV.
    pub tables: Vec<String>,
    /// What making a workload's many tables took (`--tables`).
    pub tables_made: Option<TablesMade>,
}

impl About {
    /// Whether the workload's tables compact (E1's only with --compaction; a profile's keep
    /// the server's compaction on): the run then reads the compaction figures.
    pub fn compacts(&self) -> bool {
        !matches!(&self.record, WorkloadRecord::E1(o) if !o.compaction)
    }
}
