//! One node there and back under load: 5.0.9 to 6.0-alpha2 and down again to 5.0.9 with
//! `--fault 'upgrade node1 at T to VERSION'`, which Cassandra allows when the cluster began with
//! `storage_compatibility_mode: CASSANDRA_4` (6.0 then writes SSTables 5.0 reads; without it
//! 5.0.9 refuses 6.0's and does not start); every acknowledged write is read back. (Split from
//! tests/upgrade.rs, whose rolling upgrade needs three nodes: this file needs one, so it shares
//! the machine as one-node files do.)

mod common;

use common::upgrade::{nothing_lost, run_validated};
use common::{Lab, jvm_lock, ok, stdout};

#[test]
fn one_node_goes_to_6_0_and_back_to_5_0_when_its_sstables_stay_readable() {
    let _jvm = jvm_lock();
    let lab = Lab::new("downgrade");
    ok(lab.start(&["--version", "5.0.9", "--set", "storage_compatibility_mode=CASSANDRA_4"]));
    // One node: nothing is served while it restarts, so the run must not give up then. A restart
    // takes about 15 s alone and more than twice that beside the heaviest files
    // (bench/results/test-margins.md, downgrade-window). Each upgrade waits for the one before
    // it, and the window leaves the way back 70 s to end in.
    let (doc, o) = run_validated(
        &lab,
        "there-and-back",
        &[
            "--duration",
            "100s",
            "--give-up-after",
            "200s",
            "--fault",
            "upgrade node1 at 3s to 6.0-alpha2",
            "--fault",
            "upgrade node1 at 30s to 5.0.9",
        ],
    );
    // A run beside another file's nodes acknowledged 2,888 writes while its one node came and
    // went: how many does not matter, that none is lost does.
    nothing_lost(&doc, 0);
    let faults = doc["faults"].as_array().unwrap();
    for f in faults {
        assert!(f["back_s"].is_number() && f["error"].is_null(), "{f:#}");
    }
    assert!(
        stdout(&o).contains("node1 on 5.0.9 at") && stdout(&o).contains("; one version at a time"),
        "{}",
        stdout(&o)
    );
    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    assert!(status.contains("running  ") && status.contains("5.0.9"), "{status}");
}
