//! cassandra-stress user profiles, written in its documented format, run unchanged against a
//! real node: the schema is created from the profile's CQL, `--ops` sets the mix, batches
//! write what `insert` says, queries read what inserts wrote, and what caplab cannot carry
//! over is reported by name.

mod common;

use common::{Lab, count_rows, fails, jvm_lock, ok, op, result_json, stderr};

const BLOGPOSTS: &str = include_str!("../workloads/cassandra-stress/blogposts.yaml");

const TYPESTEST: &str = include_str!("../workloads/cassandra-stress/typestest.yaml");

#[test]
fn cassandra_stress_profiles_run_as_written() {
    let _jvm = jvm_lock();
    let lab = Lab::new("stress");
    ok(lab.start(&[]));
    let hosts = lab.cql();
    let blog = lab.home.join("blogposts.yaml");
    let types = lab.home.join("typestest.yaml");
    std::fs::write(&blog, BLOGPOSTS).unwrap();
    std::fs::write(&types, TYPESTEST).unwrap();
    let run = |profile: &std::path::Path, name: &str, extra: &[&str]| {
        let out = lab.out(name);
        let mut args = vec![
            "run",
            "--warmup",
            "0s",
            "--hosts",
            &hosts,
            "--profile",
            profile.to_str().unwrap(),
            "--rate",
            "2000",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = ok(lab.caplab(&args));
        let doc = result_json(&out);
        assert_eq!(doc["status"], "completed");
        assert_eq!(doc["summary"]["total"]["error_total"], 0, "{}", stderr(&o));
        (doc, stderr(&o))
    };

    // Inserts only: every operation is one batch of 2 partitions x 10 rows.
    let (doc, said) = run(&blog, "blog-insert", &["--ops", "insert=1", "-n", "300"]);
    assert_eq!(op(&doc, "insert"), (300, 6000, 600));
    let rows = count_rows(&hosts, "stresscql.blogposts");
    assert!(
        (1500..=2000).contains(&rows),
        "100 domains x 20 posts, mostly written: {rows}"
    );
    // What does not map is said, by name, on the terminal and in result.json.
    assert!(said.contains("token_range_queries: not mapped"), "{said}");
    let noted = doc["config"]["workload"]["not_mapped"].to_string();
    assert!(noted.contains("columnspec body.size: gaussian(100..1000)"), "{noted}");

    // The mix --ops asks for; reads find the posts the inserts wrote.
    let (doc, _) = run(
        &blog,
        "blog-mix",
        &["--ops", "insert=1,timeline=2,singlepost=1", "-n", "2000"],
    );
    let (inserts, _, _) = op(&doc, "insert");
    let (timelines, timeline_rows, _) = op(&doc, "timeline");
    let (singles, single_rows, _) = op(&doc, "singlepost");
    assert_eq!(inserts + timelines + singles, 2000);
    for (n, share) in [(inserts, 0.25), (timelines, 0.5), (singles, 0.25)] {
        assert!(
            (n as f64 / 2000.0 - share).abs() < 0.02,
            "{n} of 2000, weights say {share}"
        );
    }
    assert!(
        timeline_rows <= 10 * timelines && timeline_rows >= 9 * timelines,
        "{timeline_rows} for {timelines}"
    );
    assert!(
        single_rows <= singles && single_rows * 10 >= 9 * singles,
        "{single_rows} for {singles}"
    );

    // Many types, composite keys, partitions of 20..160 rows, LOGGED batches of 2 rows (select
    // 1/40 of a mean partition of 90 rows).
    let (doc, said) = run(
        &types,
        "types",
        &[
            "--ops",
            "insert=2,simple1=1,range1=1",
            "--partitions",
            "50",
            "-n",
            "1200",
        ],
    );
    let (inserts, insert_rows, _) = op(&doc, "insert");
    assert_eq!(insert_rows, 2 * inserts);
    assert!((inserts as f64 / 1200.0 - 0.5).abs() < 0.02);
    let (reads, read_rows, _) = op(&doc, "simple1");
    assert!(read_rows > reads, "simple1 finds rows: {read_rows} for {reads}");
    assert!(said.contains("queries.range1.fields: multirow"), "{said}");
    assert!(
        doc["config"]["workload"]["definition"]["operations"]["insert"]["cql"]
            .as_str()
            .unwrap()
            .starts_with("UPDATE typestest SET value = ? WHERE name = ? AND choice = ? AND date = ?")
    );

    // Mistakes are named before anything connects.
    let bad = lab.home.join("bad.yaml");
    std::fs::write(&bad, TYPESTEST.replace("- name: lval", "- name: lvalue")).unwrap();
    let err = fails(lab.caplab(&["run", "--hosts", &lab.nowhere(), "--profile", bad.to_str().unwrap()]));
    assert!(
        err.contains("columnspec names 'lvalue', which is not a column of typestest"),
        "{err}"
    );
    let err = fails(lab.caplab(&[
        "run",
        "--hosts",
        &lab.nowhere(),
        "--profile",
        types.to_str().unwrap(),
        "--ops",
        "read=1",
    ]));
    assert!(
        err.contains("'read', which is not an operation") && err.contains("insert, range1, simple1"),
        "{err}"
    );
}
