//! The operations file: one Parquet row per operation, in row groups of about `ROW_GROUP` rows,
//! each sorted by intended start. Times are UTC timestamps in nanoseconds, so that loaders'
//! files line up; response and service times are in nanoseconds as the histograms record them
//! (the response from the earlier of the intended and the actual start, as
//! `recorder::response_from` counts it). The columns are listed in docs/run.md.

use anyhow::{Context, Result};
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;

use super::{OpRow, OpsFile, OpsTarget};
use crate::metrics::ErrorKind;

/// Rows a row group holds at least (the last holds what is left): about 10 MB in memory.
const ROW_GROUP: usize = 1 << 17;

const SCHEMA: &str = "message caplab_operations {
    REQUIRED INT32 loader;
    REQUIRED INT64 index;
    REQUIRED BYTE_ARRAY operation (STRING);
    OPTIONAL BYTE_ARRAY statement (STRING);
    REQUIRED INT64 intended (TIMESTAMP(NANOS,true));
    OPTIONAL INT64 started (TIMESTAMP(NANOS,true));
    REQUIRED INT64 ended (TIMESTAMP(NANOS,true));
    REQUIRED INT64 response_ns;
    OPTIONAL INT64 service_ns;
    REQUIRED BOOLEAN measured;
    OPTIONAL BYTE_ARRAY error (STRING);
    REQUIRED INT64 rows;
    OPTIONAL INT64 partition;
    OPTIONAL INT64 token;
}";

type Group<'a> = SerializedRowGroupWriter<'a, BufWriter<File>>;

pub(super) struct Writer {
    out: SerializedFileWriter<BufWriter<File>>,
    path: String,
    loader: i32,
    t0_ns: i64,
    names: Vec<ByteArray>,
    statements: Vec<ByteArray>,
    errors: Vec<ByteArray>,
    pending: Vec<OpRow>,
    rows: u64,
    groups: u64,
}

fn text(s: &str) -> ByteArray {
    ByteArray::from(s.as_bytes().to_vec())
}

impl Writer {
    pub(super) fn new(
        file: File,
        target: &OpsTarget,
        t0_ns: i64,
        names: Vec<String>,
        statements: Vec<String>,
    ) -> Result<Writer> {
        let schema = Arc::new(parse_message_type(SCHEMA).expect("the operations schema parses"));
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("caplab {}", env!("CARGO_PKG_VERSION")))
            .build();
        let out = SerializedFileWriter::new(BufWriter::new(file), schema, Arc::new(props))?;
        Ok(Writer {
            out,
            path: target.path.display().to_string(),
            loader: target.loader as i32,
            t0_ns,
            names: names.iter().map(|n| text(n)).collect(),
            statements: statements.iter().map(|s| text(s)).collect(),
            errors: ErrorKind::ALL.iter().map(|k| text(k.name())).collect(),
            pending: Vec::new(),
            rows: 0,
            groups: 0,
        })
    }

    /// Adds rows, writing a row group once enough are waiting.
    pub(super) fn add(&mut self, rows: &[OpRow]) -> Result<()> {
        self.pending.extend_from_slice(rows);
        if self.pending.len() >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes what is waiting and closes the file.
    pub(super) fn finish(mut self) -> Result<OpsFile> {
        self.flush()?;
        self.out
            .close()
            .with_context(|| format!("cannot close {}", self.path))?;
        let bytes = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        Ok(OpsFile {
            path: self.path,
            rows: self.rows,
            row_groups: self.groups,
            bytes,
            writer_cpu_s: 0.0,
        })
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.pending.sort_unstable_by_key(|r| (r.intended, r.facts.index));
        let (p, t0_ns) = (&self.pending, self.t0_ns);
        let at = |ns: i64| t0_ns + ns;
        let mut g = self.out.next_row_group()?;
        required::<Int32Type>(&mut g, p.iter().map(|_| self.loader))?;
        required::<Int64Type>(&mut g, p.iter().map(|r| r.facts.index as i64))?;
        required::<ByteArrayType>(&mut g, p.iter().map(|r| self.names[r.op as usize].clone()))?;
        optional::<ByteArrayType>(
            &mut g,
            p.iter()
                .map(|r| r.facts.statement.and_then(|s| self.statements.get(s as usize).cloned())),
        )?;
        required::<Int64Type>(&mut g, p.iter().map(|r| at(r.intended)))?;
        optional::<Int64Type>(&mut g, p.iter().map(|r| r.sent.map(at)))?;
        required::<Int64Type>(&mut g, p.iter().map(|r| at(r.done)))?;
        required::<Int64Type>(&mut g, p.iter().map(|r| r.done - r.from))?;
        optional::<Int64Type>(&mut g, p.iter().map(|r| r.sent.map(|s| r.done - s)))?;
        required::<BoolType>(&mut g, p.iter().map(|r| r.measured))?;
        optional::<ByteArrayType>(
            &mut g,
            p.iter().map(|r| r.error.map(|k| self.errors[k as usize].clone())),
        )?;
        required::<Int64Type>(&mut g, p.iter().map(|r| r.rows as i64))?;
        optional::<Int64Type>(&mut g, p.iter().map(|r| r.facts.partition.map(|n| n as i64)))?;
        optional::<Int64Type>(&mut g, p.iter().map(|r| r.facts.token))?;
        g.close()
            .with_context(|| format!("cannot write a row group to {}", self.path))?;
        self.rows += self.pending.len() as u64;
        self.groups += 1;
        self.pending.clear();
        Ok(())
    }
}

/// Writes the row group's next column, every row with a value.
fn required<T: DataType>(g: &mut Group<'_>, values: impl Iterator<Item = T::T>) -> Result<()> {
    let values: Vec<T::T> = values.collect();
    let mut col = g.next_column()?.expect("a column for each in the schema");
    col.typed::<T>().write_batch(&values, None, None)?;
    col.close()?;
    Ok(())
}

/// Writes the row group's next column, where rows without a value are null.
fn optional<T: DataType>(g: &mut Group<'_>, values: impl Iterator<Item = Option<T::T>>) -> Result<()> {
    let mut present = Vec::new();
    let defs: Vec<i16> = values
        .map(|v| match v {
            Some(v) => {
                present.push(v);
                1
            }
            None => 0,
        })
        .collect();
    let mut col = g.next_column()?.expect("a column for each in the schema");
    col.typed::<T>().write_batch(&present, Some(&defs), None)?;
    col.close()?;
    Ok(())
}
