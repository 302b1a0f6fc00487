//! What tests/steady.rs and tests/loaders_warmup.rs read from a result's steady-state verdict.

use serde_json::Value;

/// The verdict of series `metric` in a result's steady_state.
pub fn series<'a>(doc: &'a Value, metric: &str) -> &'a Value {
    doc["steady_state"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} verdict in {}", doc["steady_state"]))
}

/// A series' last segment's mean over its first's, in a run's verdict (1: one level).
pub fn climb(doc: &Value, metric: &str) -> f64 {
    let segments = series(doc, metric)["segments"].as_array().unwrap();
    let mean = |s: &Value| s["mean"].as_f64().unwrap();
    mean(&segments[segments.len() - 1]) / mean(&segments[0])
}

/// The window was judged, and steady exactly when flat; one whose throughput moved by a fifth,
/// or whose p50 by a third, in one step (two segments: a level that does not recur) is not
/// judged flat, nor steady.
pub fn names_what_it_did(doc: &Value) {
    let verdict = &doc["steady_state"];
    assert!(verdict["class"].is_string(), "judged: {verdict}");
    for (metric, band) in [("throughput", 0.8..1.2), ("p50", 0.67..1.5)] {
        let segments = series(doc, metric)["segments"].as_array().unwrap().len();
        let c = climb(doc, metric);
        if segments == 2 && !band.contains(&c) {
            assert_ne!(verdict["class"], "flat", "{metric} ×{c:.2} in one step: {verdict}");
            assert_eq!(verdict["steady"], false, "{verdict}");
        }
    }
    assert_eq!(verdict["steady"], verdict["class"] == "flat", "{verdict}");
}
