//! Loaders with an automatic warm-up, on a real node: three loaders at one `--start-at` each
//! settle on their own, and all start measuring in the same second; at their fixed rate the
//! rule watches service latency, and the window it hands over holds one throughput level.
//! (Split from tests/loaders.rs, whose other tests share the machine; the warm-up of a run flat
//! out, which watches throughput and the JIT, is tests/steady.rs'.)
//!
//! Runs after the other files, on the machine's last core with its node (`--cpus`,
//! `--client-cpus`), beside tests/history_gate.rs' doubled p99 on the first
//! (.config/nextest.toml): its loaders wait for the node to settle, and beside another file's
//! nodes on shared cores their service latency settled late or not at all
//! (bench/results/test-margins.md, loaders-warmup-group, history-gate-cores).

mod common;

use common::verdict::{names_what_it_did, series};
use common::{Lab, OutputAsync, Shared, jvm_lock, ok, result_json, stdout};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static LAB: Shared<()> = Shared::new();

/// The file's node, on the machine's last core (history_gate.rs' doubled p99 runs beside it, on
/// the first).
fn lab() -> &'static Lab {
    &LAB.get("loaders-warmup", |lab| {
        ok(lab.start(&["--cpus", &common::last_core()]));
    })
    .0
}

/// Three loaders, started 1 s apart at one `--start-at`, each with an automatic warm-up: each
/// settles on its own, but all start measuring in the same second (they agree in the cluster's
/// `caplab_loaders.settled`), so the merge has no partial second and exits 0. Each window is
/// judged (20 s, the verdict's least) and, at a fixed rate, holds one throughput level; its
/// verdict names what its latency did.
///
/// Every loader must settle, or the agreement is not tested (at the maximum they all stop warming
/// up in the same second anyway). A node whose hot paths are not compiled keeps the loaders'
/// latency moving past the maximum, and three debug-build clients at 1,000 op/s each beside the
/// node saturate two cores; so the node first runs flat out for 10 s (on C1 alone, common::JIT,
/// enough to compile the hot paths) and each loader runs at 300 op/s: at 500, on a boot of the
/// AMD EPYC kind whose hypervisor stole from it, the node and three clients used 0.98 of their one
/// core and none settled in 240 s. The 240 s maximum leaves room for a slower machine; past it the
/// test fails (bench/results/test-margins.md, loaders-warmup-rate).
#[test]
fn loaders_with_an_automatic_warm_up_agree_on_when_to_measure() {
    let _jvm = jvm_lock();
    let lab = lab();
    let hosts = lab.cql();
    let flat_out = lab.dir("agreed-flat-out");
    let core = common::last_core();
    ok(lab.caplab(&[
        "run",
        "--hosts",
        &hosts,
        "--client-cpus",
        &core,
        "-q",
        "--warmup",
        "0s",
        "--duration",
        "10s",
        "--out",
        &flat_out,
    ]));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let start = (now + 8).to_string();
    let mut children = Vec::new();
    for i in 1..=3 {
        let out = lab.dir(&format!("agreed{i}"));
        let slice = format!("{i}/3");
        let mut cmd = common::caplab_command();
        cmd.args([
            "run",
            "--hosts",
            &hosts,
            "--client-cpus",
            &core,
            "-q",
            "--rate",
            "900",
            "--warmup",
            "auto",
            "--warmup-max",
            "240s",
        ])
        .args([
            "--duration",
            "20s",
            "--start-at",
            &start,
            "--loader",
            &slice,
            "--out",
            &out,
        ])
        .env("CAPLAB_HOME", &lab.home);
        children.push(cmd.output_async());
        std::thread::sleep(Duration::from_secs(1));
    }
    let loaders: Vec<Value> = children
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let o = c.join().unwrap();
            assert!(o.status.success(), "loader {}: {}", i + 1, common::stderr(&o));
            result_json(&lab.home.join(format!("agreed{}", i + 1)))
        })
        .collect();
    let warm: Vec<f64> = loaders
        .iter()
        .map(|l| l["warmup"]["length_s"].as_f64().unwrap())
        .collect();
    assert!(
        warm.iter().all(|w| *w == warm[0]) && loaders.iter().all(|l| l["warmup"]["settled"] == true),
        "every loader settled and measured from the same second: {warm:?}; {:?}",
        loaders.iter().map(|l| l["warmup"]["check"].clone()).collect::<Vec<_>>()
    );
    for (i, l) in loaders.iter().enumerate() {
        let throughput = &series(l, "throughput")["segments"];
        assert_eq!(
            throughput.as_array().unwrap().len(),
            1,
            "loader {}: {throughput}",
            i + 1
        );
        names_what_it_did(l);
    }
    let o = common::caplab_command()
        .args(["merge", "agreed1", "agreed2", "agreed3", "--out", "agreed-merged"])
        .current_dir(&lab.home)
        .env("CAPLAB_HOME", &lab.home)
        .output()
        .unwrap();
    let o = ok(o);
    let doc = result_json(&lab.home.join("agreed-merged"));
    assert_eq!(doc["merged"]["partial"], serde_json::json!([]), "{}", stdout(&o));
}
