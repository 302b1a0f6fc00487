//! Compaction strategies on a real node (`--compaction`): E1's table is created with the strategy
//! and options asked, a table left with another strategy is refused with the difference named
//! and made again with `--recreate`, and a profile's tables are altered to the strategy asked.

mod common;

use common::{Lab, Shared, fails, jvm_lock, ok, result_json, runtime};
use scylla::client::session_builder::SessionBuilder;
use std::collections::BTreeMap;

static LAB: Shared<()> = Shared::new();

/// The file's node.
fn lab() -> &'static Lab {
    &LAB.get("compaction", |lab| {
        ok(lab.start(&[]));
    })
    .0
}

/// A table's compaction map as the server holds it.
fn compaction_of(lab: &Lab, ks: &str, table: &str) -> BTreeMap<String, String> {
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(lab.cql()).build().await.unwrap();
        let r = s
            .query_unpaged(
                "SELECT compaction FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
                (ks, table),
            )
            .await
            .unwrap();
        r.into_rows_result()
            .unwrap()
            .single_row::<(BTreeMap<String, String>,)>()
            .unwrap()
            .0
    })
}

/// `caplab run` of `workload` for 2 s at 500 op/s into keyspace `ks`, plus `extra`.
fn run(lab: &Lab, out: &str, ks: &str, workload: &str, extra: &[&str]) -> std::process::Output {
    let hosts = lab.cql();
    let dir = lab.dir(out);
    let base = [
        "run",
        "--hosts",
        &hosts,
        "-q",
        "--warmup",
        "0s",
        "--duration",
        "2s",
        "--rate",
        "500",
        "--keyspace",
        ks,
        "--workload",
        workload,
        "--partitions",
        "1000",
        "--out",
        &dir,
    ];
    lab.caplab(&[&base[..], extra].concat())
}

#[test]
fn e1_s_table_takes_the_strategy_asked_and_another_is_refused_by_name() {
    let _jvm = jvm_lock();
    let lab = lab();
    ok(run(lab, "ucs", "cucs", "insert", &["--compaction", "ucs,T4"]));
    let have = compaction_of(lab, "cucs", "e1_insert");
    assert_eq!(
        (have["class"].as_str(), have["scaling_parameters"].as_str()),
        ("org.apache.cassandra.db.compaction.UnifiedCompactionStrategy", "T4"),
        "{have:?}"
    );
    assert!(!have.contains_key("enabled") || have["enabled"] == "true", "{have:?}");
    let doc = result_json(&lab.home.join("ucs"));
    let e1 = &doc["config"]["workload"];
    assert_eq!(e1["compaction"], true, "{e1}");
    assert_eq!(e1["strategy"]["class"], "UnifiedCompactionStrategy", "{e1}");

    // The same table asked as leveled: refused, naming what differs and the fix.
    let said = fails(run(lab, "lcs", "cucs", "insert", &["--compaction", "lcs"]));
    assert!(
        said.contains("compaction is UnifiedCompactionStrategy, not LeveledCompactionStrategy")
            && said.contains("--recreate"),
        "{said}"
    );
    ok(run(
        lab,
        "lcs",
        "cucs",
        "insert",
        &["--compaction", "lcs", "--recreate"],
    ));
    let have = compaction_of(lab, "cucs", "e1_insert");
    assert!(have["class"].ends_with(".LeveledCompactionStrategy"), "{have:?}");
    // Without --compaction, E1's table has compaction off, and a table with it on is refused.
    let said = fails(run(lab, "off", "cucs", "insert", &[]));
    assert!(said.contains("compaction is on, not off"), "{said}");
}

#[test]
fn a_profile_s_tables_are_altered_to_the_strategy_asked() {
    let _jvm = jvm_lock();
    let lab = lab();
    ok(run(
        lab,
        "kv-ucs",
        "ckv",
        "keyvalue",
        &["--compaction", "ucs,L4,target_sstable_size=128MiB"],
    ));
    let have = compaction_of(lab, "ckv", "keyvalue");
    assert!(have["class"].ends_with(".UnifiedCompactionStrategy"), "{have:?}");
    assert_eq!(
        (
            have["scaling_parameters"].as_str(),
            have["target_sstable_size"].as_str()
        ),
        ("L4", "128MiB"),
        "{have:?}"
    );
    // The schema recorded is the server's, strategy included.
    let doc = result_json(&lab.home.join("kv-ucs"));
    let schema = doc["schema"].to_string();
    assert!(schema.contains("UnifiedCompactionStrategy"), "{schema}");
    // A strategy the server does not know is its refusal, named with the statement.
    let said = fails(run(
        lab,
        "kv-twcs",
        "ckv",
        "keyvalue",
        &["--compaction", "twcs,compaction_window_unit=FORTNIGHTS"],
    ));
    assert!(said.contains("the server rejected --compaction twcs"), "{said}");
}
