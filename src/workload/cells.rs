//! A cell as the server keeps it, so what was written and what is read back compare byte for
//! byte: a set comes back sorted and without repeats, a map with one value per key (the last
//! written), a varint in its shortest form, and an empty collection that is not frozen as no
//! value at all. `normal` rewrites a serialized cell into that form, recursively through lists,
//! sets, maps, tuples and user types; everything else (text, numbers, dates, vectors) already
//! compares as written.

use scylla::frame::response::result::{CollectionType, ColumnType, NativeType};
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::CellWriter;
use std::collections::BTreeMap;

/// `value` serialized for a column of type `typ` (its bytes, without the length), in normal
/// form; None when it does not serialize for that type.
pub fn written<V: SerializeValue>(value: &V, typ: &ColumnType) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    value.serialize(typ, CellWriter::new_without_size(&mut buf)).ok()?;
    normal(typ, &buf)
}

/// Whether a cell read back (None: null) holds what `expected` (from `written`) says.
pub fn same(typ: &ColumnType, expected: &[u8], read: Option<&[u8]>) -> bool {
    match read {
        Some(bytes) => normal(typ, bytes).is_some_and(|b| b == expected),
        // A collection that is not frozen and has no items is stored as no cells: null.
        None => matches!(typ, ColumnType::Collection { frozen: false, .. }) && expected == 0i32.to_be_bytes(),
    }
}

/// The normal form of cell `bytes` of type `typ`; None when they are not a value of it.
pub fn normal(typ: &ColumnType, bytes: &[u8]) -> Option<Vec<u8>> {
    match typ {
        ColumnType::Native(NativeType::Varint) => Some(shortest(bytes).to_vec()),
        ColumnType::Native(NativeType::Decimal) => {
            let (scale, unscaled) = (bytes.get(..4)?, bytes.get(4..)?);
            Some([scale, shortest(unscaled)].concat())
        }
        ColumnType::Collection { typ, .. } => {
            let (n, mut rest) = (i32::from_be_bytes(bytes.get(..4)?.try_into().ok()?), &bytes[4..]);
            let mut items = Vec::with_capacity(n.max(0) as usize);
            let per = if matches!(typ, CollectionType::Map(..)) { 2 } else { 1 };
            for k in 0..(n.max(0) as usize * per) {
                let t = match typ {
                    CollectionType::List(t) | CollectionType::Set(t) => t,
                    CollectionType::Map(kt, vt) => [kt, vt][k % 2],
                    _ => return None,
                };
                let (cell, after) = cell(rest)?;
                items.push(match cell {
                    Some(c) => Some(normal(t, c)?),
                    None => None,
                });
                rest = after;
            }
            match typ {
                CollectionType::Set(_) => {
                    items.sort();
                    items.dedup();
                }
                CollectionType::Map(..) => {
                    let last: BTreeMap<_, _> = items.chunks(2).map(|kv| (kv[0].clone(), kv[1].clone())).collect();
                    items = last.into_iter().flat_map(|(k, v)| [k, v]).collect();
                }
                _ => {}
            }
            let count = if per == 2 { items.len() / 2 } else { items.len() };
            Some(encode(count, &items))
        }
        ColumnType::Tuple(types) => fields(types.iter(), bytes),
        ColumnType::UserDefinedType { definition, .. } => fields(definition.field_types.iter().map(|(_, t)| t), bytes),
        _ => Some(bytes.to_vec()),
    }
}

/// A tuple's or user type's fields, each in normal form (a missing trailing field is null).
fn fields<'a, 'f: 'a>(types: impl Iterator<Item = &'a ColumnType<'f>>, mut bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for t in types {
        let (c, rest) = if bytes.is_empty() { (None, bytes) } else { cell(bytes)? };
        let item = match c {
            Some(c) => Some(normal(t, c)?),
            None => None,
        };
        put(&mut out, &item);
        bytes = rest;
    }
    Some(out)
}

/// One length-prefixed cell at the start of `bytes` (None inside: null), and what follows it.
fn cell(bytes: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let len = i32::from_be_bytes(bytes.get(..4)?.try_into().ok()?);
    let rest = &bytes[4..];
    if len < 0 {
        return Some((None, rest));
    }
    let len = len as usize;
    Some((Some(rest.get(..len)?), &rest[len..]))
}

fn put(out: &mut Vec<u8>, item: &Option<Vec<u8>>) {
    match item {
        Some(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
}

fn encode(count: usize, items: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = (count as i32).to_be_bytes().to_vec();
    for item in items {
        put(&mut out, item);
    }
    out
}

/// A two's-complement integer without the leading bytes that repeat its sign.
fn shortest(mut b: &[u8]) -> &[u8] {
    while b.len() > 1 && ((b[0] == 0 && b[1] & 0x80 == 0) || (b[0] == 0xff && b[1] & 0x80 != 0)) {
        b = &b[1..];
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    fn set_of(t: NativeType) -> ColumnType<'static> {
        ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Set(Box::new(ColumnType::Native(t))),
        }
    }

    #[test]
    fn sets_and_maps_compare_as_the_server_keeps_them() {
        let typ = set_of(NativeType::Int);
        // Written in any order, with a repeat; read back sorted and once each.
        let expected = written(&vec![3i32, 1, 3, 2], &typ).unwrap();
        let read = written(&BTreeSet::from([1i32, 2, 3]), &typ).unwrap();
        assert!(same(&typ, &expected, Some(&read)));
        let other = written(&BTreeSet::from([1i32, 2]), &typ).unwrap();
        assert!(!same(&typ, &expected, Some(&other)));
        // An empty collection is read back as null; a non-empty one is not.
        let empty = written(&Vec::<i32>::new(), &typ).unwrap();
        assert!(same(&typ, &empty, None) && !same(&typ, &expected, None));
        let map = ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Map(
                Box::new(ColumnType::Native(NativeType::Text)),
                Box::new(ColumnType::Native(NativeType::Int)),
            ),
        };
        let expected = written(&HashMap::from([("b", 2i32), ("a", 1)]), &map).unwrap();
        let read = written(&BTreeMap::from([("a", 1i32), ("b", 2)]), &map).unwrap();
        assert!(same(&map, &expected, Some(&read)));
        let changed = written(&BTreeMap::from([("a", 1i32), ("b", 3)]), &map).unwrap();
        assert!(!same(&map, &expected, Some(&changed)));
    }

    #[test]
    fn numbers_compare_by_value_whatever_their_length() {
        let varint = ColumnType::Native(NativeType::Varint);
        // 5 in eight bytes (as generated) against its one-byte form; -1 likewise.
        assert!(same(
            &varint,
            &normal(&varint, &[0, 0, 0, 0, 0, 0, 0, 5]).unwrap(),
            Some(&[5])
        ));
        assert!(same(&varint, &normal(&varint, &[0xff; 8]).unwrap(), Some(&[0xff])));
        assert!(!same(
            &varint,
            &normal(&varint, &[0, 0, 0, 0, 0, 0, 0, 5]).unwrap(),
            Some(&[6])
        ));
        // 128 needs its leading zero (0x80 alone is -128).
        assert_eq!(shortest(&[0, 0, 0x80]), &[0, 0x80]);
        let text = ColumnType::Native(NativeType::Text);
        assert!(same(&text, &written(&"abc", &text).unwrap(), Some(b"abc")));
        assert!(!same(&text, &written(&"abc", &text).unwrap(), Some(b"abd")));
        assert!(!same(&text, &written(&"abc", &text).unwrap(), None), "a missing value");
    }
}
