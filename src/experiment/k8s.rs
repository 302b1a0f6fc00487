//! Many machines at once: `caplab experiment FILE --k8s N` writes a ConfigMap holding FILE and
//! an Indexed Job of N pods, each running one sitting of it on a Kubernetes node of its own, so
//! a day's spread between machines is measured in one sitting's wall time. Pod i writes its
//! sitting to `/results/NAME/sitting-i` on the results volume (deploy/k8s/results-volume.yaml),
//! named after the pod, so the Job run again adds sittings beside the earlier ones; `caplab
//! compare /results/NAME/sitting-*` pools them, sittings on one boot counting as one machine.
//! The pod starts its own Cassandra nodes, as a sitting here does: the image needs the JDK and
//! Maven (deploy/k8s/Dockerfile has both), and the pod the cores the file's nodes need.

use anyhow::{Context, Result};

/// Where the pod finds the experiment file (the ConfigMap, mounted).
const FILE_DIR: &str = "/experiment";

/// The ConfigMap and the Job, as one YAML stream for `kubectl apply -f -`: `name` is the
/// experiment's, `file` the file's name and `text` its contents, `pods` the sittings run at once.
pub fn job(name: &str, file: &str, text: &str, pods: u32, image: &str) -> Result<String> {
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches('-')
        .to_string();
    let config = serde_norway::to_string(&serde_norway::Mapping::from_iter([
        ("apiVersion".into(), "v1".into()),
        ("kind".into(), "ConfigMap".into()),
        (
            "metadata".into(),
            serde_norway::Mapping::from_iter([
                ("name".into(), format!("caplab-experiment-{slug}").into()),
                ("namespace".into(), "caplab".into()),
            ])
            .into(),
        ),
        (
            "data".into(),
            serde_norway::Mapping::from_iter([(file.into(), text.into())]).into(),
        ),
    ]))
    .context("the experiment file as a ConfigMap")?;
    Ok(format!(
        "# Sittings of {file} on {pods} machines at once (caplab experiment {file} --k8s {pods}): pod i\n\
         # (JOB_COMPLETION_INDEX, from 0) runs one sitting on a node of its own, starting its own\n\
         # Cassandra nodes, and writes /results/{slug}/sitting-i; `caplab compare\n\
         # /results/{slug}/sitting-*` pools them. Apply with `kubectl apply -f`; the results volume\n\
         # is deploy/k8s/results-volume.yaml.\n\
         {config}---\n\
         apiVersion: batch/v1\n\
         kind: Job\n\
         metadata:\n\
         \x20 name: caplab-sittings-{slug}\n\
         \x20 namespace: caplab\n\
         spec:\n\
         \x20 completionMode: Indexed\n\
         \x20 completions: {pods}\n\
         \x20 parallelism: {pods}\n\
         \x20 # A sitting that fails is not rerun: its directory keeps what it measured.\n\
         \x20 backoffLimitPerIndex: 0\n\
         \x20 template:\n\
         \x20   metadata:\n\
         \x20     labels:\n\
         \x20       app: caplab-sitting\n\
         \x20   spec:\n\
         \x20     restartPolicy: Never\n\
         \x20     # caplab ends a sitting's step within 30 s of SIGTERM, its record written.\n\
         \x20     terminationGracePeriodSeconds: 60\n\
         \x20     # One sitting per Kubernetes node, and none beside another sitting or a Cassandra pod:\n\
         \x20     # the machine is what is measured.\n\
         \x20     affinity:\n\
         \x20       podAntiAffinity:\n\
         \x20         requiredDuringSchedulingIgnoredDuringExecution:\n\
         \x20           - labelSelector:\n\
         \x20               matchLabels:\n\
         \x20                 app: caplab-sitting\n\
         \x20             topologyKey: kubernetes.io/hostname\n\
         \x20           - labelSelector:\n\
         \x20               matchLabels:\n\
         \x20                 app: caplab-loader\n\
         \x20             topologyKey: kubernetes.io/hostname\n\
         \x20     containers:\n\
         \x20       - name: caplab\n\
         \x20         image: {image}\n\
         \x20         args:\n\
         \x20           - experiment\n\
         \x20           - {FILE_DIR}/{file}\n\
         \x20           - --out=/results/{slug}/sitting-$(JOB_COMPLETION_INDEX)\n\
         \x20           - --sitting=$(POD_NAME)\n\
         \x20           - --no-history\n\
         \x20         env:\n\
         \x20           - name: POD_NAME\n\
         \x20             valueFrom:\n\
         \x20               fieldRef:\n\
         \x20                 fieldPath: metadata.name\n\
         \x20         resources:\n\
         \x20           # The whole node is the sitting's: caplab and the nodes it starts share it.\n\
         \x20           requests:\n\
         \x20             cpu: \"2\"\n\
         \x20             memory: 8Gi\n\
         \x20         volumeMounts:\n\
         \x20           - name: experiment\n\
         \x20             mountPath: {FILE_DIR}\n\
         \x20           - name: results\n\
         \x20             mountPath: /results\n\
         \x20     volumes:\n\
         \x20       - name: experiment\n\
         \x20         configMap:\n\
         \x20           name: caplab-experiment-{slug}\n\
         \x20       - name: results\n\
         \x20         persistentVolumeClaim:\n\
         \x20           claimName: caplab-results\n"
    ))
}

/// The arguments pod `index` runs, `/results` and `/experiment` put under `results` and
/// `files` (a test runs a Job's pods on this machine with them).
pub fn pod_args(manifest: &str, index: u32, pod: &str, files: &str, results: &str) -> Result<Vec<String>> {
    let job = manifest
        .split("\n---\n")
        .nth(1)
        .context("the manifest has no Job after its ConfigMap")?;
    let doc: serde_norway::Value = serde_norway::from_str(job).context("the Job is not YAML")?;
    let args = doc["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .context("the Job's container has no args")?;
    Ok(args
        .iter()
        .filter_map(|a| a.as_str())
        .map(|a| {
            a.replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
                .replace("$(POD_NAME)", pod)
                .replace(FILE_DIR, files)
                .replace("/results", results)
        })
        .collect())
}
