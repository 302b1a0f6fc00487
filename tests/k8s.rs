//! deploy/k8s's manifests are valid, offline and strictly: Kubernetes' kinds against the
//! schema of a pinned Kubernetes release (kubernetes-validate), the CassandraDatacenter against
//! cass-operator's CRD schema, the PodMonitor against the Prometheus Operator's; and a copy of each with a misspelled field, at the top of its
//! spec and deep inside it, is rejected (scripts/validate-k8s.py --self-test).

use std::process::Command;

#[test]
fn the_kubernetes_manifests_are_valid_and_a_misspelled_field_is_not() {
    let root = env!("CARGO_MANIFEST_DIR");
    let o = Command::new("python3")
        .args([&format!("{root}/scripts/validate-k8s.py"), "--self-test"])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{text}\n{err}\n(kubernetes-validate missing? scripts/setup.sh --test installs it)"
    );
    for manifest in [
        "loaders-job.yaml #1 (Job)",
        "merge-job.yaml #1 (Job)",
        "cassandra-datacenter.yaml #1 (CassandraDatacenter)",
        "results-volume.yaml #1 (PersistentVolumeClaim)",
        "loaders-podmonitor.yaml #1 (PodMonitor)",
    ] {
        assert!(text.contains(&format!("valid   deploy/k8s/{manifest}")), "{text}");
    }
    assert_eq!(text.matches("is rejected").count(), 10, "{text}");
}
