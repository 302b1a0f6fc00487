//! deploy/k8s's manifests are valid, offline and strictly: Kubernetes' kinds against the
//! schema of a pinned Kubernetes release (kubernetes-validate), the CassandraDatacenter against
//! cass-operator's CRD schema, the PodMonitor against the Prometheus Operator's; and a copy of each with a misspelled field, at the top of its
//! spec and deep inside it, is rejected (scripts/validate-k8s.py --self-test). The sittings' Job
//! is the one `caplab experiment --k8s` writes.

use std::process::Command;

/// scripts/validate-k8s.py's output, with `args`; fails showing it unless the script passed.
fn validate(args: &[&str]) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let o = Command::new("python3")
        .arg(format!("{root}/scripts/validate-k8s.py"))
        .args(args)
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{text}\n{err}\n(kubernetes-validate missing? scripts/setup.sh --test installs it)"
    );
    text
}

#[test]
fn the_kubernetes_manifests_are_valid() {
    let text = validate(&[]);
    for manifest in [
        "loaders-job.yaml #1 (Job)",
        "merge-job.yaml #1 (Job)",
        "cassandra-datacenter.yaml #1 (CassandraDatacenter)",
        "results-volume.yaml #1 (PersistentVolumeClaim)",
        "loaders-podmonitor.yaml #1 (PodMonitor)",
        "sittings-job.yaml #1 (ConfigMap)",
        "sittings-job.yaml #2 (Job)",
    ] {
        assert!(text.contains(&format!("valid   deploy/k8s/{manifest}")), "{text}");
    }
}

/// A validator that accepts anything proves nothing: a field misspelled at the top of each
/// manifest's spec and deep inside it is rejected, twice for each of the seven.
#[test]
fn a_misspelled_field_in_a_manifest_is_rejected() {
    let text = validate(&["--self-test"]);
    assert_eq!(text.matches("is rejected").count(), 14, "{text}");
}

/// The sittings' Job validated above is the one `caplab experiment FILE --k8s N` writes.
#[test]
fn the_sittings_job_is_what_caplab_writes() {
    let root = env!("CARGO_MANIFEST_DIR");
    let o = Command::new(env!("CARGO_BIN_EXE_caplab"))
        .current_dir(root)
        .args(["experiment", "experiments/e1-batches.yaml", "--k8s", "3"])
        .output()
        .expect("caplab");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let committed = std::fs::read_to_string(format!("{root}/deploy/k8s/sittings-job.yaml")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        committed,
        "regenerate it: caplab experiment experiments/e1-batches.yaml --k8s 3 > deploy/k8s/sittings-job.yaml"
    );
}
