//! `caplab bisect` against a real node: a list of values of one setting with one planted
//! change is bisected to the right value, with its page; the same command resumes a bisection
//! stopped part-way, running only what is missing.

mod common;

use common::{Lab, jvm_lock, ok, stdout};

/// The setting: the delay the fault proxy adds to every operation, written six ways; the
/// first three are no delay, the last three 100 ms (the planted change at the fourth value).
/// 100 ms, not 3 or 20: beside another test file's three nodes the undelayed runs' p50 rose from
/// about 0.3 ms to 6 ms, and in one CI to 16.5 ms, where 20 ms (p50 4.5 ms against 16.5) could
/// not be told apart in 6 rounds and the bisection ended open (exit 3). Up to 10 rounds a probe,
/// not the default 6: with four files at once an undelayed 2 s run once took a p50 of 221 ms
/// (the others 2-4 ms), and that one round left a probe open at ×16 after six (a CI of
/// 2026-12-01); the rounds past a probe's decision are never run, so a quiet day pays nothing.
const VALUES: &str = "0ns,0us,0ms,100ms,100000us,100000000ns";

fn bisect(lab: &Lab, out: &str) -> std::process::Output {
    lab.caplab(&[
        "bisect",
        "--values",
        VALUES,
        "--figure",
        "p50_ms",
        "--max-rounds",
        "10",
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
        text.contains("the first value at the new level is 100ms (the last at the old: 0ms)"),
        "{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.home.join("bisection/bisect.json")).unwrap()).unwrap();
    assert_eq!(doc["answer"]["first_new"], 3, "{doc:#}");
    let probes = doc["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "two probes halve five gaps to one: {doc:#}");
    let ratio = doc["answer"]["ratio"].as_f64().unwrap();
    assert!(ratio > 3.0, "100 ms on a p50 of 0.3-17 ms: {doc:#}");
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
            "bisection of p50_ms over 6 values (0ns … 100000000ns): the first value at the new level is 100ms"
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
        stdout(&again).contains("the first value at the new level is 100ms"),
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
