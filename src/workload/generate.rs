//! Column value generators for profiles. A value is a pure function of the column, the
//! partition index and the row index, so the same operation always writes (or looks up) the
//! same data and reads find what writes wrote. Values are rendered into a reusable buffer of
//! the column's CQL type: nothing is allocated per operation once the buffer has grown.

pub use super::profile::{ColumnSpec, Distribution, Size};
use super::values::{draw, fill_key, fill_text, mix};
use super::vector;
use scylla::frame::response::result::{CollectionType, ColumnType, NativeType};
use scylla::serialize::SerializationError;
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::{CellWriter, WrittenCellProof};
use scylla::value::{Counter, CqlDate, CqlDecimalBorrowed, CqlTime, CqlTimestamp, CqlTimeuuid, CqlVarintBorrowed};

/// Where a column's value index comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Partition key: the partition index.
    Partition,
    /// Clustering key: the row index.
    Clustering,
    /// Regular column: drawn from its distribution, seeded by partition and row.
    Regular,
}

/// The structure of a column's CQL type, as far as generators go.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Native(NativeType),
    List(Box<Shape>),
    Set(Box<Shape>),
    Map(Box<Shape>, Box<Shape>),
    /// Fields in the type's order.
    Udt(Vec<Shape>),
    Tuple(Vec<Shape>),
    /// `vector<float, N>`: N dimensions.
    Vector(u16),
}

/// The shape of a CQL type, or the first part of it no generator can produce.
pub fn shape_of(typ: &ColumnType) -> Result<Shape, String> {
    Ok(match typ {
        ColumnType::Native(n) => match n {
            NativeType::Text
            | NativeType::Ascii
            | NativeType::Blob
            | NativeType::Int
            | NativeType::BigInt
            | NativeType::Boolean
            | NativeType::Double
            | NativeType::Float
            | NativeType::Uuid
            | NativeType::Timeuuid
            | NativeType::Timestamp
            | NativeType::Counter
            | NativeType::SmallInt
            | NativeType::TinyInt
            | NativeType::Inet
            | NativeType::Date
            | NativeType::Time
            | NativeType::Varint
            | NativeType::Decimal => Shape::Native(n.clone()),
            other => return Err(format!("{other:?}")),
        },
        ColumnType::Collection { typ, .. } => match typ {
            CollectionType::List(e) => Shape::List(Box::new(shape_of(e)?)),
            CollectionType::Set(e) => Shape::Set(Box::new(shape_of(e)?)),
            CollectionType::Map(k, v) => Shape::Map(Box::new(shape_of(k)?), Box::new(shape_of(v)?)),
            other => return Err(format!("{other:?}")),
        },
        ColumnType::UserDefinedType { definition, .. } => Shape::Udt(
            definition
                .field_types
                .iter()
                .map(|(_, t)| shape_of(t))
                .collect::<Result<_, _>>()?,
        ),
        ColumnType::Tuple(items) => Shape::Tuple(items.iter().map(shape_of).collect::<Result<_, _>>()?),
        ColumnType::Vector { typ, dimensions } if **typ == ColumnType::Native(NativeType::Float) => {
            Shape::Vector(*dimensions)
        }
        other => return Err(format!("{other:?}")),
    })
}

/// A column's generator: which value it renders for (partition, row).
#[derive(Debug, Clone)]
pub struct Generator {
    pub column: String,
    pub spec: ColumnSpec,
    pub role: Role,
    pub shape: Shape,
    /// Vectors: render queries' vectors (near the stored ones, not among them).
    pub query: bool,
    salt: u64,
}

impl Generator {
    pub fn new(column: &str, spec: ColumnSpec, role: Role, shape: Shape) -> Generator {
        Self::seeded(column, spec, role, shape, 0)
    }

    /// A generator whose values also depend on `seed` (keys keep their indexes).
    pub fn seeded(column: &str, spec: ColumnSpec, role: Role, shape: Shape, seed: u64) -> Generator {
        let name = column.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let salt = if seed == 0 { name } else { name ^ mix(seed) };
        Generator {
            column: column.to_string(),
            spec,
            role,
            shape,
            query: false,
            salt,
        }
    }

    /// The value index for this column in (partition, row).
    pub fn index(&self, partition: u64, row: u64) -> u64 {
        let n = self.spec.cardinality.unwrap_or(u64::MAX);
        match self.role {
            Role::Partition => partition % n,
            Role::Clustering => match self.spec.distribution {
                Distribution::Sequence | Distribution::Uniform if self.spec.cardinality.is_none() => row,
                d => draw(d, mix(row ^ self.salt), n, row),
            },
            Role::Regular => {
                let h = mix(mix(partition ^ self.salt).wrapping_add(row));
                draw(self.spec.distribution, h, n, row)
            }
        }
    }

    /// Renders value index `v` into `out`.
    pub fn render(&self, v: u64, out: &mut Value) {
        let key = self.role != Role::Regular;
        self.render_shape(&self.shape, v, out, key);
    }

    fn render_shape(&self, shape: &Shape, v: u64, out: &mut Value, key: bool) {
        let h = mix(v ^ self.salt);
        match shape {
            Shape::Native(t) => self.render_native(t, v, out, key),
            Shape::List(e) | Shape::Set(e) => {
                let n = self.spec.count.unwrap_or(Size::Fixed(3)).pick(h);
                let items = out.items(n);
                for (i, item) in items.iter_mut().enumerate() {
                    // Set elements must differ: give each its own index.
                    self.render_shape(e, mix(h ^ i as u64), item, false);
                }
                out.finish_items(false);
            }
            Shape::Map(k, val) => {
                let n = self.spec.count.unwrap_or(Size::Fixed(3)).pick(h);
                let items = out.items(2 * n);
                for (i, pair) in items.chunks_mut(2).enumerate() {
                    let x = mix(h ^ i as u64);
                    self.render_shape(k, x, &mut pair[0], false);
                    self.render_shape(val, mix(x), &mut pair[1], false);
                }
                out.finish_items(true);
            }
            Shape::Udt(fields) | Shape::Tuple(fields) => {
                let items = out.items(fields.len());
                for (i, (f, item)) in fields.iter().zip(items.iter_mut()).enumerate() {
                    self.render_shape(f, mix(h ^ (i as u64 + 1)), item, false);
                }
                out.finish_fields();
            }
            Shape::Vector(n) => {
                if !matches!(out, Value::Vector(_)) {
                    *out = Value::Vector(Vec::new());
                }
                let Value::Vector(buf) = out else { unreachable!() };
                buf.resize(usize::from(*n), 0.0);
                let clusters = self.spec.clusters.unwrap_or(vector::DEFAULT_CLUSTERS);
                let spread = self.spec.spread.unwrap_or(vector::DEFAULT_SPREAD);
                vector::fill_vector(buf, v, self.salt, clusters, spread, self.query);
            }
        }
    }

    fn render_native(&self, typ: &NativeType, v: u64, out: &mut Value, key: bool) {
        let h = mix(v ^ self.salt);
        let in_range = |lo: i64, hi: i64| -> i64 {
            let lo = self.spec.min.unwrap_or(lo);
            let hi = self.spec.max.unwrap_or(hi);
            let span = (hi as i128 - lo as i128 + 1) as u128;
            (lo as i128 + (u128::from(v) % span) as i128) as i64
        };
        match typ {
            NativeType::Text | NativeType::Ascii => {
                let len = self.spec.size.pick(h);
                let buf = out.bytes(true);
                buf.resize(len, b'0');
                if key {
                    // Keys: distinct indexes give distinct text (as long as the length allows).
                    fill_key(buf, v);
                } else {
                    fill_text(buf, v ^ self.salt);
                }
            }
            NativeType::Blob => {
                let len = self.spec.size.pick(h);
                let buf = out.bytes(false);
                buf.resize(len, 0);
                let mut x = h;
                for chunk in buf.chunks_mut(8) {
                    x = mix(x);
                    chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
                }
            }
            NativeType::Int => *out = Value::Int(in_range(i32::MIN as i64, i32::MAX as i64) as i32),
            NativeType::BigInt => *out = Value::BigInt(in_range(i64::MIN, i64::MAX)),
            NativeType::SmallInt => *out = Value::SmallInt(in_range(i16::MIN as i64, i16::MAX as i64) as i16),
            NativeType::TinyInt => *out = Value::TinyInt(in_range(i8::MIN as i64, i8::MAX as i64) as i8),
            NativeType::Varint => *out = Value::Varint(in_range(i64::MIN, i64::MAX).to_be_bytes()),
            // Two decimal places.
            NativeType::Decimal => *out = Value::Decimal(in_range(-100_000_000, 100_000_000).to_be_bytes()),
            // IPv4 addresses, distinct for the first 2^32 indexes.
            NativeType::Inet => {
                *out = Value::Inet(std::net::Ipv4Addr::from(in_range(0, u32::MAX as i64) as u32).into())
            }
            // Days from 2020-01-01 (the protocol counts from 2^31 = 1970-01-01).
            NativeType::Date => *out = Value::Date(CqlDate((1u32 << 31) + 18_262 + in_range(0, 36_500) as u32)),
            // Nanoseconds since midnight.
            NativeType::Time => *out = Value::Time(CqlTime(in_range(0, 86_399_999_999_999))),
            NativeType::Boolean => *out = Value::Boolean(v % 2 == 1),
            // Counter increments: 1 unless min/max say otherwise.
            NativeType::Counter => {
                let lo = self.spec.min.unwrap_or(1);
                let hi = self.spec.max.unwrap_or(lo);
                *out = Value::Counter(Counter(lo + (v % (hi - lo + 1) as u64) as i64))
            }
            NativeType::Double => {
                *out = Value::Double(in_range(-1_000_000, 1_000_000) as f64 + (h % 1000) as f64 / 1000.0)
            }
            NativeType::Float => *out = Value::Float(in_range(-1_000_000, 1_000_000) as f32),
            NativeType::Uuid => *out = Value::Uuid(uuid::Uuid::from_u64_pair(mix(v ^ self.salt), mix(v))),
            NativeType::Timeuuid => {
                // Version 1, time = index in 100 ns ticks after 2020-01-01 (60 bits: wraps
                // for the huge indexes of columns with unbounded cardinality).
                let ticks = 0x01EA_2C2B_E5D4_0000u64.wrapping_add(v) & 0x0FFF_FFFF_FFFF_FFFF;
                let (lo, mid, hi) = (
                    ticks as u32,
                    (ticks >> 32) as u16,
                    ((ticks >> 48) as u16 & 0x0fff) | 0x1000,
                );
                let node = (mix(self.salt) & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
                let u = uuid::Uuid::from_fields(lo, mid, hi, &node.to_be_bytes());
                *out = Value::Timeuuid(CqlTimeuuid::from(u));
            }
            NativeType::Timestamp => {
                // Milliseconds after 2020-01-01, one per value index (clustering rows in time order).
                *out = Value::Timestamp(CqlTimestamp(1_577_836_800_000 + in_range(0, i64::MAX / 2)));
            }
            _ => unreachable!("checked by shape_of()"),
        }
    }
}

/// One rendered value, reusing its buffers across operations.
#[derive(Debug, Clone)]
pub enum Value {
    Text(Vec<u8>),
    Blob(Vec<u8>),
    Int(i32),
    BigInt(i64),
    Boolean(bool),
    Double(f64),
    Float(f32),
    Uuid(uuid::Uuid),
    Timeuuid(CqlTimeuuid),
    Timestamp(CqlTimestamp),
    Counter(Counter),
    SmallInt(i16),
    TinyInt(i8),
    /// Big-endian two's complement.
    Varint([u8; 8]),
    /// Unscaled big-endian two's complement, scale 2.
    Decimal([u8; 8]),
    Inet(std::net::IpAddr),
    Date(CqlDate),
    Time(CqlTime),
    /// A list or set.
    Seq(Slots),
    /// Keys and values alternating.
    Map(Slots),
    /// A UDT's or tuple's fields in order.
    Fields(Slots),
    /// A `vector<float, N>`.
    Vector(Vec<f32>),
}

/// The items of a composite value: the first `len` slots are the value; the slots after
/// them keep their buffers for a later operation with more items, so a collection whose
/// size varies allocates nothing once it has reached its largest.
#[derive(Debug, Clone, Default)]
pub struct Slots {
    all: Vec<Value>,
    len: usize,
}

impl std::ops::Deref for Slots {
    type Target = [Value];
    fn deref(&self) -> &[Value] {
        &self.all[..self.len]
    }
}

impl Value {
    /// The byte buffer of a Text (or Blob) value, switching variant only when needed.
    fn bytes(&mut self, text: bool) -> &mut Vec<u8> {
        match (text, &*self) {
            (true, Value::Text(_)) | (false, Value::Blob(_)) => {}
            (true, _) => *self = Value::Text(Vec::new()),
            (false, _) => *self = Value::Blob(Vec::new()),
        }
        match self {
            Value::Text(b) | Value::Blob(b) => b,
            _ => unreachable!(),
        }
    }

    /// `n` item slots of a composite value (kept from earlier operations when possible).
    fn items(&mut self, n: usize) -> &mut [Value] {
        if !matches!(self, Value::Seq(_) | Value::Map(_) | Value::Fields(_)) {
            *self = Value::Seq(Slots::default());
        }
        let (Value::Seq(s) | Value::Map(s) | Value::Fields(s)) = self else {
            unreachable!()
        };
        if s.all.len() < n {
            s.all.resize_with(n, || Value::Int(0));
        }
        s.len = n;
        &mut s.all[..n]
    }

    fn finish_items(&mut self, map: bool) {
        let (Value::Seq(v) | Value::Map(v) | Value::Fields(v)) = self else {
            unreachable!()
        };
        let v = std::mem::take(v);
        *self = if map { Value::Map(v) } else { Value::Seq(v) };
    }

    fn finish_fields(&mut self) {
        if let Value::Seq(v) | Value::Map(v) = self {
            *self = Value::Fields(std::mem::take(v));
        }
    }
}

/// A generated value met a column type it was not generated for.
#[derive(Debug)]
struct WrongType(String);

impl std::fmt::Display for WrongType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "generated {}", self.0)
    }
}

impl std::error::Error for WrongType {}

impl SerializeValue for Value {
    fn serialize<'b>(
        &self,
        typ: &ColumnType,
        writer: CellWriter<'b>,
    ) -> Result<WrittenCellProof<'b>, SerializationError> {
        match self {
            Value::Text(b) => {
                SerializeValue::serialize(std::str::from_utf8(b).expect("generated text is ASCII"), typ, writer)
            }
            Value::Blob(b) => SerializeValue::serialize(&b.as_slice(), typ, writer),
            Value::Int(v) => SerializeValue::serialize(v, typ, writer),
            Value::BigInt(v) => SerializeValue::serialize(v, typ, writer),
            Value::Boolean(v) => SerializeValue::serialize(v, typ, writer),
            Value::Double(v) => SerializeValue::serialize(v, typ, writer),
            Value::Float(v) => SerializeValue::serialize(v, typ, writer),
            Value::Uuid(v) => SerializeValue::serialize(v, typ, writer),
            Value::Timeuuid(v) => SerializeValue::serialize(v, typ, writer),
            Value::Timestamp(v) => SerializeValue::serialize(v, typ, writer),
            Value::Counter(v) => SerializeValue::serialize(v, typ, writer),
            Value::SmallInt(v) => SerializeValue::serialize(v, typ, writer),
            Value::TinyInt(v) => SerializeValue::serialize(v, typ, writer),
            Value::Varint(b) => {
                SerializeValue::serialize(&CqlVarintBorrowed::from_signed_bytes_be_slice(b), typ, writer)
            }
            Value::Decimal(b) => SerializeValue::serialize(
                &CqlDecimalBorrowed::from_signed_be_bytes_slice_and_exponent(b, 2),
                typ,
                writer,
            ),
            Value::Inet(v) => SerializeValue::serialize(v, typ, writer),
            Value::Date(v) => SerializeValue::serialize(v, typ, writer),
            Value::Time(v) => SerializeValue::serialize(v, typ, writer),
            Value::Seq(items) => SerializeValue::serialize(&**items, typ, writer),
            Value::Vector(v) => SerializeValue::serialize(v.as_slice(), typ, writer),
            Value::Map(items) => {
                let ColumnType::Collection {
                    typ: CollectionType::Map(kt, vt),
                    ..
                } = typ
                else {
                    return Err(SerializationError::new(WrongType(format!("a map for {typ:?}"))));
                };
                let mut b = writer.into_value_builder();
                b.append_bytes(&((items.len() / 2) as i32).to_be_bytes());
                for pair in items.chunks(2) {
                    pair[0].serialize(kt, b.make_sub_writer())?;
                    pair[1].serialize(vt, b.make_sub_writer())?;
                }
                b.finish().map_err(SerializationError::new)
            }
            Value::Fields(items) => match typ {
                ColumnType::UserDefinedType { definition, .. } => {
                    write_fields(items, definition.field_types.iter().map(|(_, t)| t), writer)
                }
                ColumnType::Tuple(ts) => write_fields(items, ts.iter(), writer),
                _ => Err(SerializationError::new(WrongType(format!("fields for {typ:?}")))),
            },
        }
    }
}

/// A UDT or tuple: each field as a cell, in the type's order.
fn write_fields<'t, 'f: 't, 'b>(
    items: &[Value],
    types: impl Iterator<Item = &'t ColumnType<'f>>,
    writer: CellWriter<'b>,
) -> Result<WrittenCellProof<'b>, SerializationError> {
    let mut b = writer.into_value_builder();
    for (item, t) in items.iter().zip(types) {
        item.serialize(t, b.make_sub_writer())?;
    }
    b.finish().map_err(SerializationError::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &Value) -> &str {
        match v {
            Value::Text(b) => std::str::from_utf8(b).unwrap(),
            _ => panic!("not text: {v:?}"),
        }
    }

    #[test]
    fn keys_take_partition_and_row_indexes() {
        let pk = Generator::new(
            "id",
            ColumnSpec {
                size: Size::Fixed(10),
                ..Default::default()
            },
            Role::Partition,
            Shape::Native(NativeType::Text),
        );
        let ck = Generator::new(
            "ts",
            ColumnSpec::default(),
            Role::Clustering,
            Shape::Native(NativeType::Timestamp),
        );
        assert_eq!(pk.index(42, 7), 42);
        assert_eq!(ck.index(42, 7), 7);
        let mut a = Value::Int(0);
        let mut b = Value::Int(0);
        pk.render(1, &mut a);
        pk.render(2, &mut b);
        assert_eq!(text(&a).len(), 10);
        assert_ne!(text(&a), text(&b));
        let mut t = Value::Int(0);
        ck.render(5, &mut t);
        assert!(matches!(t, Value::Timestamp(CqlTimestamp(ms)) if ms == 1_577_836_800_005));
    }

    #[test]
    fn values_are_deterministic_typed_and_sized() {
        let spec = ColumnSpec {
            size: Size::Range { min: 5, max: 9 },
            ..Default::default()
        };
        let g = Generator::new("payload", spec, Role::Regular, Shape::Native(NativeType::Text));
        let (mut a, mut b) = (Value::Int(0), Value::Int(0));
        g.render(g.index(3, 4), &mut a);
        g.render(g.index(3, 4), &mut b);
        assert_eq!(text(&a), text(&b));
        let lens: std::collections::HashSet<usize> = (0..200)
            .map(|r| {
                g.render(g.index(1, r), &mut a);
                text(&a).len()
            })
            .collect();
        assert_eq!(lens, (5..=9).collect(), "sizes cover the range");

        let num = Generator::new(
            "n",
            ColumnSpec {
                min: Some(10),
                max: Some(20),
                ..Default::default()
            },
            Role::Regular,
            Shape::Native(NativeType::Int),
        );
        for r in 0..100 {
            num.render(num.index(0, r), &mut a);
            assert!(matches!(a, Value::Int(x) if (10..=20).contains(&x)), "{a:?}");
        }
        let card = Generator::new(
            "c",
            ColumnSpec {
                cardinality: Some(3),
                ..Default::default()
            },
            Role::Regular,
            Shape::Native(NativeType::BigInt),
        );
        let distinct: std::collections::HashSet<u64> = (0..1000).map(|r| card.index(r, r)).collect();
        assert_eq!(distinct.len(), 3, "cardinality bounds distinct values");
        for (typ, check) in [
            (NativeType::Uuid, "uuid"),
            (NativeType::Timeuuid, "timeuuid"),
            (NativeType::Blob, "blob"),
            (NativeType::Boolean, "boolean"),
            (NativeType::Double, "double"),
            (NativeType::Inet, "inet"),
            (NativeType::Date, "date"),
            (NativeType::Time, "time"),
            (NativeType::SmallInt, "smallint"),
        ] {
            let g = Generator::new("x", ColumnSpec::default(), Role::Regular, Shape::Native(typ));
            g.render(g.index(1, 2), &mut a);
            let ok = match (&a, check) {
                (Value::Uuid(_), "uuid") | (Value::Boolean(_), "boolean") | (Value::Double(_), "double") => true,
                (Value::Timeuuid(t), "timeuuid") => uuid::Uuid::from(*t).get_version_num() == 1,
                (Value::Blob(b), "blob") => b.len() == 16,
                (Value::Inet(_), "inet") | (Value::SmallInt(_), "smallint") => true,
                (Value::Date(CqlDate(d)), "date") => (1u32 << 31) + 18_262 <= *d,
                (Value::Time(CqlTime(ns)), "time") => (0..86_400_000_000_000).contains(ns),
                _ => false,
            };
            assert!(ok, "{check}: {a:?}");
        }
    }

    fn udt_item() -> ColumnType<'static> {
        ColumnType::UserDefinedType {
            frozen: true,
            definition: std::sync::Arc::new(scylla::frame::response::result::UserDefinedType {
                name: "item".into(),
                keyspace: "ks".into(),
                field_types: vec![
                    ("sku".into(), ColumnType::Native(NativeType::Text)),
                    ("qty".into(), ColumnType::Native(NativeType::Int)),
                    ("price".into(), ColumnType::Native(NativeType::Double)),
                ],
            }),
        }
    }

    fn list_of(t: ColumnType<'static>) -> ColumnType<'static> {
        ColumnType::Collection {
            frozen: true,
            typ: CollectionType::List(Box::new(t)),
        }
    }

    fn serialized(v: &Value, typ: &ColumnType) -> Result<Vec<u8>, SerializationError> {
        let mut buf = Vec::new();
        v.serialize(typ, CellWriter::new(&mut buf))?;
        Ok(buf)
    }

    #[test]
    fn collections_and_udts_have_the_declared_shape() {
        let typ = list_of(udt_item());
        let shape = shape_of(&typ).unwrap();
        assert_eq!(
            shape,
            Shape::List(Box::new(Shape::Udt(vec![
                Shape::Native(NativeType::Text),
                Shape::Native(NativeType::Int),
                Shape::Native(NativeType::Double)
            ])))
        );
        let spec = ColumnSpec {
            count: Some(Size::Range { min: 1, max: 4 }),
            size: Size::Fixed(6),
            ..Default::default()
        };
        let g = Generator::new("items", spec, Role::Regular, shape);
        let mut v = Value::Int(0);
        let mut counts = std::collections::HashSet::new();
        for r in 0..100 {
            g.render(g.index(7, r), &mut v);
            let Value::Seq(items) = &v else {
                panic!("not a list: {v:?}")
            };
            counts.insert(items.len());
            for item in items.iter() {
                let Value::Fields(f) = item else {
                    panic!("not a UDT: {item:?}")
                };
                assert!(
                    matches!(&f[..], [Value::Text(t), Value::Int(_), Value::Double(_)] if t.len() == 6),
                    "{f:?}"
                );
            }
            // The same (partition, row) renders the same bytes; a buffer reused across
            // operations does not keep stale elements.
            let again = serialized(&v, &typ).unwrap();
            let mut fresh = Value::Int(0);
            g.render(g.index(7, r), &mut fresh);
            assert_eq!(serialized(&fresh, &typ).unwrap(), again);
        }
        assert_eq!(counts, (1..=4).collect(), "element counts cover the range");

        // list<int> of 3: cell length, element count, then (length, value) per element.
        let ints = Generator::new(
            "l",
            ColumnSpec::default(),
            Role::Regular,
            Shape::List(Box::new(Shape::Native(NativeType::Int))),
        );
        ints.render(1, &mut v);
        let bytes = serialized(&v, &list_of(ColumnType::Native(NativeType::Int))).unwrap();
        assert_eq!(bytes.len(), 4 + 4 + 3 * (4 + 4));
        assert_eq!(&bytes[4..8], &3i32.to_be_bytes());

        // map<text, bigint>: keys and values alternate, the count is of pairs.
        let map_type = ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Map(
                Box::new(ColumnType::Native(NativeType::Text)),
                Box::new(ColumnType::Native(NativeType::BigInt)),
            ),
        };
        let m = Generator::new(
            "m",
            ColumnSpec {
                count: Some(Size::Fixed(2)),
                ..Default::default()
            },
            Role::Regular,
            shape_of(&map_type).unwrap(),
        );
        m.render(5, &mut v);
        assert!(
            matches!(&v, Value::Map(kv) if kv.len() == 4 && matches!(kv[1], Value::BigInt(_))),
            "{v:?}"
        );
        let bytes = serialized(&v, &map_type).unwrap();
        assert_eq!(&bytes[4..8], &2i32.to_be_bytes());
        // A value met with a type it was not generated for is an error, not garbage on the wire.
        assert!(serialized(&v, &typ).is_err());
        assert!(shape_of(&ColumnType::Native(NativeType::Duration)).is_err());
        let c = Generator::new(
            "hits",
            ColumnSpec::default(),
            Role::Regular,
            Shape::Native(NativeType::Counter),
        );
        c.render(c.index(3, 9), &mut v);
        assert!(
            matches!(v, Value::Counter(Counter(1))),
            "counter increments default to 1: {v:?}"
        );
    }

    #[test]
    fn a_seed_changes_values_but_not_keys() {
        let v = |seed: u64, role: Role| {
            let g = Generator::seeded("c", ColumnSpec::default(), role, Shape::Native(NativeType::Text), seed);
            let mut out = Value::Int(0);
            g.render(g.index(5, 6), &mut out);
            text(&out).to_string()
        };
        assert_eq!(v(7, Role::Regular), v(7, Role::Regular));
        assert_ne!(v(7, Role::Regular), v(8, Role::Regular));
        assert_eq!(v(7, Role::Partition), v(8, Role::Partition));
    }
}
