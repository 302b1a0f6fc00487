//! `--server-profile` against real nodes: async-profiler attached to the node for the
//! measured window only; flame graphs that open in a real browser; Cassandra's write path in
//! the CPU profile and allocated classes in the allocation profile; an experiment's
//! differential profile between two Cassandra versions; errors that name the fix.

mod common;

use common::{Lab, browse, jvm_lock, ok, result_json, stdout};
use std::path::Path;

/// A frame without the converter's type suffix (`_[j]` compiled, `_[i]` inlined…).
fn bare(frame: &str) -> &str {
    match frame.rfind("_[") {
        Some(i) if frame.ends_with(']') => &frame[..i],
        _ => frame,
    }
}

/// Frames of a collapsed stacks file (`a;b;c count` per line) with their sample counts.
fn stacks(file: &Path) -> Vec<(Vec<String>, u64)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("stack and count");
            (
                stack.split(';').map(|f| bare(f).to_string()).collect(),
                n.parse().unwrap(),
            )
        })
        .collect()
}

/// Opens a flame graph (async-profiler's page) in headless Chromium; returns the DOM and the
/// browser's console output.
fn open_flame_graph(page: &Path) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let o = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--virtual-time-budget=5000",
            "--window-size=1280,1000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("chromium (apt-get install chromium)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_profiled_run_shows_the_write_path_of_the_measured_window_only() {
    let _jvm = jvm_lock();
    let lab = Lab::new("profile");
    ok(lab.start(&[]));
    let out = lab.out("profiled");
    // A long warm-up (10 s) before a 5 s window: a profile that included the warm-up would
    // hold about three times the samples the window's server CPU accounts for.
    let o = ok(lab.caplab(&[
        "run",
        "--hosts",
        &lab.cql(),
        "--rate",
        "2000",
        "--warmup",
        "10s",
        "--duration",
        "5s",
        "--server-profile",
        "cpu,alloc",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]));
    let text = stdout(&o);
    assert!(text.contains("Server profile (async-profiler"), "{text}");
    assert!(
        text.contains("node1 cpu:") && text.contains("top by self time"),
        "{text}"
    );

    let doc = result_json(&out);
    let p = &doc["profile"];
    assert_eq!(p["errors"], serde_json::json!([]), "{p}");
    assert_eq!(p["spec"], "cpu:10ms,alloc:512k");
    let sampler = p["cpu_sampler"].as_str().unwrap();
    assert!(["perf_events", "ctimer"].contains(&sampler), "{sampler}");
    let (w_from, w_to) = (
        p["window_from_ms"].as_u64().unwrap(),
        p["window_to_ms"].as_u64().unwrap(),
    );
    assert!((4_900..=5_100).contains(&(w_to - w_from)), "a 5 s window: {p}");
    // Recording began shortly before the window, long after the warm-up began.
    let rec_from = p["recording_from_ms"].as_u64().unwrap();
    assert!(
        rec_from <= w_from && w_from - rec_from <= 2_500,
        "recording from {rec_from}, window from {w_from}"
    );

    let node = &p["nodes"][0];
    assert_eq!(node["node"], "node1");
    let event = |kind: &str| {
        node["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} profile: {node}"))
            .clone()
    };

    // CPU: Cassandra's write path, and about the samples the window's server CPU accounts for.
    let cpu = event("cpu");
    let cpu_stacks = stacks(&out.join(cpu["collapsed"].as_str().unwrap()));
    let samples: u64 = cpu_stacks.iter().map(|(_, n)| n).sum();
    assert_eq!(samples, cpu["samples"].as_u64().unwrap());
    let on_write_path = |s: &[String]| {
        s.iter().any(|f| {
            f.contains("org.apache.cassandra.cql3.statements.ModificationStatement")
                || f.contains("org.apache.cassandra.db.memtable")
        })
    };
    let write_samples: u64 = cpu_stacks
        .iter()
        .filter(|(s, _)| on_write_path(s))
        .map(|(_, n)| n)
        .sum();
    assert!(
        write_samples > 0,
        "no ModificationStatement/memtable frame in {samples} CPU samples"
    );
    let server = &doc["server"];
    let cpu_seconds = server["server_cpu_cores"].as_f64().unwrap() * server["window_s"].as_f64().unwrap();
    let expected = cpu_seconds / 0.010;
    let ratio = samples as f64 / expected;
    assert!(
        (0.5..=1.5).contains(&ratio),
        "{samples} CPU samples at 10 ms for {cpu_seconds:.2} CPU-seconds in the window (×{ratio:.2}): \
         the profile must cover the window, not the warm-up"
    );
    assert!(!cpu["top_self"].as_array().unwrap().is_empty());
    assert!(
        cpu["top_total"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["frame"].as_str().unwrap().starts_with("org.apache.cassandra.")),
        "{cpu}"
    );

    // Allocations: the allocated classes are the leaves, Cassandra's among them.
    let alloc = event("alloc");
    assert!(alloc["samples"].as_u64().unwrap() > 0, "{alloc}");
    let alloc_stacks = stacks(&out.join(alloc["collapsed"].as_str().unwrap()));
    assert!(
        alloc_stacks
            .iter()
            .any(|(s, _)| s.last().unwrap().starts_with("org.apache.cassandra.db.")),
        "no allocation of a Cassandra class"
    );
    assert!(
        alloc_stacks.iter().any(|(s, _)| s.last().unwrap().ends_with("[]")),
        "no array allocation"
    );

    // The flame graph is async-profiler's page, and it draws in a real browser.
    let flame = out.join(cpu["flame_graph"].as_str().unwrap());
    let (dom, console) = open_flame_graph(&flame);
    assert!(
        dom.contains("node1 cpu (CPU samples every 10ms), measured window"),
        "{dom}"
    );
    assert!(
        dom.contains("<canvas id=\"canvas\" width="),
        "the flame graph's script did not draw:\n{console}"
    );
    assert!(!console.contains("Uncaught"), "{console}");
    assert!(out.join(cpu["heatmap"].as_str().unwrap()).exists());
    assert!(
        !out.join("profile/node1/recording.jfr").exists(),
        "the recording is kept only with jfr"
    );

    // The run's page links the profiles and still draws clean.
    let page = browse(&out.join("report.html"));
    page.assert_clean();
    assert!(
        page.dom.contains("href=\"profile/node1/cpu.html\""),
        "no flame graph link"
    );
    assert!(page.dom.contains("href=\"profile/node1/alloc.html\""));
}

#[test]
fn an_experiment_shows_where_two_versions_spend_differently() {
    let _jvm = jvm_lock();
    let lab = Lab::new("profile-diff");
    let dir = lab.home.clone();
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("versions.yaml");
    // 6.0 runs on JDK 21 only, 5.0 on JDK 17: each variant names its JDK. A 10 s window: at
    // 1,500 op/s a 6.0-alpha2 node on C1 alone (common::JIT) spent about 0.2 cores, 96 CPU
    // samples at 10 ms in 5 s (with C2 compiling beside it, more).
    std::fs::write(
        &file,
        format!(
            "name: versions-profile\nrepeats: 1\n\
             node: {{heap: 1G, address: {}, jmx_port: {}}}\n\
             run: {{rate: 1500, warmup: 5s, duration: 10s, server-profile: cpu}}\n\
             variants:\n  - {{name: '5.0.9', node: {{version: 5.0.9, java: 17}}}}\n  - {{name: 6.0-alpha2, node: {{version: 6.0-alpha2, java: 21}}}}\n\
             measure:\n  - {{name: insert, workload: insert}}\n",
            lab.address, lab.jmx_port
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = lab.caplab(&["experiment", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}\n{}", common::stderr(&o));
    assert!(
        text.contains("Server profile insert (cpu): 6.0-alpha2 vs 5.0.9 (baseline)"),
        "{text}"
    );

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("experiment.json")).unwrap()).unwrap();
    let diffs = doc["profile_diffs"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    let d = &diffs[0];
    assert_eq!(
        (d["variant"].as_str(), d["event"].as_str()),
        (Some("6.0-alpha2"), Some("cpu"))
    );
    assert!(
        d["base_samples"].as_u64().unwrap() > 100 && d["samples"].as_u64().unwrap() > 100,
        "{d}"
    );
    // At least one of Cassandra's own frames moved by two points or more of all samples.
    let moved: Vec<&serde_json::Value> = d["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["frame"].as_str().unwrap().starts_with("org.apache.cassandra."))
        .filter(|c| {
            let total = c["total_share"].as_f64().unwrap() - c["base_total_share"].as_f64().unwrap();
            let own = c["self_share"].as_f64().unwrap() - c["base_self_share"].as_f64().unwrap();
            total.abs().max(own.abs()) >= 0.02
        })
        .collect();
    assert!(!moved.is_empty(), "no Cassandra frame moved: {d}");
    let flame = out.join(d["flame_graph"].as_str().expect("a differential flame graph"));
    let (dom, console) = open_flame_graph(&flame);
    assert!(dom.contains("<canvas id=\"canvas\" width="), "{console}");

    // The experiment's page shows the table and links the differential flame graph.
    let page = browse(&out.join("report.html"));
    page.assert_clean();
    assert!(
        page.dom.contains(d["flame_graph"].as_str().unwrap()),
        "no link to the differential flame graph"
    );
}
