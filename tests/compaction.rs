//! Compaction strategies on a real node (`--compaction`): E1's table is created with the strategy
//! and options asked, a table left with another strategy is refused with the difference named
//! and made again with `--recreate`, and a profile's tables are altered to the strategy asked;
//! a run whose tables compact reads the node's compaction over JMX each second (pending
//! compactions, what compaction read, SSTables per read) into result.json and its page.

mod common;

use common::{Lab, Shared, fails, jvm_lock, ok, result_json, runtime};
use scylla::client::session_builder::SessionBuilder;
use std::collections::BTreeMap;

static LAB: Shared<()> = Shared::new();

/// The file's node.
fn lab() -> &'static Lab {
    &LAB.get("compaction", |lab| {
        // Small memtables flush every few seconds, so there is something to compact soon.
        ok(lab.start(&["--set", "memtable_heap_space=4MiB"]));
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

/// `caplab run` of `workload` into keyspace `ks`, plus `extra`: for 2 s at 500 op/s without a
/// warm-up unless `extra` says otherwise.
fn run(lab: &Lab, out: &str, ks: &str, workload: &str, extra: &[&str]) -> std::process::Output {
    let hosts = lab.cql();
    let dir = lab.fresh(out);
    let mut base = vec!["run", "--hosts", &hosts, "-q"];
    for (flag, value) in [("--warmup", "0s"), ("--duration", "2s"), ("--rate", "500")] {
        if !extra.contains(&flag) {
            base.extend([flag, value]);
        }
    }
    base.extend([
        "--keyspace",
        ks,
        "--workload",
        workload,
        "--partitions",
        "1000",
        "--out",
        &dir,
    ]);
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

#[test]
fn a_run_whose_tables_compact_reads_the_compaction_each_second() {
    let _jvm = jvm_lock();
    let lab = lab();
    // Memtables of 4 MiB flush every few seconds, and size-tiered with a threshold of 2 starts a
    // compaction at every second flush.
    ok(run(
        lab,
        "kv-read",
        "cread",
        "keyvalue",
        &[
            "--compaction",
            "stcs,min_threshold=2",
            "--duration",
            "20s",
            "--rate",
            "3000",
            // The JMX reader's JVM compiles its source as it starts: seconds on a loaded machine.
            "--warmup",
            "10s",
        ],
    ));
    let out = lab.home.join("kv-read");
    let doc = result_json(&out);
    let server = &doc["server"];
    let c = &server["compaction"];
    // Once the reader's JVM is up (it compiles its source first: 2 s alone, 15 s beside another
    // test file here), every second has its reading.
    let seconds = common::measured_seconds(server);
    let first = seconds
        .iter()
        .position(|s| s["pending_compactions"].is_number())
        .unwrap_or_else(|| panic!("no second read: {server}"));
    assert!(
        seconds[first..].iter().all(|s| s["pending_compactions"].is_number()),
        "{server}"
    );
    assert_eq!(c["seconds"].as_u64(), Some((seconds.len() - first) as u64), "{c}");
    assert!(seconds.len() - first >= 8, "{c}");
    assert!(c["compacted_mb"].as_f64().unwrap() > 0.0, "{c}\n{}", server["nodes"]);
    assert!(
        c["pending_max"].as_f64().unwrap() >= c["pending_mean"].as_f64().unwrap(),
        "{c}"
    );
    // Reads of rows flushed to several SSTables touch more than none, and the memtable's fewer.
    let per_read = c["sstables_per_read"].as_f64().unwrap();
    assert!((0.1..10.0).contains(&per_read), "{c}");
    assert!(
        c["compacted_per_flushed"].as_f64().unwrap() > 0.0,
        "flushes were seen: {c}"
    );
    assert!(
        seconds.iter().any(|s| s["compaction_mb_per_s"].as_f64() > Some(0.0)),
        "{server}"
    );
    let page = common::browse(&out.join("report.html"));
    page.assert_clean();
    assert_eq!(
        page.check["charts"]["chart-compaction"].as_u64(),
        c["seconds"].as_u64(),
        "{}",
        page.check
    );
    assert!(page.dom.contains("MiB compacted per MiB flushed"), "the summary table");
    // E1 without --compaction keeps it off, and reads none.
    ok(run(lab, "e1-off", "coff", "insert", &[]));
    assert!(result_json(&lab.home.join("e1-off"))["server"]["compaction"].is_null());
}
