//! capacity.json: what a capacity search records, step by step, and the table it prints.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use super::plan::RateResult;
use crate::console::group;
use crate::measure::phases::{Knee, KneeRule, ShapePart, knee};
use crate::measure::result::{CAPACITY_FILE, RunResult, RunStatus};
use crate::metrics::summary::Latency;
use crate::sla::Sla;

/// One step as capacity.json records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchStep {
    pub rate: f64,
    pub repeat: u32,
    pub pass: bool,
    pub status: RunStatus,
    pub achieved_rate: f64,
    /// The largest value of each objective over the step's windows.
    pub worst_ms: BTreeMap<String, Option<f64>>,
    pub windows_judged: usize,
    pub windows_failed: usize,
    /// Why the first failing window failed.
    pub reasons: Vec<String>,
    /// The step's results directory, relative to the search's (`steps/07-5840-r1`).
    pub dir: String,
    /// Its measured window's steady-state class, and whether it was steady (None: not judged).
    #[serde(rename = "window", default, skip_serializing_if = "Option::is_none")]
    pub steady_class: Option<crate::steady::Class>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<bool>,
    /// With faults (`--fault`): the window's availability (successful share of due
    /// operations) and its faults' longest recovery in seconds (one not recovered counts as
    /// the rest of the window: a lower bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    /// Whether every fault recovered within the window (None: no faults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<bool>,
    /// Response time over the measured window (every due operation): the step's point on the
    /// latency–throughput curve (None in searches recorded before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Latency>,
    /// Why a failure was the client's rather than the cluster's (`measure::audit`: the client
    /// made every failing window fail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_bound: Option<String>,
    /// Why a failure was the shared machine's (client and nodes on the same cores): a failure
    /// all the same, which no capacity excuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_bound: Option<String>,
}

impl SearchStep {
    pub fn of(rate: f64, repeat: u32, r: &RunResult, dir: &Path) -> SearchStep {
        let verdict = r.sla.as_ref();
        SearchStep {
            rate,
            repeat,
            pass: r.status == RunStatus::Completed && verdict.is_some_and(|v| v.pass),
            status: r.status,
            achieved_rate: r.achieved_rate(),
            worst_ms: verdict
                .map(|v| v.objectives.iter().map(|o| (o.objective.clone(), o.worst_ms)).collect())
                .unwrap_or_default(),
            windows_judged: verdict.map_or(0, |v| v.windows_judged),
            windows_failed: verdict.map_or(0, |v| v.windows_failed),
            reasons: verdict
                .and_then(|v| v.windows.iter().find(|w| w.judged && !w.pass))
                .map(|w| w.reasons.clone())
                .unwrap_or_default(),
            dir: dir.display().to_string(),
            steady_class: r.steady_state.as_ref().and_then(|v| v.class),
            steady: r.steady_state.as_ref().map(|v| v.steady),
            availability: r.availability,
            recovery_s: r.longest_recovery(),
            recovered: (!r.faults.is_empty()).then(|| r.faults.iter().all(|f| f.recover_s.is_some())),
            response: r.summary.as_ref().map(|s| s.total.response.clone()),
            client_bound: verdict.and_then(|v| v.client_bound.clone()),
            machine_bound: verdict.and_then(|v| v.machine_bound.clone()),
        }
    }

    /// One line: achieved rate, each objective's worst window, the verdict.
    pub fn describe(&self) -> String {
        let worst: Vec<String> = self
            .worst_ms
            .iter()
            .map(|(o, ms)| match ms {
                Some(ms) => format!("{} max {ms:.2} ms", o.split('<').next().unwrap_or(o)),
                None => format!("{o}: no data"),
            })
            .collect();
        let verdict = if self.pass {
            "PASS".to_string()
        } else {
            let bound = match (&self.client_bound, &self.machine_bound) {
                (Some(why), _) => format!("; CLIENT-BOUND: {why}"),
                (None, Some(why)) => format!("; MACHINE-BOUND (a failure all the same): {why}"),
                (None, None) => String::new(),
            };
            format!("FAIL ({}{bound})", self.reasons.join("; "))
        };
        let faults = match (self.availability, self.recovered, self.recovery_s) {
            (Some(a), Some(true), Some(r)) => format!(", availability {:.2} %, recovered in {r:.1} s", a * 100.0),
            (Some(a), Some(false), _) => format!(", availability {:.2} %, NOT RECOVERED by the end", a * 100.0),
            (Some(a), _, _) => format!(", availability {:.2} %", a * 100.0),
            _ => String::new(),
        };
        format!(
            "{} op/s achieved, {}{faults}  {verdict}{}",
            group(self.achieved_rate),
            worst.join(", "),
            match (self.steady, self.steady_class) {
                (Some(false), Some(c)) => format!("  (window {}: NOT STEADY)", c.name()),
                (Some(false), None) => "  (warm-up did not settle: NOT STEADY)".to_string(),
                _ => String::new(),
            }
        )
    }
}

/// What the capacity found costs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cost {
    pub price_per_node_hour: f64,
    pub nodes: usize,
    pub cluster_per_hour: f64,
    pub per_1k_ops_per_hour: f64,
    pub target_rate: Option<f64>,
    pub nodes_for_target: Option<f64>,
}

/// capacity.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityResult {
    pub caplab_version: String,
    pub command: Vec<String>,
    pub status: RunStatus,
    /// Why a search that failed failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// The signal that interrupted the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    pub workload: String,
    pub sla: Sla,
    pub mode: String,
    pub precision: Option<f64>,
    /// Each step's warm-up as asked (`auto (max 5m)`, `30s`).
    #[serde(default)]
    pub warmup: String,
    /// A timed warm-up's length (None for an automatic one: see each step's result).
    pub warmup_s: Option<f64>,
    pub measure_s: f64,
    pub repeats: u32,
    pub fresh_node: bool,
    /// The fault schedule every step carried (`--fault`), as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
    pub probe: Option<SearchStep>,
    pub steps: Vec<SearchStep>,
    pub rates: Vec<RateResult>,
    /// The highest rate that passed every repeat of the search.
    pub capacity: Option<f64>,
    /// No rate above the capacity failed (the search or sweep never found the limit): the
    /// capacity is at least that.
    #[serde(default)]
    pub at_least: bool,
    /// The confirmation window (`--confirm`), when the capacity was confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_s: Option<f64>,
    /// The confirmation steps: the capacity held for the window, then lower rates that had
    /// passed, until one held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmation: Vec<SearchStep>,
    /// The rate that held for the confirmation window (None: none did, or not confirmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<f64>,
    pub highest_achieved_rate: f64,
    pub bracket: Option<String>,
    pub stopped_early: Option<String>,
    pub cost: Option<Cost>,
    pub started_at: String,
    pub elapsed_s: f64,
    /// The user's labels (`--label KEY=VALUE`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, String>,
    /// Whether the steps are drawn as a latency–throughput curve (`--curve`), and its knee.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub curve: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
    /// A replay's mean rate at the pace it was captured: a rate is that many times its speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_rate: Option<f64>,
}

impl CapacityResult {
    /// When the lowest failed rate above the capacity failed because of the client (it made
    /// every failing window fail), not the cluster, the capacity may be the client's limit: it is
    /// said to be a lower bound, with why. When it failed with the client and nodes on the same
    /// saturated cores, the machine was the limit: a failure all the same, said so, and the
    /// capacity stays what it is (this machine's, with caplab on it). The search itself goes on as
    /// planned (on shared cores an overloaded server makes the client late too, so stopping at
    /// the first such step would stop at every overload).
    pub fn mark_client_bound(&mut self) {
        let cap = self.capacity.unwrap_or(0.0);
        let Some(lowest) = self
            .steps
            .iter()
            .filter(|s| !s.pass && s.rate > cap)
            .map(|s| s.rate)
            .min_by(f64::total_cmp)
        else {
            return;
        };
        let failed = || self.steps.iter().filter(|s| s.rate == lowest && !s.pass);
        let note = if let Some(why) = failed().find_map(|s| s.client_bound.clone()) {
            self.at_least = self.capacity.is_some();
            format!(
                "the client was the limit at {} op/s, the lowest rate that failed ({why}): the cluster's capacity may be higher",
                group(lowest)
            )
        } else if let Some(why) = failed().find_map(|s| s.machine_bound.clone()) {
            format!(
                "the machine was the limit at {} op/s, the lowest rate that failed ({why}): the capacity is this machine's with caplab on it",
                group(lowest)
            )
        } else {
            return;
        };
        self.stopped_early = Some(match self.stopped_early.take() {
            Some(other) => format!("{other}; {note}"),
            None => note,
        });
    }

    /// The process exit code: 0 a capacity was found, 1 none (or the cluster failed), 130
    /// interrupted.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            RunStatus::Completed if self.held().is_some() => 0,
            RunStatus::Completed => 1,
            RunStatus::Interrupted => crate::measure::signal::exit_code(self.interrupted_by.as_deref()),
            s => s.exit_code(),
        }
    }

    /// The capacity as it stands: the confirmed rate when the search confirmed it (None when no
    /// rate held), else the search's capacity.
    pub fn held(&self) -> Option<f64> {
        if self.confirm_s.is_some() {
            self.confirmed
        } else {
            self.capacity
        }
    }

    /// The capacity line: `16,000 op/s, held for 2m`, `at least 1,000 op/s`, or why there is none.
    pub fn capacity_text(&self) -> String {
        let at_least = if self.at_least { "at least " } else { "" };
        let speed = |c: f64| match self.replay_rate {
            Some(r) if r > 0.0 => format!(", {:.2}x the captured pace", c / r),
            _ => String::new(),
        };
        let found = |c: f64| format!("{at_least}{} op/s{}", group(c), speed(c));
        match (self.capacity, self.confirm_s, self.confirmed) {
            (None, _, _) => "none found: no rate tried met the SLA".into(),
            (Some(c), None, _) => format!("{} (the highest rate that passed every repeat)", found(c)),
            (Some(c), Some(w), Some(h)) if h == c => format!("{}, confirmed: held for {w:.0} s", found(c)),
            (Some(c), Some(w), Some(h)) => format!(
                "{} (held for {w:.0} s; the search found {} op/s, which did not hold)",
                found(h),
                group(c)
            ),
            (Some(c), Some(w), None) => format!(
                "none confirmed: the search found {} op/s, and neither it nor the rates below that passed held for \
                 {w:.0} s",
                group(c)
            ),
        }
    }

    /// The steps (not the probe, nor the confirmation) as points of a latency–throughput
    /// curve: each completed step that kept its response times, at its rate asked and achieved.
    pub fn curve_parts(&self) -> Vec<ShapePart> {
        self.steps
            .iter()
            .filter(|s| s.status == RunStatus::Completed)
            .filter_map(|s| {
                Some(ShapePart {
                    from_s: 0.0,
                    to_s: self.measure_s,
                    target_rate: s.rate,
                    achieved_rate: s.achieved_rate,
                    response: s.response.clone()?,
                    steady: s.steady_class,
                })
            })
            .collect()
    }

    /// Names the knee of the steps' curve by `rule` (None: fewer than two rates).
    pub fn find_knee(&mut self, rule: KneeRule) {
        self.curve = true;
        self.knee = knee(&self.curve_parts(), rule.percentile, rule.factor);
    }

    pub fn load(dir: &Path) -> Result<CapacityResult> {
        let file = dir.join(CAPACITY_FILE);
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a capacity search caplab can read", file.display()))
    }

    /// The end-of-search text: E3's table, the capacity, the highest throughput, the cost.
    pub fn render(&self) -> String {
        let objectives: Vec<String> = self.sla.objectives.iter().map(|o| o.text()).collect();
        let mut s = format!("Capacity search, SLA {} ({})\n", self.sla.text(), self.mode);
        if !self.faults.is_empty() {
            s.push_str(&format!("Every step carried the faults: {}\n", self.faults.join("; ")));
        }
        s.push_str(&format!("{:>12}  {:>6}  {:>12}", "rate op/s", "repeat", "achieved"));
        for o in &self.sla.objectives {
            s.push_str(&format!("  {:>14}", format!("{} max", o.label)));
        }
        s.push_str("  verdict\n");
        let confirming = self.steps.len();
        for (i, st) in self.steps.iter().chain(&self.confirmation).enumerate() {
            s.push_str(&format!(
                "{:>12}  {:>6}  {:>12}",
                group(st.rate),
                st.repeat,
                group(st.achieved_rate)
            ));
            for o in &objectives {
                match st.worst_ms.get(o).copied().flatten() {
                    Some(ms) => s.push_str(&format!("  {:>11.2} ms", ms)),
                    None => s.push_str(&format!("  {:>14}", "-")),
                }
            }
            s.push_str(if st.pass { "  pass" } else { "  FAIL" });
            if i >= confirming {
                s.push_str(" (confirmation)");
            }
            if let Some(a) = st.availability {
                s.push_str(&format!("  availability {:.2} %", a * 100.0));
                match (st.recovered, st.recovery_s) {
                    (Some(true), Some(r)) => s.push_str(&format!(", recovered in {r:.1} s")),
                    (Some(false), _) => s.push_str(", not recovered"),
                    _ => {}
                }
            }
            if st.steady == Some(false) {
                s.push_str(&format!(
                    " (not steady: {})",
                    st.steady_class.map_or("warm-up did not settle", |c| c.name())
                ));
            }
            s.push('\n');
        }
        match (self.status, self.capacity) {
            (RunStatus::Running | RunStatus::Interrupted | RunStatus::Failed, _) => s.push_str(&format!(
                "Capacity: not decided: the search {} after {} step(s)\n",
                match (self.status, &self.interrupted_by) {
                    (RunStatus::Failed, _) => "failed".to_string(),
                    (_, Some(sig)) => format!("was interrupted ({sig})"),
                    _ => "did not finish".to_string(),
                },
                self.steps.len() + usize::from(self.probe.is_some())
            )),
            _ => s.push_str(&format!("Capacity: {}\n", self.capacity_text())),
        }
        if let Some(why) = &self.stopped_early {
            s.push_str(&format!("Note: {why}\n"));
        }
        if let Some(k) = &self.knee {
            s.push_str(&k.render());
        }
        s.push_str(&format!(
            "Highest throughput achieved (any SLA): {} op/s\n",
            group(self.highest_achieved_rate)
        ));
        if let Some(c) = &self.cost {
            s.push_str(&format!(
                "Cost: {} nodes x {}/h = {:.3}/h; {:.4}/h per 1k op/s of capacity",
                c.nodes, c.price_per_node_hour, c.cluster_per_hour, c.per_1k_ops_per_hour
            ));
            if let (Some(t), Some(n)) = (c.target_rate, c.nodes_for_target) {
                s.push_str(&format!("; {} op/s needs {n:.0} nodes", group(t)));
            }
            s.push('\n');
        }
        s.push_str(&format!("Search took {:.0}s", self.elapsed_s));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step() -> SearchStep {
        SearchStep {
            rate: 5_000.0,
            repeat: 1,
            pass: true,
            status: RunStatus::Completed,
            achieved_rate: 5_000.0,
            worst_ms: Default::default(),
            windows_judged: 1,
            windows_failed: 0,
            reasons: Vec::new(),
            dir: "steps/5000".into(),
            steady_class: None,
            steady: None,
            availability: None,
            recovery_s: None,
            recovered: None,
            response: None,
            client_bound: None,
            machine_bound: None,
        }
    }

    #[test]
    fn the_steps_are_a_curve_whose_knee_is_named_like_a_ramp_s() {
        let mut doc: CapacityResult = serde_json::from_value(serde_json::json!({
            "caplab_version": "0", "command": [], "status": "completed", "workload": "insert",
            "sla": {"objectives": [], "min_rate_share": 0.97, "error_budget": 0.001},
            "mode": "sweep", "precision": null, "warmup_s": 0.0, "measure_s": 30.0, "repeats": 1,
            "fresh_node": false, "probe": null, "steps": [], "rates": [], "capacity": null,
            "highest_achieved_rate": 0.0, "bracket": null, "stopped_early": null, "cost": null,
            "started_at": "", "elapsed_s": 0.0
        }))
        .unwrap();
        // p99 1 ms up to 3,000 op/s, 9 ms from 4,000: the knee lies between them. A step
        // that did not complete is no point; one without response times (an older file) neither.
        for (rate, p99, status) in [
            (1_000.0, 1.0, RunStatus::Completed),
            (2_000.0, 1.1, RunStatus::Completed),
            (3_000.0, 1.0, RunStatus::Completed),
            (3_500.0, 50.0, RunStatus::Failed),
            (4_000.0, 9.0, RunStatus::Completed),
            (5_000.0, 12.0, RunStatus::Completed),
        ] {
            let mut s = step();
            (s.rate, s.achieved_rate, s.status) = (rate, rate, status);
            s.response = Some(Latency::around_p99(p99));
            doc.steps.push(s);
        }
        doc.steps.push(SearchStep {
            rate: 6_000.0,
            ..step()
        });
        assert_eq!(doc.curve_parts().len(), 5);
        doc.find_knee(KneeRule::default());
        let k = doc.knee.clone().unwrap();
        assert_eq!((k.held_rate, k.broke_rate), (Some(3_000.0), Some(4_000.0)));
        assert!(doc.curve && doc.render().contains("Knee "), "{}", doc.render());
        let back: CapacityResult = serde_json::from_str(&serde_json::to_string(&doc).unwrap()).unwrap();
        assert_eq!(back.knee, doc.knee);
    }

    #[test]
    fn a_step_with_faults_says_its_availability_and_whether_it_recovered() {
        let mut step = step();
        assert!(!step.describe().contains("availability"), "no faults, nothing said");
        step.availability = Some(0.9913);
        step.recovered = Some(true);
        step.recovery_s = Some(4.0);
        assert!(
            step.describe().contains("availability 99.13 %, recovered in 4.0 s"),
            "{}",
            step.describe()
        );
        step.recovered = Some(false);
        assert!(step.describe().contains("NOT RECOVERED"), "{}", step.describe());
    }
}
