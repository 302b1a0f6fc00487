//! What is refused before anything is written: loaders of different runs (workload, schema,
//! split, interval length), a slice given twice, and loaders whose intervals share no grid.

use anyhow::{Result, bail};
use std::collections::BTreeSet;

use super::loader::Loader;

/// Refuses loaders that did not run the same thing as one load, naming the difference.
pub fn check(loaders: &[Loader]) -> Result<()> {
    let first = &loaders[0];
    let json = |l: &Loader| serde_json::to_value(&l.result.config.workload).unwrap_or_default();
    for l in &loaders[1..] {
        let (a, b) = (first.name(), l.name());
        if l.result.workload != first.result.workload || json(l) != json(first) {
            let what = differing_keys(&json(first), &json(l));
            bail!(
                "{a} and {b} ran different workloads ({} vs {}{}): merge only loaders of one run",
                first.result.workload,
                l.result.workload,
                if what.is_empty() {
                    String::new()
                } else {
                    format!("; they differ in {what}")
                }
            );
        }
        if l.result.schema != first.result.schema {
            bail!("{a} and {b} ran against different schemas: merge only loaders of one run against one cluster");
        }
        if l.slice == first.slice || loaders.iter().filter(|o| o.slice == l.slice).count() > 1 {
            bail!(
                "loader {} is given twice ({b}): give each loader's results once",
                l.slice
            );
        }
        if l.result.config.engine.loader.split('/').nth(1) != first.result.config.engine.loader.split('/').nth(1) {
            bail!(
                "{a} and {b} split the work differently ({} and {}): merge loaders of one --loader i/n split",
                first.slice,
                l.slice
            );
        }
        if l.result.config.engine.interval_s != first.result.config.engine.interval_s {
            bail!(
                "{a} and {b} have different interval lengths ({} s and {} s): their seconds cannot be added",
                first.result.config.engine.interval_s,
                l.result.config.engine.interval_s
            );
        }
    }
    Ok(())
}

fn differing_keys(a: &serde_json::Value, b: &serde_json::Value) -> String {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
        _ => String::new(),
    }
}

/// Refuses loaders whose intervals start at different offsets into the interval (no common
/// grid: their seconds would be added across two different seconds). `bases` are each
/// loader's name and log base time (epoch ms).
pub fn check_grid(bases: &[(String, i64)], interval_ms: i64) -> Result<()> {
    let offset = |base: i64| base.rem_euclid(interval_ms.max(1));
    let first = offset(bases[0].1);
    for (name, base) in &bases[1..] {
        let o = offset(*base);
        let apart = (o - first).abs().min(interval_ms - (o - first).abs());
        if apart > 1 {
            bail!(
                "{} and {name} do not share an interval grid: their intervals start {first} ms and {o} ms into \
                 the interval. Loaders of one run start on whole wall-clock seconds (caplab does this); these were not \
                 written so",
                bases[0].0,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaders_off_the_common_grid_are_refused() {
        let on = vec![
            ("a".to_string(), 1_795_554_180_000),
            ("b".to_string(), 1_795_554_183_000),
        ];
        assert!(check_grid(&on, 1_000).is_ok());
        // 1 ms of rounding in the logs' base times is the same grid, on either side of a second.
        assert!(check_grid(&[("a".into(), 1_000_999), ("b".into(), 2_000_000)], 1_000).is_ok());
        let off = vec![
            ("a".to_string(), 1_795_554_180_000),
            ("b".to_string(), 1_795_554_180_437),
        ];
        let e = check_grid(&off, 1_000).unwrap_err().to_string();
        assert!(
            e.contains("a and b do not share an interval grid") && e.contains("437 ms"),
            "{e}"
        );
    }
}
