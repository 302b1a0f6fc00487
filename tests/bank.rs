//! The bank on three real Cassandra 6.0 nodes (RF 3, QUORUM, Accord on): Accord transfers keep
//! every branch's total, and one account changed by another client outside the bank's transfers
//! is found, exactly (that branch, by that amount, and the run fails); Paxos transfers on one
//! branch count their contended transfers apart and keep the total; a node killed and started
//! again in the middle of Accord transfers loses nothing. Each scenario is a test of its own on
//! one shared cluster, which each test leaves with all three nodes up.
//!
//! Rates are low (20-30 op/s): three Accord nodes on two shared cores carry about 30 op/s and
//! time nearly everything out at 100 (bench/results/test-margins.md, bank-rates-and-group).
//!
//! Runs in the `cluster` test group (.config/nextest.toml): never beside another file's cluster,
//! as beside three more nodes most Accord transfers time out.

mod common;

use common::{Lab, Shared, jvm_lock, ok, result_json, runtime, stdout, wait_for_seconds};
use scylla::client::session_builder::SessionBuilder;
use std::process::Output;

static THREE: Shared<()> = Shared::new();

/// The file's cluster: three 6.0-alpha2 nodes with Accord on, each of which, killed, rebuilds
/// its Accord state from its peers when it starts again (the default policy refuses to start).
fn cluster() -> &'static Lab {
    let lab = &THREE.get("bank", up).0;
    // A node a failed try left stopped (a killed node whose restart did not finish) is started
    // again, so a retry finds the cluster whole; with every node up this is a no-op.
    up(lab);
    lab
}

/// `caplab node start` of the file's cluster: starts whichever of its nodes does not run.
fn up(lab: &Lab) {
    ok(lab.start(&[
        "--nodes",
        "3",
        "--version",
        "6.0-alpha2",
        "--set",
        "accord.enabled=true",
        "--set",
        "accord.journal.stop_marker_failure_policy=REBOOTSTRAP",
    ]));
}

/// `caplab run --workload WORKLOAD` at RF 3 over 100 accounts (10 branches), plus `extra`.
fn bank_args<'a>(hosts: &'a str, out: &'a str, workload: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--hosts",
        hosts,
        "-q",
        "--no-history",
        "--workload",
        workload,
        "--replication-factor",
        "3",
        "--partitions",
        "100",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    args
}

fn run(lab: &Lab, out: &str, workload: &str, extra: &[&str]) -> Output {
    let hosts = lab.cql();
    lab.caplab(&bank_args(&hosts, out, workload, extra))
}

/// The run in `dir`'s result, after asserting that its closing check read all `branches` and
/// found each holding its total, and that no audit saw one broken.
#[track_caller]
fn held(dir: &str, branches: u64) -> serde_json::Value {
    let doc = result_json(std::path::Path::new(dir));
    let bank = &doc["bank"];
    assert_eq!(
        (bank["checked"].as_u64(), bank["broken"].as_u64()),
        (Some(branches), Some(0)),
        "{bank:#}"
    );
    assert_eq!(bank["audits_broken"], 0, "{bank:#}");
    doc
}

fn per_op(doc: &serde_json::Value, name: &str) -> u64 {
    common::op(doc, name).0
}

#[test]
fn accord_transfers_keep_every_branch_and_a_change_outside_them_is_found_exactly() {
    let _jvm = jvm_lock();
    let lab = cluster();
    let clean = lab.fresh("accord-clean");
    let o = ok(run(
        lab,
        &clean,
        "bank-accord",
        &["--rate", "30", "--warmup", "2s", "--duration", "8s"],
    ));
    let doc = held(&clean, 10);
    let bank = &doc["bank"];
    assert!(bank["audits"].as_u64().unwrap() > 0, "audits ran: {bank:#}");
    assert_eq!(bank["total"], 100_000);
    assert!(per_op(&doc, "transfer") > 100, "{}", doc["summary"]["per_op"]);
    assert_eq!(
        per_op(&doc, "transfer_not_applied"),
        0,
        "Accord transfers are never contended away"
    );
    assert!(stdout(&o).contains("all 10 branches read hold 10,000 after the run (SERIAL)"));

    // Another client adds 7 to account 13 (branch 1) in a transaction of its own while the bank
    // runs: the closing check finds that branch, 7 over, and the run fails.
    let planted = lab.fresh("accord-planted");
    let hosts = lab.cql();
    let args = bank_args(
        &hosts,
        &planted,
        "bank-accord",
        &["--rate", "30", "--warmup", "2s", "--duration", "8s"],
    );
    let child = common::spawn(lab, None, &args);
    wait_for_seconds(std::path::Path::new(&planted), 2);
    runtime().block_on(async {
        let s = SessionBuilder::new().known_node(lab.cql()).build().await.unwrap();
        let mut plant = scylla::statement::unprepared::Statement::new(
            "BEGIN TRANSACTION UPDATE bank.accounts SET balance = balance + 7 WHERE id = 13; COMMIT TRANSACTION",
        );
        plant.set_consistency(scylla::statement::Consistency::Quorum);
        s.query_unpaged(plant, ()).await.expect("the planted change");
    });
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "a broken invariant fails the run: {}",
        stdout(&o)
    );
    let doc = result_json(std::path::Path::new(&planted));
    let bank = &doc["bank"];
    assert_eq!(bank["broken"], 1, "{bank:#}");
    assert_eq!(bank["examples"][0]["branch"], 1, "{bank:#}");
    assert_eq!(bank["examples"][0]["total"], 10_007, "{bank:#}");
    assert_eq!(bank["total"].as_i64().unwrap() - bank["expected"].as_i64().unwrap(), 7);
    // Audits that read branch 1 after the change saw it; none saw any other branch broken.
    for ex in bank["audit_examples"].as_array().unwrap() {
        assert_eq!(
            (ex["branch"].as_u64(), ex["total"].as_i64()),
            (Some(1), Some(10_007)),
            "{bank:#}"
        );
    }
    assert!(
        stdout(&o)
            .contains("BROKEN: 1 of 10 branches off 10,000 after the run (SERIAL), total 100,007 against 100,000 (+7)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn paxos_transfers_on_one_contended_branch_count_the_lost_races_apart_and_keep_the_total() {
    let _jvm = jvm_lock();
    let lab = cluster();
    // Twenty accounts, two branches (two partitions), transfers racing for them. At a steady 20 a
    // second they come 50 ms apart, and on a fast day no transfer overlaps another, so no race
    // is lost. So a burst of 80 a second comes in the last second of every 4, 12.5 ms apart, less
    // than any transfer takes: there they overlap by construction (bench/results/test-margins.md,
    // bank-contention). One partition at 40 a second for the whole run times nearly every
    // transfer out: Paxos rounds that keep beating each other end in the server's CAS timeout.
    let out = lab.fresh("paxos");
    let hosts = lab.cql();
    let mut args = bank_args(
        &hosts,
        &out,
        "bank-paxos",
        &[
            "--rate",
            "burst:20,+60 for 1s every 4s",
            "--warmup",
            "2s",
            "--duration",
            "8s",
        ],
    );
    let at = args.iter().position(|a| *a == "100").unwrap();
    args[at] = "20";
    let o = ok(lab.caplab(&args));
    let doc = held(&out, 2);
    assert!(per_op(&doc, "transfer") > 0, "{}", doc["summary"]["per_op"]);
    assert!(
        per_op(&doc, "transfer_not_applied") > 0,
        "bursts of transfers on two partitions lose some races: {}",
        doc["summary"]["per_op"]
    );
    assert!(stdout(&o).contains("all 2 branches read hold 10,000"), "{}", stdout(&o));
}

#[test]
fn a_node_killed_in_the_middle_of_accord_transfers_loses_nothing() {
    let _jvm = jvm_lock();
    let lab = cluster();
    // Empty: a retried test runs again rather than being refused.
    let out = lab.fresh("kill");
    ok(run(
        lab,
        &out,
        "bank-accord",
        &[
            "--rate",
            "20",
            "--warmup",
            "2s",
            "--duration",
            "25s",
            "--fault",
            "kill node3 at 4s for 4s",
        ],
    ));
    let doc = held(&out, 10);
    let bank = &doc["bank"];
    assert_eq!(bank["total"], 100_000);
    let fault = &doc["faults"][0];
    assert_eq!(fault["action"], "kill", "{fault:#}");
    assert!(fault["start_s"].as_f64().is_some(), "the kill happened: {fault:#}");
    assert!(fault["during"]["due"].as_u64().unwrap() > 0, "{fault:#}");
    assert!(per_op(&doc, "transfer") > 100, "{}", doc["summary"]["per_op"]);
    // The run started node3 again before it ended (Accord's journal rebuilt from its peers).
    let status = stdout(&ok(lab.caplab(&["node", "status"])));
    assert_eq!(status.matches(" running ").count(), 3, "{status}");
}
