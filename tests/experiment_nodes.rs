//! `caplab experiment` whose variants are nodes of their own, against real nodes: a duet runs
//! both variants' nodes at once with half the load each, its windows started in the same second,
//! and finds that the variant with a smaller heap pauses more. (Split from tests/experiment.rs
//! so the two run at once; variants on fresh nodes per step are server_profile.rs's.)

mod common;

use common::{Lab, cell, experiment_json, jvm_lock, ok, stdout};

#[test]
fn a_duet_runs_both_variants_at_once_with_half_the_load_each_and_finds_the_small_heap() {
    let _jvm = jvm_lock();
    let (a, b) = (Lab::new("experiment-duet"), Lab::new("experiment-duet-b"));
    std::fs::create_dir_all(&a.home).unwrap();
    let file = a.home.join("duet.yaml");
    // Two variants on nodes of their own (each lab's address and JMX port), which differ in
    // their heap: 4G against 512M. Six rounds on nodes kept between them, the large side first
    // in each pair (as written, so the lines are known); each side runs at half the file's rate.
    //
    // The question is the count of GC pauses (`metrics`, with throughput and server CPU beside
    // it; caplab's own CPU is asked too, and left out, as both sides share it): 10-row batches
    // of 1 kB values, the young generation a quarter of the heap in both (G1 sizes it
    // adaptively otherwise, and whether the small heap's old generation had crossed the
    // concurrent-cycle threshold by the window made its count swing from 5 to 25 between
    // repeats), so young collections come many times as often on 512M as on 4G. 500 op/s (250 a
    // side) leaves each node half a core; at 1,000 neither kept its rate beside the heaviest
    // files. A duet pairs each round's two windows in the same seconds, on two nodes started
    // once; six rounds, as the first round on nodes just started counts far more pauses than the
    // rest and four rounds' spread left the adjusted p above 0.05 once. The measurements behind
    // each choice: bench/results/test-margins.md, experiment-duet-heaps. Every window is compared
    // (the default): the count of young collections at a fixed allocation rate does not depend
    // on whether the JIT had settled.
    std::fs::write(
        &file,
        format!(
            "name: duet\ndesign: duet\norder: as_written\nrepeats: 6\nfresh: false\n\
             metrics: [gc_count, throughput, server_cpu, client_cpu]\n\
             node: {{jvm_opt: [-XX:+UnlockExperimentalVMOptions, -XX:G1NewSizePercent=25, -XX:G1MaxNewSizePercent=25]}}\n\
             run: {{rate: 500, value_size: 1000, warmup: 5s, duration: 10s}}\n\
             variants:\n  - {{name: large, node: {{heap: 4G, address: {}, jmx_port: {}}}}}\n  \
             - {{name: small, node: {{heap: 512M, address: {}, jmx_port: {}}}}}\n\
             measure:\n  - {{name: batch, workload: batch}}\n",
            a.address, a.jmx_port, b.address, b.jmx_port
        ),
    )
    .unwrap();
    let o = ok(a.caplab(&["experiment", file.to_str().unwrap(), "--check"]));
    assert!(
        stdout(&o).contains("a duet: each measurement's two variants run at once")
            && stdout(&o).contains("002 (with the step above) small r1 batch"),
        "{}",
        stdout(&o)
    );
    // Run from the lab's home with a relative --out, as a user types it: the variants' nodes
    // live under it, and each node's JVM (which runs in its own directory) must still find its
    // GC log there (it once could not, and no step started).
    let o = common::spawn(&a, None, &["experiment", "duet.yaml", "--out", "duet-out"]);
    let o = ok(o.wait_with_output().unwrap());
    let out = a.home.join("duet-out");
    let (text, said) = (stdout(&o), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(
        said.contains("Step 1 and 2: variants large and small, round 1 (a duet: at once, half the load each), batch"),
        "{said}"
    );
    let doc = experiment_json(&out);
    assert_eq!(doc["sittings"][0]["status"], "completed", "{text}");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    for pair in steps.chunks(2) {
        let [x, y] = pair else { unreachable!() };
        assert_eq!(
            (x["variant_name"].as_str(), y["variant_name"].as_str()),
            (Some("large"), Some("small"))
        );
        assert_eq!(x["repeat"], y["repeat"]);
        let (rx, ry) = (
            common::result_json(&out.join(x["dir"].as_str().unwrap())),
            common::result_json(&out.join(y["dir"].as_str().unwrap())),
        );
        // Both schedules started in the same second, each at half the rate, on its own node.
        assert_eq!(rx["started_at"], ry["started_at"], "{x} {y}");
        for (r, lab) in [(&rx, &a), (&ry, &b)] {
            // Every operation of 250 op/s for 10 s was due and is counted: done, or an error (a
            // slow day can leave one unsent at the end, behind 1 s stalls, or a fresh node beside
            // another file's three serve none for a window).
            let total = &r["summary"]["total"];
            let (due, ops, errors) = (
                total["due"].as_u64().unwrap(),
                total["ops"].as_u64().unwrap(),
                total["error_total"].as_u64().unwrap(),
            );
            assert!(due == 2500 && ops + errors == due, "250 op/s for 10 s: {total}");
            assert_eq!(
                r["config"]["client"]["hosts"][0]
                    .as_str()
                    .map(|h| h.starts_with(&lab.address)),
                Some(true)
            );
        }
    }
    // Paired by round; caplab's own CPU, shared by both sides, is not compared.
    assert!(text.contains("repeats paired by round"), "{text}");
    let rows = doc["comparison"][0]["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["metric"] != "client_cpu"), "{rows:?}");
    assert!(rows.iter().any(|r| r["metric"] == "server_cpu"), "{rows:?}");
    // The small heap paused more, surely.
    let (small, large) = (cell(&doc, "gc_count", "small"), cell(&doc, "gc_count", "large"));
    assert!(small["mean"].as_f64() > large["mean"].as_f64(), "{small} vs {large}");
    assert_eq!(small["verdict"], "worse", "{small}\n{text}");
    // Both sides of every round are in the history, though they started in the same second.
    let history: serde_json::Value = serde_json::from_str(&stdout(&ok(a.caplab(&["history", "--json"])))).unwrap();
    let records: u64 = history
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["records"].as_u64().unwrap())
        .sum();
    assert_eq!(records, 12, "{history:#}\n{said}");
    // Each variant's nodes lived in a home of their own, and the experiment stopped them.
    for v in ["large", "small"] {
        let o = ok(common::caplab_command()
            .args(["node", "status", "--json"])
            .env("CAPLAB_HOME", out.join(format!("home-{v}")))
            .output()
            .unwrap());
        let nodes: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(nodes.as_array().map(Vec::len), Some(1), "{v}: {nodes}");
        assert_ne!(nodes[0]["state"], "running", "{v}: {nodes}");
    }
}
