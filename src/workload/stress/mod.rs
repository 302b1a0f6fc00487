//! cassandra-stress user profiles (`keyspace`, `table_definition`, `columnspec`, `insert`,
//! `queries`), translated into a caplab profile. The translation happens offline, from the
//! profile's own CQL, so a profile is checked before anything touches the cluster. Whatever
//! caplab cannot reproduce exactly is kept as a note naming the setting, printed before the
//! run and stored in result.json; nothing is dropped silently.
//!
//! How the parts map: the partition key's `population` gives the number of partitions and how
//! they are picked; clustering columns' `cluster` distributions multiply into rows per
//! partition; `size` gives text and blob lengths; regular columns' `population` gives their
//! cardinality and distribution. `insert` becomes an operation named `insert` that writes like
//! cassandra-stress does (`UPDATE ... SET col = ? ... WHERE key = ?`, appending to lists, sets
//! and counters), batched as `insert.partitions`, `insert.select` and `insert.batchtype` say.
//! Each entry of `queries` becomes an operation of that name.
//!
//! The parts: `dist` reads cassandra-stress's distribution grammar, `ddl` reads the CQL the
//! profile carries (and names the tables any schema creates, `created_tables`), `translate`
//! maps the whole, step by step.

mod ddl;
mod dist;
mod translate;

pub use ddl::created_tables;

use anyhow::{Context, Result};
use serde_norway::Value as Yaml;

use super::profile::{Profile, from_yaml};
use translate::{StressYaml, translate};

/// A translated profile and what could not be carried over exactly.
#[derive(Debug)]
pub struct Imported {
    pub profile: Profile,
    pub notes: Vec<String>,
}

/// True for a document written in cassandra-stress's format rather than caplab's.
pub fn is_stress_profile(text: &str) -> bool {
    match serde_norway::from_str::<Yaml>(text) {
        Ok(Yaml::Mapping(m)) => {
            let has = |k: &str| m.contains_key(k);
            !has("operations") && (has("table") || has("table_definition") || has("columnspec") || has("queries"))
        }
        _ => false,
    }
}

/// Translates a cassandra-stress user profile. Operations get cassandra-stress's default mix
/// (`insert` only) until `Profile::set_weights` applies `--ops`.
pub fn import(text: &str, origin: &str) -> Result<Imported> {
    let y: StressYaml = from_yaml(text, origin)?;
    translate(y).with_context(|| format!("{origin} (a cassandra-stress profile)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::profile::{BatchKind, Distribution, RowCount, Size};

    /// The example from the cassandra-stress documentation (blog posts), made smaller.
    const BLOGPOSTS: &str = include_str!("../../../workloads/cassandra-stress/blogposts.yaml");

    #[test]
    fn the_documented_example_translates() {
        assert!(is_stress_profile(BLOGPOSTS));
        let Imported { profile: p, notes } = import(BLOGPOSTS, "blog.yaml").unwrap();
        assert_eq!(p.keyspace, "stresscql");
        assert_eq!(p.replication, "{'class': 'SimpleStrategy', 'replication_factor': 1}");
        assert!(
            p.schema[0].starts_with("CREATE TABLE IF NOT EXISTS blogposts ("),
            "{}",
            p.schema[0]
        );
        assert_eq!(p.partitions, 100);
        assert_eq!(p.rows_per_partition, RowCount::Fixed(20));
        assert_eq!(p.columns["url"].size, Size::Range { min: 30, max: 300 });
        assert_eq!(p.columns["author"].size, Size::Range { min: 5, max: 20 });
        let insert = &p.operations["insert"];
        assert_eq!(
            insert.cql,
            "UPDATE blogposts SET url = ?, author = ?, title = ?, body = ? WHERE domain = ? AND published_date = ?"
        );
        let b = insert.batch.as_ref().expect("10 rows of 2 partitions: a batch");
        assert_eq!((b.kind, b.rows, b.partitions), (BatchKind::Unlogged, 20, 2));
        assert_eq!(insert.weight, 1);
        assert_eq!(p.operations["timeline"].weight, 0);
        let said = notes.join("\n");
        assert!(said.contains("token_range_queries: not mapped"), "{said}");
        assert!(
            said.contains("columnspec body.size: gaussian(100..1000): lengths are drawn uniformly"),
            "{said}"
        );
        assert!(!is_stress_profile(include_str!("../../../workloads/keyvalue.yaml")));
    }

    #[test]
    fn batches_counters_and_keys_only_tables() {
        let counters = r#"
keyspace: ks
table: hits
table_definition: "CREATE TABLE hits (page text, day int, \"Views\" counter, PRIMARY KEY ((page), day))"
columnspec:
  - {name: page, population: exp(1..500)}
  - {name: day, cluster: uniform(1..30)}
insert: {partitions: fixed(2), select: fixed(10)/30, batchtype: COUNTER, visits: fixed(1)}
queries:
  month: {cql: "SELECT * FROM hits WHERE page = ?", fields: multirow}
"#;
        let Imported { profile: p, notes } = import(counters, "c.yaml").unwrap();
        assert_eq!(
            p.operations["insert"].cql,
            "UPDATE hits SET \"Views\" = \"Views\" + ? WHERE page = ? AND day = ?"
        );
        // 10/30 of a mean partition of 15.5 rows: 5 rows in each of 2 partitions.
        let b = p.operations["insert"].batch.as_ref().unwrap();
        assert_eq!((b.kind, b.rows, b.partitions), (BatchKind::Counter, 10, 2));
        assert_eq!(
            (p.partitions, p.rows_per_partition),
            (
                500,
                RowCount::Varied {
                    min: 1,
                    max: 30,
                    distribution: Distribution::Uniform
                }
            )
        );
        assert_eq!(p.partition_select, Distribution::Exponential);
        let said = notes.join("\n");
        for expected in [
            "insert.visits: not mapped",
            "queries.month.fields: multirow",
            "keyspace_definition: absent",
        ] {
            assert!(said.contains(expected), "{expected} in {said}");
        }

        let keys_only =
            "keyspace: ks\ntable: t\ntable_definition: CREATE TABLE t (a int, b text, PRIMARY KEY (a, b))\n";
        assert_eq!(
            import(keys_only, "k.yaml").unwrap().profile.operations["insert"].cql,
            "INSERT INTO t (a, b) VALUES (?, ?)"
        );
    }

    #[test]
    fn bad_profiles_say_what_is_wrong() {
        let err = |t: &str| format!("{:#}", import(t, "s.yaml").unwrap_err());
        let base = "keyspace: ks\ntable: t\ntable_definition: CREATE TABLE t (a int PRIMARY KEY, v text)\n";
        assert!(
            err(&format!("{base}columnspec:\n  - {{name: w, size: fixed(3)}}\n"))
                .contains("'w', which is not a column of t (columns: a, v)")
        );
        assert!(err(&format!("{base}insert: {{batchtype: HUGE}}\n")).contains("LOGGED, UNLOGGED or COUNTER"));
        assert!(err(&format!("{base}columnspec:\n  - {{name: v, size: big(3)}}\n")).contains("columnspec v.size"));
        assert!(err("keyspace: ks\ntable: t\n").contains("table_definition is missing"));
        assert!(err(&base.replace("table: t", "table: u")).contains("creates 't' but table says 'u'"));
        assert!(err("keyspace: [").starts_with("s.yaml:"));
        let p = import(base, "s.yaml").unwrap().profile;
        assert_eq!(p.operations["insert"].cql, "UPDATE t SET v = ? WHERE a = ?");
        assert!(
            p.operations["insert"].batch.is_none(),
            "one row of one partition: a plain statement"
        );
    }
}
