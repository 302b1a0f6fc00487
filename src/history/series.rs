//! A history's records grouped by series, and a series named by a prefix of its id.

use anyhow::{Result, bail};
use std::collections::BTreeMap;

use super::Stored;

/// Records per series, in the order of each series' first record.
pub fn by_series(all: &[Stored]) -> Vec<(String, Vec<&Stored>)> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Stored>> = BTreeMap::new();
    for s in all {
        let id = s.record.series.id();
        if !groups.contains_key(&id) {
            order.push(id.clone());
        }
        groups.entry(id).or_default().push(s);
    }
    order
        .into_iter()
        .map(|id| {
            let g = groups.remove(&id).unwrap_or_default();
            (id, g)
        })
        .collect()
}

/// The one series whose id starts with `prefix`.
pub fn one_series<'a>(series: &'a [(String, Vec<&'a Stored>)], prefix: &str) -> Result<&'a (String, Vec<&'a Stored>)> {
    let found: Vec<_> = series.iter().filter(|(id, _)| id.starts_with(prefix)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => bail!("no series '{prefix}' in the history: `caplab history` lists them"),
        many => bail!(
            "'{prefix}' names {} series ({}): give more of the id",
            many.len(),
            many.iter().map(|(id, _)| &id[..8]).collect::<Vec<_>>().join(", ")
        ),
    }
}
