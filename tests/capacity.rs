//! Service levels and capacity against a real node: a run is judged window by window (exit 0
//! or 1), the adaptive search finds a rate whose own results confirm it, a sweep prices its
//! capacity, and --fresh-node restarts the node before each step. Each scenario is a test of
//! its own on one shared node.

mod common;

use common::{Args, Lab, Shared, jvm_lock, ok, result_json, stderr, stdout};
use std::path::Path;
use std::time::Instant;

static NODE: Shared<()> = Shared::new();

/// One 5.0 node the file's tests share (a sweep with --fresh-node restarts it, and leaves it up).
fn node() -> &'static Lab {
    &NODE
        .get("capacity", |lab| {
            ok(lab.start(&[]));
        })
        .0
}

#[test]
fn a_single_run_is_judged_window_by_window() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = lab.cql();
    // Each run's results directory starts empty (a retry finds its first try's).
    let dir = |name: &str| lab.fresh(name);

    // A single run, judged: a loose SLA passes (exit 0), an impossible one fails (exit 1),
    // and both keep their results with per-window verdicts. A fresh node's first seconds beside
    // other test files can miss the rate and reach a p99 of most of a second, which a window's
    // judge rightly fails: hence 5 s of warm-up and a p99 under 3 s, loose as this case means to
    // be; and 1 % of failures allowed, as operations never sent at a loaded client's window end
    // count as failed (bench/results/test-margins.md, capacity-single-run).
    let run = |sla: &str, out: &str| {
        lab.caplab(&[
            "run",
            "--warmup",
            "5s",
            "--hosts",
            &hosts,
            "--rate",
            "1000",
            "--duration",
            "4s",
            "--sla",
            sla,
            "--sla-errors",
            "1%",
            "--out",
            out,
            "-q",
        ])
    };
    let o = ok(run("p99<3s/2s", &dir("run-pass")));
    assert!(
        stdout(&o).contains("SLA p99<3000ms/2s, rate >= 97% of 1,000 op/s, errors <= 1%: PASS"),
        "{}",
        stdout(&o)
    );
    let doc = result_json(&lab.home.join("run-pass"));
    assert_eq!(doc["sla"]["pass"], true);
    assert_eq!(doc["sla"]["windows_judged"], 2);
    let o = run("p50<1us/2s", &dir("run-fail"));
    assert_eq!(o.status.code(), Some(1), "a missed SLA exits 1");
    assert!(stdout(&o).contains(": FAIL (2 of 2 windows failed)"), "{}", stdout(&o));
    let doc = result_json(&lab.home.join("run-fail"));
    assert_eq!(
        (doc["status"].as_str(), doc["sla"]["pass"].as_bool()),
        (Some("completed"), Some(false))
    );
}

/// The adaptive search, with a deliberately tight SLA.
/// A cold node and a 10 ms p99 over 2 s windows: any GC pause in a window fails it, so the
/// confirmation can fail at every rate that passed, and beside the heaviest test files even the
/// lowest rate worth trying can fail (bench/results/test-margins.md, capacity-tight-sla). Each
/// outcome is the mechanism working; the test asserts each is reported as such, with exit 0 only
/// for a capacity that held.
#[test]
fn the_adaptive_search_reports_what_it_found() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let dir = |name: &str| lab.home.join(name).to_str().unwrap().to_string();
    // A history of its own: the other tests' searches on the shared node are not this one's.
    let history_db = dir("adaptive-history.db");
    let began = Instant::now();
    let o = lab.caplab(&[
        "capacity",
        "--history",
        &history_db,
        "--hosts",
        hosts,
        "--sla",
        "p99<10ms/2s",
        "--warmup",
        "2s",
        "--measure",
        "4s",
        "--precision",
        "20%",
        "--confirm",
        "6s",
        "-q",
        "--out",
        &dir("adaptive"),
    ]);
    let took = began.elapsed().as_secs();
    assert!(took < 300, "the search took {took}s");
    let said = stderr(&o);
    assert!(
        said.contains("Probe: ") && said.contains("Trying ") && said.contains("bracket: "),
        "{said}"
    );
    assert!(said.contains("window 0-2s"), "per-window verdicts: {said}");
    let cap = result_json_named(&lab.home.join("adaptive"), "capacity.json");
    let Some(capacity) = cap["capacity"].as_f64() else {
        // Beside the suite's other nodes even 1 op/s may fail a 10 ms p99, and the reason then
        // goes on to say whether the client made it fail.
        let why = cap["stopped_early"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("no rate passed, down to the lowest worth trying"),
            "{cap:#}"
        );
        return no_rate_passed_is_reported(lab, &o, &cap, &dir("adaptive"), Some(&history_db));
    };
    assert!(stdout(&o).contains("Capacity: "), "{}", stdout(&o));
    assert!(cap["highest_achieved_rate"].as_f64().unwrap() >= capacity * 0.97);
    let steps = cap["steps"].as_array().unwrap();
    // Every step at the capacity passed, and its own result.json says so.
    for s in steps.iter().filter(|s| s["rate"].as_f64() == Some(capacity)) {
        assert_eq!(s["pass"], true, "{s}");
        let step = result_json(&lab.home.join("adaptive").join(s["dir"].as_str().unwrap()));
        assert_eq!(step["sla"]["pass"], true);
        assert_eq!(step["config"]["capacity_step"]["rate"].as_f64(), Some(capacity));
        assert!(step["summary"]["total"]["op_rate"].as_f64().unwrap() >= capacity * 0.97);
    }
    // Within the precision of a rate that failed, or of the flat-out ceiling.
    let failed_above = steps
        .iter()
        .filter(|s| s["pass"] == false && s["rate"].as_f64().unwrap() > capacity)
        .map(|s| s["rate"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let ceiling = cap["probe"]["achieved_rate"].as_f64().unwrap();
    assert!(
        failed_above.min(ceiling) <= capacity * 1.2 + 1.0,
        "capacity {capacity}, lowest failure above {failed_above}, ceiling {ceiling}"
    );

    // The capacity found was then held for 6 s: a confirmation step with its own results,
    // and the capacity that stands is one that held (or none did, said so).
    let confirmation = cap["confirmation"].as_array().expect("confirmation steps");
    assert!(!confirmation.is_empty() && confirmation.len() <= 3, "{cap:#}");
    assert_eq!(
        confirmation[0]["rate"].as_f64(),
        Some(capacity),
        "the capacity found is held first"
    );
    let held = result_json(&lab.home.join("adaptive").join(confirmation[0]["dir"].as_str().unwrap()));
    assert_eq!(
        held["summary"]["operation_time_s"].as_f64(),
        Some(6.0),
        "held for --confirm"
    );
    // The search recorded itself in the history: one record of its capacity (the one that
    // stands), not one per step.
    let history: serde_json::Value = serde_json::from_str(&stdout(&ok(lab.caplab(&[
        "history",
        "--json",
        "--history",
        &history_db,
    ]))))
    .unwrap();
    let searches: Vec<&serde_json::Value> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["key"]["kind"] == "capacity")
        .collect();
    assert_eq!(searches.len(), 1, "{history:#}");
    assert_eq!(searches[0]["records"], 1, "{history:#}");
    assert_eq!(searches[0]["last"]["figures"]["capacity"], cap["confirmed"]);
    // Its bar is the search's bracket: the rate held to the lowest rate that failed above it,
    // in the search or in the confirmation.
    if let Some(held) = cap["confirmed"].as_f64() {
        let above = steps
            .iter()
            .chain(confirmation)
            .filter(|s| s["pass"] == false)
            .map(|s| s["rate"].as_f64().unwrap())
            .filter(|r| *r > held)
            .fold(f64::INFINITY, f64::min);
        let bracket = &searches[0]["last"]["intervals"]["capacity"];
        if above.is_finite() {
            assert_eq!(bracket, &serde_json::json!([held, above]), "{history:#}");
        } else {
            assert!(bracket.is_null(), "no failure above: no bracket {history:#}");
        }
    }
    match cap["confirmed"].as_f64() {
        Some(c) => {
            assert!(c <= capacity, "{cap:#}");
            assert!(stdout(&o).contains("held for 6 s"), "{}", stdout(&o));
            ok(o);
        }
        None => {
            assert!(stdout(&o).contains("none confirmed"), "{}", stdout(&o));
            assert_eq!(o.status.code(), Some(1), "no capacity held: exit 1");
        }
    }
}

/// Steps of a short sweep: 1 s of warm-up, 2 s measured, no confirmation, quietly.
const SHORT_STEPS: [&str; 7] = ["--warmup", "1s", "--measure", "2s", "--confirm", "0s", "-q"];

/// No rate met the SLA: every step failed, the search says so and exits 1, and the history
/// records it (the record whose results are under `out`) with no capacity: the history the
/// search was given (`history`), or the lab's own.
fn no_rate_passed_is_reported(
    lab: &Lab,
    o: &std::process::Output,
    cap: &serde_json::Value,
    out: &str,
    history: Option<&str>,
) {
    let steps = cap["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.iter().all(|s| s["pass"] == false), "{cap:#}");
    assert!(cap["capacity"].is_null() && cap["confirmed"].is_null(), "{cap:#}");
    assert!(stdout(o).contains("Capacity: none found"), "{}", stdout(o));
    assert_eq!(o.status.code(), Some(1), "no capacity: exit 1");
    let mut asked = vec!["history", "--json"];
    asked.extend(history.map(|h| ["--history", h]).into_iter().flatten());
    let history: serde_json::Value = serde_json::from_str(&stdout(&ok(lab.caplab(&asked)))).unwrap();
    let search = history.as_array().unwrap().iter().find(|s| {
        let dir = s["last"]["dir"].as_str().unwrap_or_default();
        s["key"]["kind"] == "capacity" && dir.starts_with(out)
    });
    let search = search.unwrap_or_else(|| panic!("the search under {out} is in the history: {history:#}"));
    assert!(search["last"]["figures"]["capacity"].is_null(), "{history:#}");
}

/// A sweep at a rate that cannot meet its SLA (a p50 under 1 µs): no capacity, said so, exit 1.
/// The adaptive search above reaches this only when even 1 op/s fails, so this test asserts it
/// on purpose, not left to a slow sitting.
#[test]
fn a_sweep_where_no_rate_meets_the_sla_says_so() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let out = lab.home.join("none").to_str().unwrap().to_string();
    let asked = [
        "capacity",
        "--hosts",
        hosts,
        "--rates",
        "200",
        "--sla",
        "p50<1us/1s",
        "--out",
        &out,
    ];
    let o = lab.caplab(&[&asked[..], &SHORT_STEPS].concat());
    let cap = result_json_named(Path::new(&out), "capacity.json");
    no_rate_passed_is_reported(lab, &o, &cap, &out, None);
}

/// A sweep, as E3: each rate twice, priced. Short steps with a loose SLA: p99 under 2 s, as
/// what is tested is the pricing and the pages (a tighter one failed at 1,000 op/s beside another
/// test file's nodes: bench/results/test-margins.md, capacity-sweep-sla). Into the default
/// (relative) results directory: every step still gets its page, linked from the search's.
#[test]
fn a_sweep_prices_capacity_and_a_fresh_node_is_restarted() {
    let _jvm = jvm_lock();
    let lab = node();
    let hosts = &lab.cql();
    let dir = |name: &str| lab.home.join(name).to_str().unwrap().to_string();
    let quick = [&["capacity", "--sla", "p99<2s/2s"][..], &SHORT_STEPS].concat();
    let priced = [
        "--rates",
        "500,1k",
        "--repeats",
        "2",
        "--cost",
        "0.576/h",
        "--nodes",
        "3",
        "--target",
        "10k",
    ];
    // The default results directory, under the working directory, starts empty (a retry finds
    // its first try's).
    let _ = std::fs::remove_dir_all(lab.home.join("caplab-results"));
    let o = lab
        .spawn(&Args::new(&[&quick[..], &priced, &["--hosts", hosts]].concat()))
        .wait_with_output()
        .unwrap();
    let o = ok(o);
    let results: Vec<_> = std::fs::read_dir(lab.home.join("caplab-results"))
        .expect("the default results directory, under the working directory")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    let sweep = &results[0];
    let cap = result_json_named(sweep, "capacity.json");
    let said = stdout(&o);
    assert_eq!(cap["mode"], "sweep");
    // Each rate runs until a repeat fails (a 2 s step at 1,000 op/s on a loaded machine may fall
    // short of 97 % of its rate): the steps are the repeats each rate ran, and what is priced is
    // the highest rate that passed both.
    let rates = cap["rates"].as_array().unwrap();
    let ran: u64 = rates.iter().map(|r| r["repeats_run"].as_u64().unwrap()).sum();
    assert_eq!(rates.len(), 2, "{said}");
    assert_eq!(cap["steps"].as_array().unwrap().len() as u64, ran, "{said}");
    let capacity = cap["capacity"]
        .as_f64()
        .unwrap_or_else(|| panic!("500 op/s within a 2 s p99 passes: {said}"));
    let passed = rates
        .iter()
        .filter(|r| r["pass"] == true)
        .map(|r| r["rate"].as_f64().unwrap());
    assert_eq!(passed.reduce(f64::max), Some(capacity), "{cap:#}");
    assert!(!stderr(&o).contains("no report page"), "{}", stderr(&o));
    // (The page escapes the links' slashes, as HTML allows.)
    let page = std::fs::read_to_string(sweep.join("report.html"))
        .unwrap()
        .replace("&#x2f;", "/");
    for s in cap["steps"].as_array().unwrap() {
        let step = s["dir"].as_str().unwrap();
        assert!(step.starts_with("steps/"), "named from the search's directory: {step}");
        assert!(sweep.join(step).join("report.html").is_file(), "a page for {step}");
        assert!(
            page.contains(&format!("href=\"{step}/report.html\"")),
            "a link to {step}"
        );
    }
    // The sweep's highest rate passing makes the capacity a lower bound (and so does a rate
    // above it that failed by the client's doing, not the node's).
    let top = capacity == 1000.0;
    let lower_bound = cap["at_least"].as_bool().unwrap();
    assert!(lower_bound || !top, "{cap:#}");
    let at_least = if lower_bound { "at least " } else { "" };
    assert!(
        said.contains(&format!(
            "Capacity: {at_least}{} op/s",
            if top { "1,000" } else { "500" }
        )),
        "{said}"
    );
    // 3 nodes at 0.576/h carry `capacity` op/s: 1.728/h per `capacity`, 10k op/s needs
    // 10,000 / (capacity / 3) nodes.
    let nodes = (30_000.0 / capacity).ceil();
    assert_eq!(cap["cost"]["nodes_for_target"].as_f64(), Some(nodes));
    let per_1k = format!("{:.4}/h per 1k op/s of capacity", 1728.0 / capacity);
    assert!(
        said.contains(&format!("{per_1k}; 10,000 op/s needs {nodes:.0} nodes")),
        "{said}"
    );

    // --fresh-node wipes and restarts the node before the step.
    let pid = |status: &str| {
        let mut lines = status.lines();
        let column = lines.next()?.split_whitespace().position(|h| h == "PID")?;
        lines.next()?.split_whitespace().nth(column).map(str::to_string)
    };
    let before = pid(&stdout(&ok(lab.caplab(&["node", "status"]))));
    let fresh = dir("fresh");
    ok(lab.caplab(&[&quick[..], &["--rates", "500", "--fresh-node", "--out", &fresh]].concat()));
    let after = pid(&stdout(&ok(lab.caplab(&["node", "status"]))));
    assert!(
        before.is_some() && before != after,
        "restarted: {before:?} -> {after:?}"
    );
    assert_eq!(
        result_json_named(&lab.home.join("fresh"), "capacity.json")["capacity"].as_f64(),
        Some(500.0)
    );

    // --curve: the probe's flat-out throughput, then 4 rates spread evenly up to it, each a
    // point of the latency–throughput curve with its knee named, on the page too.
    let curve = dir("curve");
    let o = ok(lab.caplab(&[&quick[..], &["--hosts", hosts, "--curve", "4", "--out", &curve]].concat()));
    let cap = result_json_named(&lab.home.join("curve"), "capacity.json");
    let ceiling = cap["probe"]["achieved_rate"].as_f64().unwrap();
    let rates: Vec<f64> = cap["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate"].as_f64().unwrap())
        .collect();
    let spread: Vec<f64> = (1..=4).map(|i| (ceiling * i as f64 / 4.0).round()).collect();
    assert_eq!(rates, spread, "every rate runs, failing or not: {cap:#}");
    assert!(
        cap["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["response"]["p99_ms"].as_f64() > Some(0.0)),
        "each step keeps its point: {cap:#}"
    );
    assert_eq!(cap["curve"], true);
    let knee = &cap["knee"];
    let named = |k: &str| knee[k].as_f64().is_none_or(|r| rates.contains(&r));
    assert!(
        knee["base_rate"].as_f64() == Some(rates[0]) && named("held_rate") && named("broke_rate"),
        "{knee}"
    );
    assert!(stdout(&o).contains("Knee "), "{}", stdout(&o));
    let page = std::fs::read_to_string(lab.home.join("curve").join("report.html")).unwrap();
    assert!(page.contains("id=\"chart-curve\""), "the curve's chart");
}

fn result_json_named(dir: &Path, name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(name)).expect(name)).expect("valid JSON")
}
