//! Workload profiles against a real node: every built-in runs, reads return what writes and
//! the populate phase wrote, mixes follow the weights, Cassandra 5's workloads (LWT applied and
//! not, counters adding up, SAI queries returning rows, ANN queries with their recall) work,
//! and bad profiles are refused cleanly. Each scenario is a test of its own on one shared node.

mod common;

use common::{Lab, Shared, count_rows, fails, jvm_lock, ok, op, result_json, runtime, stdout};
use scylla::client::session_builder::SessionBuilder;

enum Rows {
    Exactly(u64),
    /// Strictly between, on average per read.
    Between(u64, u64),
}

static NODE: Shared<()> = Shared::new();

/// One 5.0 node the file's tests share; each test writes tables of its own.
fn node() -> &'static Lab {
    &NODE
        .get("profiles", |lab| {
            ok(lab.start(&[]));
        })
        .0
}

#[test]
fn every_built_in_workload_is_listed() {
    let _jvm = jvm_lock();
    let lab = Lab::offline("profiles-listed");
    let listed = stdout(&ok(lab.caplab(&["workloads"])));
    for name in [
        "insert",
        "batch",
        "keyvalue",
        "timeseries",
        "mixed",
        "wide-read",
        "udt",
        "tombstones",
        "lwt",
        "counter",
        "sai",
        "vector",
    ] {
        assert!(listed.contains(name), "{listed}");
    }
}

#[test]
fn built_in_profiles_read_what_they_wrote_in_the_weighted_mix() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = lab.cql();
    // (workload, share of reads, rows each read returns)
    for (name, read_share, rows_per_read) in [
        ("keyvalue", 0.5, Rows::Exactly(1)),
        ("mixed", 0.5, Rows::Exactly(1)),
        ("wide-read", 0.9, Rows::Exactly(8)),
        ("udt", 0.5, Rows::Exactly(1)),
        // Populated with 20 readings of every sensor first: every read finds its 10 latest.
        ("timeseries", 0.2, Rows::Exactly(10)),
        // Deletes leave fewer than the 20 populated rows; rewrites keep most of them.
        ("tombstones", 0.5, Rows::Between(10, 20)),
    ] {
        let out = lab.out(&format!("r-{name}"));
        let o = ok(lab.caplab(&[
            "run",
            "--warmup",
            "0s",
            "--hosts",
            &hosts,
            "--workload",
            name,
            "--partitions",
            "400",
            "-n",
            "6000",
            "--rate",
            "3000",
            "--validate",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]));
        let doc = result_json(&out);
        assert_eq!(doc["status"], "completed", "{name}: {}", stdout(&o));
        // Every row the run left in a known state read back as it left it: written values there
        // (for every column the writes bind), deleted rows absent.
        let v = &doc["validation"];
        assert!(v["rows"].as_u64() > Some(300), "{name}: {v}");
        assert_eq!(
            (v["found"].clone(), v["missing"].as_u64()),
            (v["rows"].clone(), Some(0)),
            "{name}: {v}"
        );
        assert!(
            v["plain"]["columns"].as_array().is_some_and(|c| !c.is_empty()),
            "{name}: {v}"
        );
        assert_eq!(v["table_had_rows"], true, "{name}: the populate phase wrote first: {v}");
        assert_eq!(doc["summary"]["total"]["error_total"], 0, "{name}");
        let total: u64 = doc["summary"]["per_op"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ops"].as_u64().unwrap())
            .sum();
        assert_eq!(total, 6000, "{name}");
        let (reads, rows, _) = op(&doc, "read");
        let share = reads as f64 / 6000.0;
        assert!(
            (share - read_share).abs() < 0.02,
            "{name}: read share {share:.3}, weights say {read_share}"
        );
        match rows_per_read {
            Rows::Exactly(k) => assert_eq!(rows, k * reads, "{name}: every read finds the {k} row(s) it asks for"),
            Rows::Between(lo, hi) => assert!(
                rows > lo * reads && rows < hi * reads,
                "{name}: reads return between {lo} and {hi} rows on average: {rows} for {reads}"
            ),
        }
        if name == "tombstones" {
            let (deletes, _, _) = op(&doc, "delete");
            assert!((deletes as f64 / 6000.0 - 0.25).abs() < 0.02, "delete share: {deletes}");
            // 1,500 deletes and 1,500 writes over 8,000 rows: some rows only deleted (absent),
            // some both (not judged: whichever came last).
            let (deleted, both) = (v["plain"]["deleted"].as_u64(), v["plain"]["not_judged"].as_u64());
            assert!(deleted > Some(100) && both > Some(10), "{v}");
        }
        if name == "keyvalue" {
            keyvalue_rows_changed_behind_caplabs_back_are_found(lab, &hosts, &out);
        }
        // The CSV names each operation's table.
        let csv = std::fs::read_to_string(out.join("latency.csv")).unwrap();
        assert!(csv.lines().skip(1).any(|l| l.contains(",read,")), "{csv}");
    }
}

/// `caplab run` of built-in `name` on the shared node, quietly, into a directory of its own.
fn run_workload(lab: &Lab, name: &str, extra: &[&str]) -> serde_json::Value {
    let hosts = lab.cql();
    let out = lab.out(&format!("c5-{name}"));
    let base = ["run", "--warmup", "0s", "--hosts", &hosts, "--workload", name, "-q"];
    ok(lab.caplab(&[&base[..], extra, &["--out", out.to_str().unwrap()]].concat()));
    result_json(&out)
}

/// The first column of every row `cql` returns, as a number.
fn rows_of(hosts: &str, cql: &str) -> Vec<i64> {
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.unwrap();
        let r = s.query_unpaged(cql, ()).await.unwrap().into_rows_result().unwrap();
        r.rows::<scylla::value::Row>()
            .unwrap()
            .map(|r| match r.unwrap().columns.first() {
                Some(Some(scylla::value::CqlValue::BigInt(n))) => *n,
                Some(Some(scylla::value::CqlValue::Counter(c))) => c.0,
                other => panic!("{cql}: {other:?}"),
            })
            .collect()
    })
}

/// `lwt` on the 5.0 node: conditional writes counted applied and not applied, every account a
/// claim won read back at SERIAL, and two claims deleted behind caplab's back found.
#[test]
fn lwt_claims_are_counted_applied_and_not_and_read_back_at_serial() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = lab.cql();
    // 50 accounts, 1,000 claims: each account is claimed once (Paxos), the rest not applied;
    // --validate reads every account a claim won back at SERIAL: there, and won once.
    let doc = run_workload(
        lab,
        "lwt",
        &["--partitions", "50", "-n", "2000", "--rate", "500", "--validate"],
    );
    let (claimed, _, _) = op(&doc, "claim");
    let (refused, _, _) = op(&doc, "claim_not_applied");
    let (transfers, _, _) = op(&doc, "transfer");
    assert!(
        claimed <= 50 && refused > 0 && transfers > 0,
        "{}",
        doc["summary"]["per_op"]
    );
    let errors = doc["summary"]["total"]["error_total"].as_u64().unwrap();
    assert!(
        claimed + errors >= 1 && refused + claimed + errors >= 900,
        "{}",
        doc["summary"]["per_op"]
    );
    assert_eq!(
        rows_of(&hosts, "SELECT count(*) FROM caplab_profiles.accounts"),
        [50],
        "every account claimed"
    );
    let v = &doc["validation"];
    assert_eq!(
        (v["claims"]["applied"].as_u64(), v["claims"]["not_applied"].as_u64()),
        (Some(claimed), Some(refused)),
        "{v}"
    );
    assert_eq!(
        (
            v["rows"].as_u64(),
            v["found"].as_u64(),
            v["wrong"].as_u64(),
            v["consistency"].as_str()
        ),
        (Some(claimed), Some(claimed), Some(0), Some("Serial")),
        "{v}"
    );
    claims_deleted_behind_caplabs_back_are_found(lab, &hosts, errors == 0);
}

/// `counter`: every acknowledged increment in the counters, and a counter changed behind
/// caplab's back found.
#[test]
fn counters_add_up_to_the_increments_acknowledged() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = lab.cql();
    // Counters: the views add up to the increments acknowledged, plus at most those that
    // failed (a timed-out increment may have been applied; it is never retried); --validate
    // judges every row touched against those bounds. From an empty table (--truncate), so a
    // retried test counts only its own increments.
    let doc = run_workload(
        lab,
        "counter",
        &[
            "--partitions",
            "100",
            "-n",
            "2000",
            "--rate",
            "1000",
            "--validate",
            "--truncate",
        ],
    );
    let (increments, _, _) = op(&doc, "increment");
    let failed = doc["summary"]["total"]["error_total"].as_u64().unwrap() as i64;
    let views: i64 = rows_of(&hosts, "SELECT views FROM caplab_profiles.page_views")
        .iter()
        .sum();
    assert!(
        (increments as i64..=increments as i64 + failed).contains(&views),
        "{views} views for {increments} increments acknowledged, {failed} failed"
    );
    let v = &doc["validation"];
    assert_eq!(
        (
            v["rows"].as_u64(),
            v["found"].as_u64(),
            v["missing"].as_u64(),
            v["wrong"].as_u64()
        ),
        (Some(100), Some(100), Some(0), Some(0)),
        "{v}"
    );
    assert_eq!(v["operations"].as_u64(), Some(increments), "{v}");
    assert_eq!(v["counters"]["read"].as_i64(), Some(views), "{v}");
    counters_changed_behind_caplabs_back_are_found(lab, &hosts);
}

/// `sai`: indexed queries returning rows.
#[test]
fn sai_queries_return_the_rows_their_index_holds() {
    let _jvm = jvm_lock();
    let lab = node();
    // SAI: 2,000 products of 200 categories populated first; a category holds about 10, a
    // price above a random one leaves up to the LIMIT of 20.
    let doc = run_workload(lab, "sai", &["--partitions", "2000", "-n", "3000", "--rate", "1000"]);
    assert_eq!(doc["summary"]["total"]["error_total"], 0, "{}", doc["summary"]);
    for (query, lo, hi) in [("by_category", 3.0, 20.0), ("by_price", 1.0, 20.0)] {
        let (reads, rows, _) = op(&doc, query);
        let per = rows as f64 / reads as f64;
        assert!(
            reads > 0 && (lo..=hi).contains(&per),
            "{query}: {rows} rows in {reads} queries"
        );
    }
}

/// The text keys a `SELECT key FROM … LIMIT n` returns.
async fn keys(s: &scylla::client::session::Session, cql: &str) -> Vec<String> {
    let r = s.query_unpaged(cql, ()).await.unwrap();
    r.into_rows_result()
        .unwrap()
        .rows::<(String,)>()
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect()
}

/// The positive control: two claimed accounts deleted by another client are found missing by
/// `caplab validate`, and it exits 1 (exactly two when the run had no error: then every claim
/// that won was acknowledged, so every account is judged).
fn claims_deleted_behind_caplabs_back_are_found(lab: &Lab, hosts: &str, exact: bool) {
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.unwrap();
        let ids = keys(&s, "SELECT id FROM caplab_profiles.accounts LIMIT 2").await;
        for id in &ids {
            s.query_unpaged("DELETE FROM caplab_profiles.accounts WHERE id = ?", (id,))
                .await
                .unwrap();
        }
    });
    let o = lab.caplab(&["validate", lab.home.join("c5-lwt").to_str().unwrap()]);
    let text = stdout(&o);
    if exact {
        assert_eq!(o.status.code(), Some(1), "{text}");
        assert!(
            text.contains(": 2 missing, 0 won twice") && text.contains("LOST WRITES"),
            "{text}"
        );
    } else {
        assert!(text.contains("rows claimed hold their one winner"), "{text}");
    }
}

/// The positive control of plain writes: three keyvalue rows deleted and one changed by another
/// client are found by `caplab validate`, exactly those, and it exits 1. (The run's 3,000-odd
/// writes over 400 keys are chosen by a hash of each operation's index, the same every run: the
/// first four keys the table lists are among those written.)
fn keyvalue_rows_changed_behind_caplabs_back_are_found(lab: &Lab, hosts: &str, out: &std::path::Path) {
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.unwrap();
        let keys = keys(&s, "SELECT key FROM caplab_profiles.keyvalue LIMIT 4").await;
        assert_eq!(keys.len(), 4);
        for key in &keys[..3] {
            s.query_unpaged("DELETE FROM caplab_profiles.keyvalue WHERE key = ?", (key,))
                .await
                .unwrap();
        }
        s.query_unpaged(
            "UPDATE caplab_profiles.keyvalue SET value = 0x00 WHERE key = ?",
            (&keys[3],),
        )
        .await
        .unwrap();
    });
    let o = lab.caplab(&["validate", out.to_str().unwrap()]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(": 3 missing, 1 wrong (other values, or back after a delete)") && text.contains("LOST WRITES"),
        "{text}"
    );
}

/// The positive control: increments taken away from three counter rows and added to one by
/// another client are found by `caplab validate`, exactly those rows, and it exits 1.
fn counters_changed_behind_caplabs_back_are_found(lab: &Lab, hosts: &str) {
    // The counter run's results, above.
    let out = lab.home.join("c5-counter");
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.unwrap();
        let pages = keys(&s, "SELECT page FROM caplab_profiles.page_views LIMIT 4").await;
        assert_eq!(pages.len(), 4);
        for (page, change) in pages.iter().zip(["- 1", "- 1", "- 2", "+ 3"]) {
            let cql = format!("UPDATE caplab_profiles.page_views SET views = views {change} WHERE page = ?");
            s.query_unpaged(cql, (page,)).await.unwrap();
        }
    });
    let o = lab.caplab(&["validate", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.contains("96 of 100 counter rows within their bounds")
            && text.contains("3 below")
            && text.contains("1 above"),
        "{text}"
    );
}

/// The vector workload: 2,000 items populated, ANN queries returning their 10 rows, and the
/// recall of a 100-query sample against the exact neighbours among all 2,000. Then the control:
/// a query for as many rows as the table has must find every exact neighbour (recall 1, by
/// construction: whatever the index's approximation, all rows are all neighbours); one for 5
/// rows of the same table is judged against its own 5.
#[test]
fn vector_search_and_its_recall() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let out = lab.out("c5-vector");
    let args = ["run", "--warmup", "0s", "--hosts", hosts, "--workload", "vector", "-q"];
    let more = [
        "--partitions",
        "2000",
        "--ops",
        "search=1",
        "-n",
        "500",
        "--rate",
        "500",
    ];
    let summary = stdout(&ok(
        lab.caplab(&[&args[..], &more, &["--out", out.to_str().unwrap()]].concat())
    ));
    let doc = result_json(&out);
    assert_eq!(doc["summary"]["total"]["error_total"], 0, "{}", doc["summary"]);
    let (searches, rows, _) = op(&doc, "search");
    assert_eq!((searches, rows), (500, 5000), "every ANN query returns its LIMIT of 10");
    let r = &doc["recall"][0];
    assert_eq!(
        (
            r["operation"].as_str(),
            r["k"].as_u64(),
            r["queries"].as_u64(),
            r["rows"].as_u64()
        ),
        (Some("search"), Some(10), Some(100), Some(2000)),
        "{r}"
    );
    let mean = r["mean"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&mean) && r["min"].as_f64().unwrap() <= mean, "{r}");
    assert!(summary.contains("recall@10"), "{summary}");
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains(&format!("@10 {mean:.3}")),
        "the run page shows the recall"
    );

    for (limit, name) in [(300, "all"), (5, "five")] {
        let out = lab.out(&format!("vector-{name}"));
        let file = include_str!("../workloads/vector.yaml")
            .replace("name: vector", "name: vector-control\nkeyspace: recall_control")
            .replace("clusters: 64", "clusters: 1")
            .replace("LIMIT 10", &format!("LIMIT {limit}"));
        let path = lab.home.join(format!("vector-{name}.yaml"));
        std::fs::write(&path, file).unwrap();
        let args = ["run", "--warmup", "0s", "--hosts", hosts, "-q", "--partitions", "300"];
        let more = [
            "--ops",
            "search=1",
            "-n",
            "50",
            "--rate",
            "100",
            "--profile",
            path.to_str().unwrap(),
        ];
        ok(lab.caplab(&[&args[..], &more, &["--out", out.to_str().unwrap()]].concat()));
        let r = result_json(&out)["recall"][0].clone();
        assert_eq!((r["k"].as_u64(), r["rows"].as_u64()), (Some(limit), Some(300)), "{r}");
        let mean = r["mean"].as_f64().unwrap();
        assert!(limit != 300 || mean == 1.0, "all rows are all the neighbours: {r}");
        assert!((0.0..=1.0).contains(&mean), "{r}");
    }
}

/// Two loaders split the key space: each populates its half, together every row once.
#[test]
fn two_loaders_split_the_key_space() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let split = lab.home.join("split.yaml");
    std::fs::write(
        &split,
        "keyspace: split\nschema:\n  - CREATE TABLE IF NOT EXISTS t (k int, c int, v text, PRIMARY KEY (k, c))\n\
         partitions: 50\nrows_per_partition: 8\noperations:\n  \
         write: {cql: \"INSERT INTO t (k, c, v) VALUES (?, ?, ?)\", weight: 0}\n  \
         read: {cql: \"SELECT * FROM t WHERE k = ?\"}\npopulate: write\n",
    )
    .unwrap();
    let count = |table: &str| count_rows(hosts, table);
    let as_loader = |slice: &str, what: &[&str]| {
        let out = lab.out(&format!("r-loader-{}", slice.replace('/', "of")));
        let mut args = vec![
            "run",
            "--warmup",
            "0s",
            "--hosts",
            hosts,
            "--loader",
            slice,
            "-q",
            "--out",
            out.to_str().unwrap(),
            // Each loader's directory is reused by the runs below.
            "--force",
        ];
        args.extend_from_slice(what);
        ok(lab.caplab(&args));
        result_json(&out)
    };
    let doc = as_loader("1/2", &["--profile", split.to_str().unwrap(), "-n", "100"]);
    assert_eq!(doc["config"]["engine"]["loader"], "1/2");
    assert_eq!(count("split.t"), 200, "loader 1/2 populates half of 50 x 8 rows");
    as_loader("2/2", &["--profile", split.to_str().unwrap(), "-n", "100"]);
    assert_eq!(count("split.t"), 400, "loader 2/2 populates the other half");
    // E1 inserts: every operation of either loader writes a row nobody else writes.
    for slice in ["1/2", "2/2"] {
        as_loader(
            slice,
            &[
                "--workload",
                "insert",
                "--keyspace",
                "split_e1",
                "--partitions",
                "100",
                "-n",
                "700",
            ],
        );
    }
    assert_eq!(count("split_e1.e1_insert"), 1400, "two loaders' inserts do not overlap");
}

/// A printed profile runs as a file, unchanged.
#[test]
fn profiles_run_as_files_with_partitions_of_their_shape() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let shown = stdout(&ok(lab.caplab(&["workloads", "show", "timeseries"])));
    let file = lab.home.join("my-timeseries.yaml");
    std::fs::write(&file, shown).unwrap();
    let out = lab.out("r-file");
    ok(lab.caplab(&[
        "run",
        "--warmup",
        "0s",
        "--hosts",
        hosts,
        "--profile",
        file.to_str().unwrap(),
        "-n",
        "500",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(result_json(&out)["summary"]["total"]["ops"], 500);

    // Partitions of different sizes, populated exactly; row-range reads span `range` rows.
    let shapes = lab.home.join("shapes.yaml");
    let shapes_yaml = "keyspace: shapes\nschema:\n  - CREATE TABLE IF NOT EXISTS t (k int, c int, v text, PRIMARY KEY (k, c))\n\
         partitions: 50\nrows_per_partition: {min: 1, max: 20}\noperations:\n  \
         write: {cql: \"INSERT INTO t (k, c, v) VALUES (?, ?, ?)\", weight: 0}\n  \
         slice: {cql: \"SELECT * FROM t WHERE k = ? AND c >= ? AND c < ?\", range: 5}\n  \
         whole: {cql: \"SELECT * FROM t WHERE k = ?\"}\npopulate: write\n";
    std::fs::write(&shapes, shapes_yaml).unwrap();
    let out = lab.out("r-shapes");
    let args = [
        "run",
        "--warmup",
        "0s",
        "--hosts",
        hosts,
        "--profile",
        shapes.to_str().unwrap(),
        "-n",
        "1000",
        "-q",
    ];
    ok(lab.caplab(&[&args[..], &["--out", out.to_str().unwrap()]].concat()));
    let sizes = caplab::workload::profile::RowCount::Varied {
        min: 1,
        max: 20,
        distribution: Default::default(),
    };
    let expected: u64 = (0..50).map(|p| sizes.rows_in(p)).sum();
    assert_eq!(
        count_rows(hosts, "shapes.t") as u64,
        expected,
        "every row of every partition, once"
    );
    let doc = result_json(&out);
    let (slices, slice_rows, _) = op(&doc, "slice");
    let (wholes, whole_rows, _) = op(&doc, "whole");
    assert!(
        slice_rows <= 5 * slices && slice_rows >= slices,
        "{slice_rows} rows for {slices} ranges of 5"
    );
    assert!(whole_rows >= wholes && whole_rows <= 20 * wholes && whole_rows > slice_rows);
    std::fs::write(&shapes, shapes_yaml.replace(", range: 5", "")).unwrap();
    let err = fails(lab.caplab(&[&args[..], &["--out", out.to_str().unwrap(), "--force"]].concat()));
    assert!(
        err.contains("binds clustering column `c` twice") && err.contains("range: N"),
        "{err}"
    );
}

/// The positive control of a user's own profile file, in the keyspace `--keyspace` names: its
/// rows read back as written (the column the server fills with `now()` is not compared, and
/// does not count as wrong), then two
/// rows deleted and one changed by another client are found by `caplab validate`, exactly those,
/// and it exits 1.
#[test]
fn a_profile_file_s_rows_changed_behind_caplabs_back_are_found() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let file = lab.home.join("control.yaml");
    std::fs::write(
        &file,
        "keyspace: control_file\nschema:\n  - CREATE TABLE IF NOT EXISTS kv (k text PRIMARY KEY, v text, at timestamp)\n\
         columns:\n  k: {size: 8}\n  v: {size: 20}\npartitions: 60\noperations:\n  \
         put: {cql: \"INSERT INTO kv (k, v, at) VALUES (?, ?, toTimestamp(now()))\", weight: 3}\n  \
         get: {cql: \"SELECT v FROM kv WHERE k = ?\", weight: 1}\n",
    )
    .unwrap();
    let out = lab.out("r-control");
    ok(lab.caplab(&[
        "run",
        "--warmup",
        "0s",
        "--hosts",
        hosts,
        "--profile",
        file.to_str().unwrap(),
        "-n",
        "400",
        "--validate",
        "--truncate",
        "--keyspace",
        "control",
        "--replication-factor",
        "1",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]));
    let v = result_json(&out)["validation"].clone();
    let rows = count_rows(hosts, "control.kv") as u64;
    assert!(rows > 40, "300-odd writes over 60 keys: {rows}");
    assert_eq!(
        (
            v["rows"].as_u64(),
            v["found"].as_u64(),
            v["missing"].as_u64(),
            v["wrong"].as_u64()
        ),
        (Some(rows), Some(rows), Some(0), Some(0)),
        "{v}"
    );
    assert_eq!(v["table_had_rows"], false, "--truncate emptied it: {v}");
    let compared = v["plain"]["columns"].to_string();
    assert!(compared.contains("\"v\"") && !compared.contains("\"at\""), "{v}");
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.unwrap();
        let keys = keys(&s, "SELECT k FROM control.kv LIMIT 3").await;
        for key in &keys[..2] {
            s.query_unpaged("DELETE FROM control.kv WHERE k = ?", (key,))
                .await
                .unwrap();
        }
        s.query_unpaged("UPDATE control.kv SET v = 'changed' WHERE k = ?", (&keys[2],))
            .await
            .unwrap();
    });
    let o = lab.caplab(&["validate", out.to_str().unwrap()]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(": 2 missing, 1 wrong (other values, or back after a delete)") && text.contains("LOST WRITES"),
        "{text}"
    );
}

/// E1's workloads, printed as profiles, run through the profile engine: sequential
/// partitions, each pass adding new rows, so every row written is a new one.
#[test]
fn e1_runs_as_profiles() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    for (name, ops, rows) in [("insert", "300", 300), ("batch", "50", 500)] {
        let file = lab.home.join(format!("{name}.yaml"));
        std::fs::write(&file, stdout(&ok(lab.caplab(&["workloads", "show", name])))).unwrap();
        let out = lab.out(&format!("r-e1-{name}"));
        let args = [
            "run",
            "--warmup",
            "0s",
            "--hosts",
            hosts,
            "--profile",
            file.to_str().unwrap(),
            "--partitions",
            "20",
            "-n",
            ops,
        ];
        ok(lab.caplab(&[&args[..], &["-q", "--out", out.to_str().unwrap()]].concat()));
        assert_eq!(count_rows(hosts, &format!("caplab.e1_{name}")), rows, "{name}");
    }
}

/// A profile the server shows to be wrong is refused, naming what is wrong, and leaves no schema
/// behind.
#[test]
fn a_profile_the_server_shows_wrong_is_refused_with_its_schema_dropped() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let out = lab.out("r-wrong");
    let bad = lab.home.join("bad.yaml");
    std::fs::write(
        &bad,
        "keyspace: rejected\nschema:\n  - CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v text)\noperations:\n  read: {cql: \"SELECT * FROM t WHERE k = ? LIMIT ?\"}\n",
    )
    .unwrap();
    let err = fails(lab.caplab(&[
        "run",
        "--hosts",
        hosts,
        "--profile",
        bad.to_str().unwrap(),
        "-n",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        err.contains("binds `[limit]`") && err.contains("columns are k, v"),
        "{err}"
    );
    let left = runtime().block_on(async {
        let s = SessionBuilder::new().known_node(hosts).build().await.unwrap();
        let r = s
            .query_unpaged(
                "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = 'rejected'",
                (),
            )
            .await
            .unwrap();
        r.into_rows_result().unwrap().rows_num()
    });
    assert_eq!(left, 0, "the rejected profile's keyspace was dropped");
}

/// What an application sends, captured from the node's full query log: every insert and every
/// batch of two runs, with its statement, its seven bound values and its batch type, in start
/// order, and none of the driver's questions about the cluster. Ctrl-C ends the capture early and
/// keeps what was logged.
#[test]
fn an_applications_queries_and_batches_are_captured_with_their_values() {
    let _jvm = jvm_lock();
    let lab = node();
    let trace = lab.home.join("capture").join("trace.jsonl");
    let raw = lab.home.join("capture").join("trace.fql").join("node1");
    let capture = common::spawn(
        lab,
        None,
        &["capture", "--for", "120s", "--out", trace.to_str().unwrap()],
    );
    common::wait_until("the full query log is on", std::time::Duration::from_secs(60), || {
        raw.join("metadata.cq4t").exists()
    });
    let run = |workload: &str, ops: &str| {
        let out = lab.dir(&format!("captured-{workload}"));
        ok(lab.caplab(&[
            "run",
            "--hosts",
            &lab.cql(),
            "--workload",
            workload,
            "-n",
            ops,
            "--keyspace",
            "captured",
            "--warmup",
            "0s",
            "-q",
            "--no-history",
            "--out",
            &out,
        ]));
    };
    run("insert", "300");
    run("batch", "20");
    common::signal(&capture, "INT");
    let o = capture.wait_with_output().unwrap();
    let said = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(130),
        "{said}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(said.contains("and 20 batches"), "{said}");
    let entries: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let inserts: Vec<_> = entries
        .iter()
        .filter(|e| {
            e["query"]
                .as_str()
                .is_some_and(|q| q.starts_with("INSERT INTO captured.e1_insert"))
        })
        .collect();
    assert_eq!(inserts.len(), 300);
    for e in &inserts {
        let values = e["values"].as_array().unwrap();
        assert_eq!(values.len(), 7, "{e}");
        assert!(values.iter().all(|v| v.as_str().is_some_and(|h| !h.is_empty())), "{e}");
        assert_eq!(e["node"], "node1");
    }
    let batches: Vec<_> = entries.iter().filter(|e| e["batch_type"].is_string()).collect();
    assert_eq!(batches.len(), 20);
    for b in &batches {
        assert_eq!(b["batch_type"], "UNLOGGED", "{b}");
        let (queries, values) = (b["queries"].as_array().unwrap(), b["values"].as_array().unwrap());
        assert!(!queries.is_empty() && queries.len() == values.len(), "{b}");
        assert!(
            queries
                .iter()
                .all(|q| q.as_str().unwrap().starts_with("INSERT INTO captured.e1_batch"))
        );
    }
    let starts: Vec<i64> = entries.iter().map(|e| e["start_ms"].as_i64().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "in start order");
    assert!(
        entries
            .iter()
            .all(|e| !e["query"].as_str().unwrap_or("").contains(" system")),
        "the driver's questions about the cluster are left out"
    );
}
