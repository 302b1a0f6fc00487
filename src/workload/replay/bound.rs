//! The values of a replayed entry as the application bound them: the driver's bytes, written
//! as they are, for a statement (`Row`) or each statement of a batch (`BatchRows`).

use scylla::serialize::SerializationError;
use scylla::serialize::row::{RowSerializationContext, SerializeRow};
use scylla::serialize::writers::RowWriter;

use super::trace::Value;

/// A row of values as the application bound them: the driver's bytes, written as they are.
pub struct Row<'a>(pub &'a [Value]);

impl SerializeRow for Row<'_> {
    fn serialize(&self, ctx: &RowSerializationContext<'_>, writer: &mut RowWriter) -> Result<(), SerializationError> {
        if ctx.columns().len() != self.0.len() {
            return Err(SerializationError::new(std::io::Error::other(format!(
                "the statement takes {} values, the trace holds {}",
                ctx.columns().len(),
                self.0.len()
            ))));
        }
        for v in self.0 {
            let cell = writer.make_cell_writer();
            match v {
                Some(bytes) => {
                    cell.set_value(bytes).map_err(SerializationError::new)?;
                }
                None => {
                    cell.set_null();
                }
            }
        }
        Ok(())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A batch's rows of values, one per statement.
pub struct BatchRows<'a>(pub &'a [Box<[Value]>]);

impl scylla::serialize::batch::BatchValues for BatchRows<'_> {
    type BatchValuesIter<'r>
        = BatchRowsIter<'r>
    where
        Self: 'r;

    fn batch_values_iter(&self) -> BatchRowsIter<'_> {
        BatchRowsIter(self.0.iter())
    }
}

pub struct BatchRowsIter<'a>(std::slice::Iter<'a, Box<[Value]>>);

impl<'a> scylla::serialize::batch::BatchValuesIterator<'a> for BatchRowsIter<'a> {
    fn serialize_next(
        &mut self,
        ctx: &RowSerializationContext<'_>,
        writer: &mut RowWriter,
    ) -> Option<Result<(), SerializationError>> {
        self.0.next().map(|r| Row(r).serialize(ctx, writer))
    }

    fn is_empty_next(&mut self) -> Option<bool> {
        self.0.next().map(|r| r.is_empty())
    }

    fn skip_next(&mut self) -> Option<()> {
        self.0.next().map(|_| ())
    }
}
