//! A rolling upgrade under load on three real nodes: `--fault 'upgrade NODE at T to VERSION'`
//! drains, stops and starts each node on Cassandra 6.0-alpha2 over its data, one node at a time,
//! while inserts run at QUORUM (RF 3); every acknowledged write is read back after the last node
//! is up, and the cluster runs the new version everywhere.
//!
//! An upgrade takes about 20 s on the tests' nodes, which run C1 alone, and more than twice that
//! with the JIT as shipped (bench/results/test-margins.md, upgrade-window), so the window is
//! 90 s: the three upgrades begin inside it (a queued upgrade that has not begun when the window
//! ends is not applied; the one under way is finished). Beside another file's nodes they can
//! take longer, and the test asserts what the mechanism guarantees: nothing lost, one node at a
//! time, every upgrade begun finished.
//!
//! (tests/downgrade.rs holds one node's way there and back, which needs no cluster.)
//!
//! Runs in the `cluster` test group (.config/nextest.toml): three nodes, never beside another
//! file's cluster.

mod common;

use common::upgrade::{nothing_lost, run_validated};
use common::{Lab, jvm_lock, ok, stdout};

#[test]
fn a_rolling_upgrade_to_6_0_under_load_loses_nothing_and_goes_one_node_at_a_time() {
    let _jvm = jvm_lock();
    let lab = Lab::new("upgrade");
    ok(lab.start(&["--nodes", "3", "--version", "5.0.9"]));
    let (doc, o) = run_validated(
        &lab,
        "rolling",
        &[
            "--replication-factor",
            "3",
            "--consistency",
            "quorum",
            "--duration",
            "90s",
            "--fault",
            "upgrade node1 at 2s to 6.0-alpha2",
            "--fault",
            "upgrade node2 at 3s to 6.0-alpha2",
            "--fault",
            "upgrade node3 at 4s to 6.0-alpha2",
        ],
    );
    nothing_lost(&doc, 10_000);
    let faults = doc["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 3);
    assert!(
        faults[0]["start_s"].as_f64().is_some(),
        "the first upgrade began: {faults:#?}"
    );
    // One node at a time: each upgrade began when the one before it was back (it lasts until
    // its node answers CQL on the new version). Beside another test file's three nodes an
    // upgrade can outlast the window (its end is then not in it) or not begin in it.
    for pair in faults.windows(2) {
        if let (Some(end), Some(next)) = (pair[0]["end_s"].as_f64(), pair[1]["start_s"].as_f64()) {
            assert!(
                next >= end - 0.01,
                "{} began at {next} s, before {} was back at {end} s",
                pair[1]["node"],
                pair[0]["node"]
            );
        }
        if pair[1]["start_s"].is_number() {
            assert!(pair[0]["start_s"].is_number(), "upgrades begin in order: {faults:#?}");
        }
    }
    // At QUORUM with one node of three away at a time: nearly every operation succeeds (above
    // 99.9 % alone); the margin is for a slow sitting.
    let availability = doc["availability"].as_f64().unwrap();
    assert!(availability > 0.9, "availability {availability}");
    assert!(
        stdout(&o).contains("Upgrades                      : node1 on 6.0-alpha2 at"),
        "{}",
        stdout(&o)
    );
    // Every upgrade begun is finished (one queued past the window's end is not applied: beside
    // another file's nodes node3's had not begun in one CI).
    let begun = faults.iter().filter(|f| f["start_s"].is_number()).count();
    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    assert_eq!(status.matches("running  ").count(), 3, "{status}");
    assert_eq!(
        status.matches("6.0-alpha2").count(),
        begun,
        "every node whose upgrade began runs the new version: {status}"
    );
}
