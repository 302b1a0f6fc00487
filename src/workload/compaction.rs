//! A table's compaction strategy as `--compaction` asks for it: `stcs`, `lcs`, `ucs` (Cassandra
//! 5.0+) or `twcs`, with options after commas as CQL's compaction map takes them
//! (`lcs,sstable_size_in_mb=160`, `twcs,compaction_window_unit=MINUTES`), and for UCS its
//! scaling parameters bare, as cassandra-easy-stress writes them (`ucs,L4`, `ucs,T4,L10`: its
//! `scaling_parameters`). The table keeps compaction on; what the server then holds is compared
//! with what was asked, class and every option given, so a table left with another strategy is
//! named, never silently measured.

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The strategies by their short names, and their classes.
const STRATEGIES: [(&str, &str); 4] = [
    ("stcs", "SizeTieredCompactionStrategy"),
    ("lcs", "LeveledCompactionStrategy"),
    ("ucs", "UnifiedCompactionStrategy"),
    ("twcs", "TimeWindowCompactionStrategy"),
];

const UCS: &str = "UnifiedCompactionStrategy";

/// A compaction strategy and its options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// The strategy's class, short (`UnifiedCompactionStrategy`).
    pub class: String,
    /// Its options as CQL's compaction map takes them (no `class`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

impl Default for Compaction {
    /// Size-tiered with Cassandra's defaults: what a bare `--compaction` keeps on.
    fn default() -> Compaction {
        Compaction {
            class: STRATEGIES[0].1.to_string(),
            options: BTreeMap::new(),
        }
    }
}

impl Compaction {
    /// `--compaction`'s value: a strategy's short name, then options after commas.
    pub fn parse(s: &str) -> Result<Compaction> {
        let mut parts = s.split(',').map(str::trim).filter(|p| !p.is_empty());
        let name = parts.next().unwrap_or_default().to_ascii_lowercase();
        let Some((_, class)) = STRATEGIES.iter().find(|(n, _)| *n == name) else {
            bail!(
                "--compaction {s}: no strategy `{name}`: give stcs, lcs, ucs (Cassandra 5.0+) or twcs, then any options \
                 after commas (ucs,T4 or lcs,sstable_size_in_mb=160)"
            );
        };
        let mut options = BTreeMap::new();
        let mut scaling = Vec::new();
        for part in parts {
            match part.split_once('=') {
                Some((k, v)) => {
                    let k = k.trim();
                    if k.is_empty() || k == "class" || k == "enabled" {
                        bail!("--compaction {s}: `{part}` is not an option to give (the strategy is named first)");
                    }
                    options.insert(k.to_string(), v.trim().to_string());
                }
                None if *class == UCS && is_scaling_parameter(part) => scaling.push(part.to_ascii_uppercase()),
                None if *class == UCS => bail!(
                    "--compaction {s}: `{part}` is neither key=value nor a scaling parameter (T4, L10, N, or an integer)"
                ),
                None => bail!(
                    "--compaction {s}: `{part}` is not key=value (only ucs takes bare scaling parameters such as T4)"
                ),
            }
        }
        if !scaling.is_empty() {
            if options.contains_key("scaling_parameters") {
                bail!("--compaction {s}: scaling parameters given twice, bare and as scaling_parameters=");
            }
            options.insert("scaling_parameters".into(), scaling.join(","));
        }
        Ok(Compaction {
            class: class.to_string(),
            options,
        })
    }

    /// CQL's compaction map: `{'class': 'UnifiedCompactionStrategy', 'scaling_parameters': 'T4'}`.
    pub fn cql(&self) -> String {
        let mut pairs = vec![format!("'class': '{}'", self.class)];
        pairs.extend(self.options.iter().map(|(k, v)| format!("'{k}': '{v}'")));
        format!("{{{}}}", pairs.join(", "))
    }

    /// Short, as the user would give it again: `ucs,scaling_parameters=T4`.
    pub fn describe(&self) -> String {
        let name = STRATEGIES
            .iter()
            .find(|(_, c)| *c == self.class)
            .map_or(self.class.as_str(), |(n, _)| n);
        std::iter::once(name.to_string())
            .chain(self.options.iter().map(|(k, v)| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// How a table's compaction map (as system_schema.tables holds it: the full class name,
    /// the options set) differs from this one: the class, and each option given.
    pub fn differences(&self, have: &BTreeMap<String, String>) -> Vec<String> {
        let class = have
            .get("class")
            .map(|c| c.rsplit('.').next().unwrap_or(c))
            .unwrap_or("none");
        if class != self.class {
            return vec![format!("compaction is {class}, not {}", self.class)];
        }
        let mut differs = Vec::new();
        if !super::schema::compaction_enabled(have) {
            differs.push("compaction is off, not on".to_string());
        }
        for (k, v) in &self.options {
            match have.get(k) {
                Some(h) if h.eq_ignore_ascii_case(v) => {}
                Some(h) => differs.push(format!("compaction's {k} is {h}, not {v}")),
                None => differs.push(format!("compaction's {k} is not set, not {v}")),
            }
        }
        differs
    }
}

/// UCS's scaling parameter: `N`, `Lx` or `Tx` (x ≥ 2), or an integer W.
fn is_scaling_parameter(p: &str) -> bool {
    let u = p.to_ascii_uppercase();
    let factor = |rest: &str| rest.parse::<u32>().is_ok_and(|x| x >= 2);
    u == "N"
        || u.strip_prefix('L').is_some_and(factor)
        || u.strip_prefix('T').is_some_and(factor)
        || u.parse::<i32>().is_ok()
}

/// The compaction map of a table that keeps compaction on with `strategy` (size-tiered when
/// none is named), or has it off (E1's tables, unless asked).
pub fn map_of(on: bool, strategy: Option<&Compaction>) -> String {
    if on {
        strategy.cloned().unwrap_or_default().cql()
    } else {
        "{'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}".into()
    }
}

/// How a table's compaction map differs from compaction `on` with `strategy`.
pub fn differences_of(on: bool, strategy: Option<&Compaction>, have: &BTreeMap<String, String>) -> Vec<String> {
    match (on, super::schema::compaction_enabled(have)) {
        (true, _) => strategy.cloned().unwrap_or_default().differences(have),
        (false, true) => vec!["compaction is on, not off".to_string()],
        (false, false) => Vec::new(),
    }
}

/// Alters `tables` of `ks` (as the server stores their names) to `c`: a profile's statements
/// said nothing of compaction, or said otherwise, and `--compaction` decides. Waits for the
/// schema to agree.
pub async fn alter(session: &Session, ks: &str, tables: &[String], c: &Compaction) -> Result<()> {
    for table in tables {
        let cql = format!("ALTER TABLE {ks}.\"{table}\" WITH compaction = {}", c.cql());
        session
            .query_unpaged(super::schema::ddl(cql.as_str()), ())
            .await
            .with_context(|| {
                format!(
                    "the server rejected --compaction {} on {ks}.{table} ({cql}; UCS needs Cassandra 5.0+)",
                    c.describe()
                )
            })?;
    }
    let _ = session.await_schema_agreement().await;
    Ok(())
}

/// clap's parser for `--compaction`.
pub fn parse_arg(s: &str) -> Result<Compaction, String> {
    Compaction::parse(s).map_err(|e| format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn strategies_take_their_options_and_ucs_its_bare_scaling_parameters() {
        let c = Compaction::parse("ucs,L4").unwrap();
        assert_eq!(
            c.cql(),
            "{'class': 'UnifiedCompactionStrategy', 'scaling_parameters': 'L4'}"
        );
        let c = Compaction::parse("UCS, t4, l10, target_sstable_size=256MiB").unwrap();
        assert_eq!(
            c.options,
            map(&[("scaling_parameters", "T4,L10"), ("target_sstable_size", "256MiB")])
        );
        assert_eq!(c.describe(), "ucs,scaling_parameters=T4,L10,target_sstable_size=256MiB");
        let c = Compaction::parse("lcs,sstable_size_in_mb=160").unwrap();
        assert_eq!(
            c.cql(),
            "{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}"
        );
        assert_eq!(Compaction::parse("stcs").unwrap(), Compaction::default());
        assert_eq!(Compaction::parse("twcs").unwrap().class, "TimeWindowCompactionStrategy");
    }

    #[test]
    fn what_no_strategy_takes_is_refused_with_the_fix() {
        let e = |s: &str| format!("{:#}", Compaction::parse(s).unwrap_err());
        assert!(
            e("dtcs").contains("give stcs, lcs, ucs (Cassandra 5.0+) or twcs"),
            "{}",
            e("dtcs")
        );
        assert!(
            e("lcs,T4").contains("only ucs takes bare scaling parameters"),
            "{}",
            e("lcs,T4")
        );
        assert!(
            e("ucs,X9").contains("neither key=value nor a scaling parameter"),
            "{}",
            e("ucs,X9")
        );
        assert!(
            e("ucs,L1").contains("neither"),
            "a fan factor of 1 is no scaling parameter"
        );
        assert!(e("stcs,class=x").contains("not an option to give"));
        assert!(e("ucs,T4,scaling_parameters=L4").contains("given twice"));
    }

    #[test]
    fn e1_s_tables_have_compaction_off_unless_asked() {
        let off = map(&[("class", "SizeTieredCompactionStrategy"), ("enabled", "false")]);
        assert_eq!(
            map_of(false, None),
            "{'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}"
        );
        assert!(differences_of(false, None, &off).is_empty());
        assert_eq!(differences_of(true, None, &off), ["compaction is off, not on"]);
        let ucs = Compaction::parse("ucs").unwrap();
        assert_eq!(map_of(true, Some(&ucs)), "{'class': 'UnifiedCompactionStrategy'}");
        assert_eq!(
            differences_of(false, None, &map(&[("class", "UnifiedCompactionStrategy")])),
            ["compaction is on, not off"]
        );
    }

    #[test]
    fn a_table_with_another_class_or_option_is_named() {
        let asked = Compaction::parse("ucs,T4").unwrap();
        let full = "org.apache.cassandra.db.compaction.UnifiedCompactionStrategy";
        assert!(
            asked
                .differences(&map(&[
                    ("class", full),
                    ("scaling_parameters", "T4"),
                    ("max_sstables_to_compact", "32")
                ]))
                .is_empty()
        );
        assert_eq!(
            asked.differences(&map(&[("class", full), ("scaling_parameters", "L4")])),
            ["compaction's scaling_parameters is L4, not T4"]
        );
        assert_eq!(
            asked.differences(&map(&[(
                "class",
                "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy"
            )])),
            ["compaction is SizeTieredCompactionStrategy, not UnifiedCompactionStrategy"]
        );
        assert_eq!(
            Compaction::default().differences(&map(&[
                (
                    "class",
                    "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy"
                ),
                ("enabled", "false")
            ])),
            ["compaction is off, not on"]
        );
    }
}
