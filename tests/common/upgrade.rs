//! What tests/upgrade.rs and tests/downgrade.rs share: a validated insert run with upgrade
//! faults, and the check that it lost nothing.

use super::{Lab, ok, result_json};
use std::process::Output;

/// `caplab run` at 200 inserts/s against the lab's first node with `--validate`, plus `extra`
/// (the faults among them); its result.json, and its output.
pub fn run_validated(lab: &Lab, out: &str, extra: &[&str]) -> (serde_json::Value, Output) {
    let hosts = lab.cql();
    let out = lab.dir(out);
    let base = [
        "run",
        "--hosts",
        &hosts,
        "-q",
        "--no-history",
        "--rate",
        "200",
        "--warmup",
        "5s",
    ];
    let o = ok(lab.caplab(&[&base[..], &["--validate", "--out", &out], extra].concat()));
    (result_json(std::path::Path::new(&out)), o)
}

/// Every acknowledged write was read back, and there were more than `least`.
#[track_caller]
pub fn nothing_lost(doc: &serde_json::Value, least: u64) {
    let v = &doc["validation"];
    assert_eq!(
        (v["missing"].as_u64(), v["wrong"].as_u64()),
        (Some(0), Some(0)),
        "{v:#}"
    );
    assert!(v["found"].as_u64().unwrap() > least, "{v:#}");
}
