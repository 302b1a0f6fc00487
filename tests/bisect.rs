//! `caplab bisect` against a real node: a list of values of one setting with one planted
//! change is bisected to the right value, with its page; the same command resumes a bisection
//! stopped part-way, running only what is missing.

mod common;

use common::{Lab, jvm_lock, ok, stdout};

/// The setting: the delay the fault proxy adds to every operation, written six ways; the
/// first three 50 ms, the last three 150 ms (the planted change at the fourth value, ×3). A probe
/// joins a side only once shown within the effect (40 %) of that end, so the old level is a
/// delay too: beside other test files an undelayed run's p50 rises from a fraction of a
/// millisecond to several, which no ratio of undelayed runs is within the effect of; 50 ms plus
/// that is. The effect is wide because a run whose client is starved for part of its 2 s moves its
/// p50 by up to half, and the change is three times it. Up to 20 rounds a comparison, for sittings
/// whose runs' clients stall a fifth of their window (10 left a probe equal to an end open, both
/// tries of one CI); the rounds past a decision are never run, so a quiet day pays nothing
/// (bench/results/test-margins.md, bisect-delays).
const VALUES: &str = "50ms,50000us,50000000ns,150ms,150000us,150000000ns";

fn bisect(lab: &Lab, out: &str) -> std::process::Output {
    lab.caplab(&[
        "bisect",
        "--values",
        VALUES,
        "--figure",
        "p50_ms",
        "--effect",
        "40%",
        "--max-rounds",
        "20",
        "--out",
        out,
        "--",
        "run",
        "--hosts",
        &lab.cql(),
        "--warmup",
        "0s",
        "--rate",
        "1000",
        "--duration",
        "2s",
        "--no-history",
        "--fault",
        "delay node1 at 0s for 2s by {}",
    ])
}

#[test]
fn a_planted_change_is_named_and_a_stopped_bisection_resumes() {
    let _jvm = jvm_lock();
    let lab = Lab::new("bisect");
    ok(lab.start(&[]));
    // A fresh node's first seconds are not what any value measures: its JIT is compiling the
    // write path (p50 190 ms at 1,000 op/s in the first 2 s run, against 0.3-6 ms after). When
    // the random order put a probe's middle value first, that one run left it open after 6 rounds
    // (×2.1 against the first end, though both add no delay; two CIs in a row). So the node warms
    // up first, as a user's bisection over a warm node would.
    ok(lab.caplab(&[
        "run",
        "--hosts",
        &lab.cql(),
        "-q",
        "--warmup",
        "0s",
        "--rate",
        "1000",
        "--duration",
        "15s",
        "--no-history",
    ]));
    let out = lab.dir("bisection");
    let done = ok(bisect(&lab, &out));
    let text = stdout(&done);
    assert!(
        text.contains("the first value at the new level is 150ms (the last at the old: 50000000ns)"),
        "{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.home.join("bisection/bisect.json")).unwrap()).unwrap();
    assert_eq!(doc["answer"]["outcome"], "found", "{doc:#}");
    assert_eq!(doc["answer"]["first_new"], 3, "{doc:#}");
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "two probes halve five gaps to one: {doc:#}");
    let ratio = doc["answer"]["ratio"].as_f64().unwrap();
    assert!(ratio > 2.0, "150 ms against 50 ms, on a p50 of 0.3-17 ms: {doc:#}");
    // The ends were compared first, two runs a round, before any probe.
    assert_eq!(doc["ends"]["verdict"], "differ", "{doc:#}");
    let ends = std::fs::read_dir(lab.home.join("bisection/ends/round-1"))
        .unwrap()
        .count();
    assert_eq!(ends, 2, "each of the ends' rounds runs the first value and the last");
    let seen = common::browse(&lab.home.join("bisection/bisect.html"));
    seen.assert_clean();
    assert!(seen.dom.contains("the first at the new level"), "the value is marked");
    // The bisection is among the history's events, on its page.
    let history = lab.home.join("history.html");
    ok(lab.caplab(&["history", "page", "--out", history.to_str().unwrap()]));
    let seen = common::browse(&history);
    seen.assert_clean();
    assert!(
        seen.dom.contains(
            "bisection of p50_ms over 6 values (50ms … 150000000ns): the first value at the new level is 150ms"
        ),
        "the page lists the bisection"
    );

    // Stopped part-way: the second probe's last round gone, as if Ctrl-C had come there. The
    // same command runs only those runs again and gives the same answer.
    let rounds = probes[1]["rounds"].as_array().unwrap().len();
    let last = lab.home.join(format!("bisection/probe-2/round-{rounds}"));
    std::fs::remove_dir_all(&last).unwrap();
    let kept = lab.home.join("bisection/probe-1/round-1/value-1/result.json");
    let written = std::fs::metadata(&kept).unwrap().modified().unwrap();
    let again = ok(bisect(&lab, &out));
    assert!(
        stdout(&again).contains("the first value at the new level is 150ms"),
        "{}",
        stdout(&again)
    );
    let runs = std::fs::read_dir(lab.home.join("bisection/probe-1/round-1"))
        .unwrap()
        .count();
    assert_eq!(runs, 3, "each round runs the probe and both ends");
    assert!(last.exists(), "the missing round was run again");
    assert_eq!(
        std::fs::metadata(&kept).unwrap().modified().unwrap(),
        written,
        "a run already measured is read, not run again"
    );
    let other = lab.caplab(&[
        "bisect",
        "--values",
        "a,b,c",
        "--out",
        &out,
        "--",
        "run",
        "--version",
        "{}",
    ]);
    assert_eq!(other.status.code(), Some(1));
    assert!(
        common::stderr(&other).contains("holds another bisection"),
        "{}",
        common::stderr(&other)
    );
}
