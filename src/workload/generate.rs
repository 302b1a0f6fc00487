//! Column value generators for profiles. A value is a pure function of the column, the
//! partition index and the row index, so the same operation always writes (or looks up) the
//! same data and reads find what writes wrote. Values are rendered into a reusable buffer of
//! the column's CQL type: nothing is allocated per operation once the buffer has grown.

use anyhow::{Result, bail};
use scylla::frame::response::result::{ColumnType, NativeType};
use scylla::serialize::SerializationError;
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::{CellWriter, WrittenCellProof};
use scylla::value::{CqlTimestamp, CqlTimeuuid};
use serde::Deserialize;
use serde::Serialize as SerdeSerialize;

use super::values::{fill_key, fill_text, mix};

/// How a value index is drawn from `[0, cardinality)`.
#[derive(Debug, Clone, Copy, PartialEq, SerdeSerialize, Deserialize, Default)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Distribution {
    /// Every value equally likely.
    #[default]
    Uniform,
    /// Normal around the middle of the range, 1/6 of the range per standard deviation.
    Gaussian,
    /// Small values most likely; mean at 1/8 of the range.
    Exponential,
    /// A few values very likely (exponent 1.1 over the range).
    Zipf,
    /// The row index itself (modulo the cardinality): consecutive rows get consecutive values.
    Sequence,
}

/// A length: fixed (`size: 10`) or uniform in a range (`size: {min: 10, max: 100}`).
#[derive(Debug, Clone, Copy, PartialEq, SerdeSerialize, Deserialize)]
#[serde(untagged)]
pub enum Size {
    Fixed(u32),
    Range { min: u32, max: u32 },
}

impl Default for Size {
    fn default() -> Self {
        Size::Fixed(16)
    }
}

impl Size {
    fn pick(self, h: u64) -> usize {
        match self {
            Size::Fixed(n) => n as usize,
            Size::Range { min, max } => (min + (h % u64::from(max - min + 1)) as u32) as usize,
        }
    }
}

/// What a profile says about one column; everything has a default.
#[derive(Debug, Clone, Default, PartialEq, SerdeSerialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// Text and blob length.
    #[serde(default)]
    pub size: Size,
    #[serde(default)]
    pub distribution: Distribution,
    /// Number of distinct values (default: unbounded for regular columns; key columns take
    /// their partition or row index).
    pub cardinality: Option<u64>,
    /// Numeric range, inclusive.
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl ColumnSpec {
    pub fn validate(&self, column: &str) -> Result<()> {
        if let Size::Range { min, max } = self.size
            && min > max
        {
            bail!("column {column}: size min {min} is above max {max}");
        }
        if let (Some(a), Some(b)) = (self.min, self.max)
            && a > b
        {
            bail!("column {column}: min {a} is above max {b}");
        }
        if self.cardinality == Some(0) {
            bail!("column {column}: cardinality must be at least 1");
        }
        Ok(())
    }
}

/// Draws a value index in `[0, n)` from `h` (a uniform 64-bit hash) under `d`; `seq` is used
/// by `Sequence`.
pub fn draw(d: Distribution, h: u64, n: u64, seq: u64) -> u64 {
    let n = n.max(1);
    let u = (h >> 11) as f64 / (1u64 << 53) as f64; // uniform in [0, 1)
    let idx = match d {
        Distribution::Uniform => return h % n,
        Distribution::Sequence => return seq % n,
        Distribution::Gaussian => {
            // Sum of four uniforms: close to normal, bounded, cheap.
            let mut s = u;
            let mut x = h;
            for _ in 0..3 {
                x = mix(x);
                s += (x >> 11) as f64 / (1u64 << 53) as f64;
            }
            // Mean 2, sd 0.577: map to mean n/2, sd n/6.
            (n as f64 / 2.0) + (s - 2.0) / 0.577 * (n as f64 / 6.0)
        }
        Distribution::Exponential => -(1.0 - u).ln() * (n as f64 / 8.0),
        Distribution::Zipf => {
            // Inverse of the continuous Zipf CDF with exponent 1.1 over [1, n].
            let a = 1.1_f64;
            let nf = n as f64;
            let t = 1.0 - u * (1.0 - nf.powf(1.0 - a));
            t.powf(1.0 / (1.0 - a)) - 1.0
        }
    };
    (idx.max(0.0) as u64).min(n - 1)
}

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

/// A column's generator: which value it renders for (partition, row).
#[derive(Debug, Clone)]
pub struct Generator {
    pub spec: ColumnSpec,
    pub role: Role,
    pub typ: NativeType,
    salt: u64,
}

/// Types profiles generate today.
pub fn supported(typ: &ColumnType) -> Option<NativeType> {
    match typ {
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
            | NativeType::Timestamp => Some(n.clone()),
            _ => None,
        },
        _ => None,
    }
}

impl Generator {
    pub fn new(column: &str, spec: ColumnSpec, role: Role, typ: NativeType) -> Generator {
        let salt = column.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Generator { spec, role, typ, salt }
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
        let h = mix(v ^ self.salt);
        let in_range = |lo: i64, hi: i64| -> i64 {
            let lo = self.spec.min.unwrap_or(lo);
            let hi = self.spec.max.unwrap_or(hi);
            let span = (hi as i128 - lo as i128 + 1) as u128;
            (lo as i128 + (u128::from(v) % span) as i128) as i64
        };
        match self.typ {
            NativeType::Text | NativeType::Ascii => {
                let len = self.spec.size.pick(h);
                let buf = out.set(Value::Text(Vec::new()));
                buf.resize(len, b'0');
                if self.role == Role::Regular {
                    fill_text(buf, v ^ self.salt);
                } else {
                    // Keys: distinct indexes give distinct text (as long as the length allows).
                    fill_key(buf, v);
                }
            }
            NativeType::Blob => {
                let len = self.spec.size.pick(h);
                let buf = out.set(Value::Blob(Vec::new()));
                buf.resize(len, 0);
                let mut x = h;
                for chunk in buf.chunks_mut(8) {
                    x = mix(x);
                    chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
                }
            }
            NativeType::Int => *out = Value::Int(in_range(i32::MIN as i64, i32::MAX as i64) as i32),
            NativeType::BigInt => *out = Value::BigInt(in_range(i64::MIN, i64::MAX)),
            NativeType::Boolean => *out = Value::Boolean(v % 2 == 1),
            NativeType::Double => {
                *out = Value::Double(in_range(-1_000_000, 1_000_000) as f64 + (h % 1000) as f64 / 1000.0)
            }
            NativeType::Float => *out = Value::Float(in_range(-1_000_000, 1_000_000) as f32),
            NativeType::Uuid => *out = Value::Uuid(uuid::Uuid::from_u64_pair(mix(v ^ self.salt), mix(v))),
            NativeType::Timeuuid => {
                // Version 1, time = index in 100 ns ticks after 2020-01-01.
                let ticks = 0x01EA_2C2B_E5D4_0000u64 + v;
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
            _ => unreachable!("checked by supported()"),
        }
    }
}

/// One rendered value, reusing its buffer across operations.
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
}

impl Value {
    /// Switches to `kind`'s variant only if it is another variant (keeping the buffer).
    fn set(&mut self, kind: Value) -> &mut Vec<u8> {
        let same = matches!(
            (&*self, &kind),
            (Value::Text(_), Value::Text(_)) | (Value::Blob(_), Value::Blob(_))
        );
        if !same {
            *self = kind;
        }
        match self {
            Value::Text(b) | Value::Blob(b) => b,
            _ => unreachable!(),
        }
    }
}

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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(d: Distribution, n: u64, samples: u64) -> Vec<u64> {
        let mut counts = vec![0u64; n as usize];
        for i in 0..samples {
            counts[draw(d, mix(i), n, i) as usize] += 1;
        }
        counts
    }

    #[test]
    fn uniform_is_flat_and_sequence_counts() {
        let c = histogram(Distribution::Uniform, 10, 100_000);
        assert!(c.iter().all(|&x| (9_500..=10_500).contains(&x)), "{c:?}");
        assert_eq!(draw(Distribution::Sequence, 123, 10, 37), 7);
    }

    #[test]
    fn gaussian_centres_and_exponential_and_zipf_skew_low() {
        let g = histogram(Distribution::Gaussian, 12, 120_000);
        // sd = 2 of 12 buckets: the middle two (within 0.5 sd) hold ~38 %; the outer two ~1 %.
        let middle = g[5] + g[6];
        assert!((42_000..=48_000).contains(&middle), "gaussian middle {middle} {g:?}");
        assert!(g[0] + g[11] < 2_500, "gaussian tails {g:?}");
        let e = histogram(Distribution::Exponential, 8, 80_000);
        // Mean n/8 = 1: P(0) = 1 - e^-1 = 63 %.
        assert!((48_000..=53_500).contains(&e[0]), "exponential {e:?}");
        assert!(e.windows(2).all(|w| w[0] >= w[1]), "exponential decreases {e:?}");
        let z = histogram(Distribution::Zipf, 100, 100_000);
        assert!(z[0] > z[1] && z[1] > z[10] && z[10] > z[90], "zipf {z:?}");
        assert!(z[0] > 10_000, "zipf head {}", z[0]);
    }

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
            NativeType::Text,
        );
        let ck = Generator::new("ts", ColumnSpec::default(), Role::Clustering, NativeType::Timestamp);
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
        let g = Generator::new("payload", spec, Role::Regular, NativeType::Text);
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
            NativeType::Int,
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
            NativeType::BigInt,
        );
        let distinct: std::collections::HashSet<u64> = (0..1000).map(|r| card.index(r, r)).collect();
        assert_eq!(distinct.len(), 3, "cardinality bounds distinct values");
        for (typ, check) in [
            (NativeType::Uuid, "uuid"),
            (NativeType::Timeuuid, "timeuuid"),
            (NativeType::Blob, "blob"),
            (NativeType::Boolean, "boolean"),
            (NativeType::Double, "double"),
        ] {
            let g = Generator::new("x", ColumnSpec::default(), Role::Regular, typ);
            g.render(g.index(1, 2), &mut a);
            let ok = match (&a, check) {
                (Value::Uuid(_), "uuid") | (Value::Boolean(_), "boolean") | (Value::Double(_), "double") => true,
                (Value::Timeuuid(t), "timeuuid") => uuid::Uuid::from(*t).get_version_num() == 1,
                (Value::Blob(b), "blob") => b.len() == 16,
                _ => false,
            };
            assert!(ok, "{check}: {a:?}");
        }
    }

    #[test]
    fn bad_specs_are_named() {
        let s = ColumnSpec {
            min: Some(5),
            max: Some(1),
            ..Default::default()
        };
        assert!(
            s.validate("n")
                .unwrap_err()
                .to_string()
                .contains("column n: min 5 is above max 1")
        );
        let s = ColumnSpec {
            cardinality: Some(0),
            ..Default::default()
        };
        assert!(s.validate("c").is_err());
    }
}
