//! What a fault cost, from the measured seconds: when the client saw it (detection), when it
//! was back to normal (recovery), what failed meanwhile and the share of due operations that
//! succeeded (availability).
//!
//! The rule, with the seconds of the measured window before the first fault as the baseline
//! (at least `MIN_BASELINE` of them): a second is *in band* when its p99 is at most twice the
//! baseline's median p99 plus 1 ms, its successful operations per second at least 85 % of the
//! baseline's median, and at most 1 % of its due operations failed. Detection is the first
//! second from the fault's start (to its end, plus `LAG`) that is out of band, counted from the
//! start. Recovery is the first run of `RECOVERED` consecutive in-band seconds after the fault
//! was undone, counted from the undoing; none ("not recovered") when the window ends first.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::spec::Action;
use crate::metrics::ErrorKind;

/// Baseline seconds needed to judge detection and recovery.
pub const MIN_BASELINE: usize = 3;
/// Consecutive in-band seconds that count as recovered.
pub const RECOVERED: usize = 5;
/// How long after a fault's end its detection may still come (a client timeout's echo).
pub const LAG: f64 = 2.0;

/// One measured second as faults are judged on it (times from the run's anchor).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub at_s: f64,
    pub length_s: f64,
    pub due: u64,
    pub ok: u64,
    pub errors: [u64; ErrorKind::ALL.len()],
    pub p99_ms: Option<f64>,
}

impl Tally {
    fn mid(&self) -> f64 {
        self.at_s + self.length_s / 2.0
    }
    fn failed(&self) -> u64 {
        self.errors.iter().sum()
    }
}

/// What happened to a fault when it ran (times from the run's anchor, in seconds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Happened {
    /// When its schedule said it was due (the measured window's start plus its `at`).
    pub due_s: Option<f64>,
    pub began_s: Option<f64>,
    /// When it was undone (SIGCONT sent, or the node started again).
    pub ended_s: Option<f64>,
    /// When the node answered CQL again (after kill, stop, drain, restart).
    pub back_s: Option<f64>,
    pub error: Option<String>,
}

/// The in-band limits a fault is judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub baseline_seconds: usize,
    pub p99_ms_max: f64,
    pub ok_per_s_min: f64,
    pub failed_share_max: f64,
}

/// Operations over a span of seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Period {
    pub seconds: f64,
    pub due: u64,
    pub ok: u64,
    pub failed: u64,
    /// Failures by kind (`not_sent` among them: operations never sent).
    pub errors: BTreeMap<String, u64>,
    /// Successful share of due operations (None when none were due).
    pub availability: Option<f64>,
}

impl Period {
    fn of<'a>(seconds: impl Iterator<Item = &'a Tally>) -> Period {
        let mut p = Period::default();
        for t in seconds {
            p.seconds += t.length_s;
            p.due += t.due;
            p.ok += t.ok;
            p.failed += t.failed();
            for (k, n) in ErrorKind::ALL.iter().zip(t.errors) {
                if n > 0 {
                    *p.errors.entry(k.name().to_string()).or_insert(0) += n;
                }
            }
        }
        p.availability = (p.due > 0).then(|| p.ok as f64 / p.due as f64);
        p
    }
}

/// One fault in result.json `faults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub fault: String,
    pub action: Action,
    pub node: String,
    /// Seconds into the measured window when it began and was undone (None: not undone
    /// within the window), and when the node answered CQL again.
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    pub back_s: Option<f64>,
    /// Seconds from its start to the first out-of-band second (None: never seen).
    pub detect_s: Option<f64>,
    /// Seconds from its end until `RECOVERED` in-band seconds in a row began (None: not recovered
    /// by the end of the window, or never undone).
    pub recover_s: Option<f64>,
    pub band: Option<Band>,
    /// While it lasted, and from its end to the next fault's start (or the window's end).
    pub during: Period,
    pub after: Period,
    /// Service-level windows that failed from its start until it was recovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sla_windows_failed: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why the fault could not be applied, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FaultRecord {
    pub fn render(&self) -> String {
        let s = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1} s"));
        let avail = |p: &Period| p.availability.map_or("–".into(), |a| format!("{:.2} %", a * 100.0));
        let errors = |p: &Period| {
            if p.errors.is_empty() {
                "none".to_string()
            } else {
                p.errors
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let mut out = format!(
            "Fault '{}': from {} to {}; detected after {}, recovered {}\n  during: availability {}, failures {}\n  after:  availability {}, failures {}",
            self.fault,
            s(self.start_s),
            s(self.end_s),
            s(self.detect_s),
            match (self.recover_s, self.end_s) {
                (Some(r), _) => format!("{r:.1} s after its end"),
                (None, Some(_)) => "NOT by the end of the window".into(),
                (None, None) => "– (it lasted to the end)".into(),
            },
            avail(&self.during),
            errors(&self.during),
            avail(&self.after),
            errors(&self.after),
        );
        if let Some(n) = self.sla_windows_failed {
            out.push_str(&format!("\n  service-level windows failed: {n}"));
        }
        for line in self.note.iter().chain(&self.error) {
            out.push_str(&format!("\n  {line}"));
        }
        out
    }
}

/// Seconds a fault may begin after its time before its record says so: a blocking call or a
/// starved client that holds caplab's process up moves the fault, and what it is judged against.
pub const LATE_S: f64 = 1.0;

/// Why a fault began later than its schedule said, when it did.
fn late(h: &Happened, began: f64) -> Option<String> {
    let late = began - h.due_s?;
    (late > LATE_S).then(|| {
        format!(
            "began {late:.1} s after its time (more than {LATE_S} s): caplab's process was held up, or an \
             upgrade before it was still under way; its figures are from when it began"
        )
    })
}

/// Seconds to the millisecond (what the clocks measure), so results read 5.3, not 5.300000000000001.
fn ms(s: f64) -> f64 {
    (s * 1e3).round() / 1e3
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The band from the seconds before `first_start` (from the anchor).
fn band(tallies: &[Tally], first_start: f64) -> Option<Band> {
    let base: Vec<&Tally> = tallies
        .iter()
        .filter(|t| t.at_s + t.length_s <= first_start + 1e-6)
        .collect();
    if base.len() < MIN_BASELINE {
        return None;
    }
    let p99 = median(base.iter().filter_map(|t| t.p99_ms).collect())?;
    let ok = median(base.iter().map(|t| t.ok as f64 / t.length_s.max(1e-3)).collect())?;
    Some(Band {
        baseline_seconds: base.len(),
        p99_ms_max: 2.0 * p99 + 1.0,
        ok_per_s_min: 0.85 * ok,
        failed_share_max: 0.01,
    })
}

fn in_band(t: &Tally, b: &Band) -> bool {
    let p99_ok = t.p99_ms.is_none_or(|p| p <= b.p99_ms_max);
    let rate_ok = t.ok as f64 / t.length_s.max(1e-3) >= b.ok_per_s_min;
    let failed_ok = t.due == 0 || (t.failed() as f64 / t.due as f64) <= b.failed_share_max;
    p99_ok && rate_ok && failed_ok
}

/// Judges each fault (in `faults`, with what `happened`) on the measured `tallies`; times are
/// from the anchor, the measured window is `[window_from, window_to]`. `failed_windows` are the
/// service-level windows that failed, as spans from the anchor.
pub fn assess(
    faults: &[(String, Action, String, Happened)],
    tallies: &[Tally],
    (window_from, window_to): (f64, f64),
    failed_windows: Option<&[(f64, f64)]>,
) -> Vec<FaultRecord> {
    let first_start = faults.iter().filter_map(|f| f.3.began_s).fold(f64::INFINITY, f64::min);
    let band = band(tallies, first_start);
    let starts: Vec<f64> = faults.iter().filter_map(|f| f.3.began_s).collect();
    faults
        .iter()
        .map(|(text, action, node, h)| {
            let rel = |v: Option<f64>| v.map(|v| ms(v - window_from));
            let mut r = FaultRecord {
                fault: text.clone(),
                action: *action,
                node: node.clone(),
                start_s: rel(h.began_s),
                end_s: rel(h.ended_s.filter(|e| *e <= window_to)),
                back_s: rel(h.back_s.filter(|e| *e <= window_to)),
                detect_s: None,
                recover_s: None,
                band: band.clone(),
                during: Period::default(),
                after: Period::default(),
                sla_windows_failed: None,
                note: None,
                error: h.error.clone(),
            };
            let Some(start) = h.began_s else {
                return r;
            };
            r.note = late(h, start);
            let end = h.ended_s.filter(|e| *e <= window_to);
            let until = end.unwrap_or(window_to);
            r.during = Period::of(tallies.iter().filter(|t| t.mid() >= start && t.mid() < until));
            if let Some(end) = end {
                let next = starts.iter().copied().filter(|s| *s > start).fold(window_to, f64::min);
                r.after = Period::of(tallies.iter().filter(|t| t.mid() >= end && t.mid() < next));
            }
            let Some(b) = &band else {
                r.note = Some(r.note.take().map_or_else(String::new, |n| n + "; ") + &format!(
                    "fewer than {MIN_BASELINE} measured seconds before the first fault: no baseline to judge detection \
                     and recovery against (start the fault later)"
                ));
                return r;
            };
            r.detect_s = tallies
                .iter()
                .filter(|t| t.at_s + t.length_s > start && t.at_s < until + LAG)
                .find(|t| !in_band(t, b))
                .map(|t| ms((t.at_s - start).max(0.0)));
            if let Some(end) = end {
                let after: Vec<&Tally> = tallies.iter().filter(|t| t.at_s + t.length_s > end).collect();
                r.recover_s = (0..after.len())
                    .find(|&i| after.len() - i >= RECOVERED && after[i..i + RECOVERED].iter().all(|t| in_band(t, b)))
                    .map(|i| ms((after[i].at_s - end).max(0.0)));
            }
            if let Some(failed) = failed_windows {
                let to = match (end, r.recover_s) {
                    (Some(e), Some(rec)) => e + rec,
                    _ => window_to,
                };
                r.sla_windows_failed = Some(failed.iter().filter(|(a, z)| *a < to && *z > start).count());
            }
            r
        })
        .collect()
}

/// Successful share of every due operation in the measured window.
pub fn availability(tallies: &[Tally]) -> Option<f64> {
    Period::of(tallies.iter()).availability
}

/// The `Upgrades` line: when each upgraded node came back on its version, and when the cluster
/// ran more than one version. `nodes` are the cluster's nodes with their versions when the run
/// began, where caplab runs them; a node upgraded but not among them (all of them, for a
/// cluster caplab does not run, whose other nodes it cannot see: the line then says it counts
/// only the nodes named) is taken to have run `start`, the cluster's version then ("?" if
/// unknown). Each runs its version until its upgrade is done. None without upgrades.
pub fn mixed_versions(faults: &[FaultRecord], start: Option<&str>, nodes: &[(String, String)]) -> Option<String> {
    let ups: Vec<&FaultRecord> = faults.iter().filter(|f| f.action == Action::Upgrade).collect();
    if ups.is_empty() {
        return None;
    }
    let version = |f: &FaultRecord| f.fault.rsplit(' ').next().unwrap_or("?").to_string();
    let each: Vec<String> = ups
        .iter()
        .map(|f| match f.back_s {
            Some(b) => format!("{} on {} at {b:.1} s", f.node, version(f)),
            None => format!("{} not back on {} by the end", f.node, version(f)),
        })
        .collect();
    let mut running: std::collections::BTreeMap<&str, String> =
        nodes.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    for f in &ups {
        running
            .entry(f.node.as_str())
            .or_insert_with(|| start.unwrap_or("?").to_string());
    }
    let mut done: Vec<(f64, &str, String)> = ups
        .iter()
        .filter_map(|f| Some((f.back_s?, f.node.as_str(), version(f))))
        .collect();
    done.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut periods, mut since) = (Vec::new(), None);
    for (at, node, v) in done {
        running.insert(node, v);
        let mixed = running.values().collect::<std::collections::BTreeSet<_>>().len() > 1;
        match (mixed, since) {
            (true, None) => since = Some(at),
            (false, Some(from)) => {
                periods.push(format!("from {from:.1} s to {at:.1} s"));
                since = None;
            }
            _ => {}
        }
    }
    if let Some(from) = since {
        periods.push(format!("from {from:.1} s to the end"));
    }
    let period = match periods.is_empty() {
        true => "; one version at a time".to_string(),
        false => format!("; mixed versions {}", periods.join(", ")),
    };
    let seen = if nodes.is_empty() {
        " (of the nodes named here)"
    } else {
        ""
    };
    Some(format!(
        "Upgrades                      : {}{period}{seen}",
        each.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rolling_upgrade_says_when_each_node_came_back_and_how_long_versions_were_mixed() {
        let up = |node: &str, back: Option<f64>| FaultRecord {
            fault: format!("upgrade {node} at 5s to 6.0-alpha2"),
            action: Action::Upgrade,
            node: node.into(),
            start_s: Some(5.0),
            end_s: Some(9.0),
            back_s: back,
            detect_s: None,
            recover_s: None,
            band: None,
            during: Period::default(),
            after: Period::default(),
            sla_windows_failed: None,
            note: None,
            error: None,
        };
        let three: Vec<(String, String)> = ["node1", "node2", "node3"]
            .map(|n| (n.to_string(), "5.0.9".to_string()))
            .to_vec();
        let start = Some("5.0.9");
        assert_eq!(mixed_versions(&[], start, &three), None);
        let line = |ups: &[FaultRecord], nodes: &[(String, String)]| mixed_versions(ups, start, nodes).unwrap();
        assert_eq!(
            line(
                &[
                    up("node1", Some(30.0)),
                    up("node2", Some(75.5)),
                    up("node3", Some(120.0))
                ],
                &three
            ),
            "Upgrades                      : node1 on 6.0-alpha2 at 30.0 s, node2 on 6.0-alpha2 at 75.5 s, \
             node3 on 6.0-alpha2 at 120.0 s; mixed versions from 30.0 s to 120.0 s"
        );
        // node3 never upgraded, node2 not back: mixed until the end.
        assert!(
            line(&[up("node1", Some(30.0)), up("node2", None)], &three)
                .ends_with("node2 not back on 6.0-alpha2 by the end; mixed versions from 30.0 s to the end")
        );
        // One node there and back: never two versions at once.
        let mut back = up("node1", Some(83.5));
        back.fault = "upgrade node1 at 70s to 5.0.9".into();
        assert!(
            line(&[up("node1", Some(19.1)), back], &three[..1])
                .ends_with("node1 on 5.0.9 at 83.5 s; one version at a time")
        );
        // A cluster caplab does not run: only the nodes named are counted, and it says so.
        assert!(line(&[up("node1", Some(30.0))], &[]).ends_with("one version at a time (of the nodes named here)"));
    }

    /// Seconds 0..n from the anchor at `rate`, p99 1 ms, all successful.
    fn calm(n: usize, rate: u64) -> Vec<Tally> {
        (0..n)
            .map(|i| Tally {
                at_s: i as f64,
                length_s: 1.0,
                due: rate,
                ok: rate,
                p99_ms: Some(1.0),
                ..Tally::default()
            })
            .collect()
    }

    fn happened(began: f64, ended: f64) -> Happened {
        Happened {
            began_s: Some(began),
            ended_s: Some(ended),
            ..Happened::default()
        }
    }

    #[test]
    fn a_pause_is_detected_when_latency_leaves_the_band_and_recovered_after_five_calm_seconds() {
        let mut t = calm(30, 1000);
        // Paused from 10.3 to 13.3 s: the operations due meanwhile wait (p99 3 s), a few time
        // out; then two slow seconds while the backlog drains.
        for (i, p99) in [
            (10, 400.0),
            (11, 1500.0),
            (12, 2500.0),
            (13, 3000.0),
            (14, 30.0),
            (15, 5.0),
        ] {
            t[i].p99_ms = Some(p99);
        }
        t[12].ok = 0;
        t[12].errors[ErrorKind::ClientTimeout as usize] = 40;
        t[12].due = 1000;
        let faults = vec![(
            "pause node1 at 5.3s for 3s".to_string(),
            Action::Pause,
            "node1".to_string(),
            happened(10.3, 13.3),
        )];
        let r = &assess(&faults, &t, (5.0, 30.0), Some(&[(10.0, 20.0), (20.0, 30.0)][..]))[0];
        assert_eq!((r.start_s, r.end_s), (Some(5.3), Some(8.3)));
        assert_eq!(r.detect_s, Some(0.0), "the second it began in is out of band");
        // 14 and 15 still out of band (p99 30 ms and 5 ms > 2 x 1 + 1 ms); 16..20 in band.
        assert_eq!(r.recover_s, Some(2.7), "{r:?}");
        let b = r.band.as_ref().unwrap();
        assert_eq!((b.baseline_seconds, b.p99_ms_max, b.ok_per_s_min), (10, 3.0, 850.0));
        assert_eq!(r.during.errors["client_timeout"], 40);
        assert_eq!(r.during.due, 3000, "seconds 10, 11, 12 have their middles inside");
        assert!((r.during.availability.unwrap() - 2000.0 / 3000.0).abs() < 1e-9);
        assert_eq!(r.after.availability, Some(1.0));
        assert_eq!(r.sla_windows_failed, Some(1), "the window of 10-20 s only");
        assert!(r.render().contains("recovered 2.7 s after its end"), "{}", r.render());
    }

    #[test]
    fn a_fault_that_began_late_says_by_how_much() {
        let t = calm(30, 1000);
        let at = |due: f64, began: f64| Happened {
            due_s: Some(due),
            ..happened(began, began + 5.0)
        };
        let faults = vec![
            (
                "pause node2 at 8s for 5s".into(),
                Action::Pause,
                "node2".into(),
                at(8.0, 13.4),
            ),
            (
                "pause node3 at 20s for 5s".into(),
                Action::Pause,
                "node3".into(),
                at(20.0, 20.9),
            ),
        ];
        let r = assess(&faults, &t, (0.0, 30.0), None);
        let note = r[0].note.as_deref().unwrap_or_default();
        assert!(note.starts_with("began 5.4 s after its time"), "{note}");
        assert!(r[0].render().contains(note), "{}", r[0].render());
        assert_eq!(r[1].note, None, "0.9 s late is within {LATE_S} s");
    }

    #[test]
    fn a_fault_never_undone_or_never_left_is_said_so() {
        let mut t = calm(20, 1000);
        for x in &mut t[8..] {
            x.ok = 0;
            x.errors[ErrorKind::Unavailable as usize] = 1000;
        }
        let kill = Happened {
            began_s: Some(8.0),
            ..Happened::default()
        };
        let r = &assess(
            &[("kill node2 at 8s".into(), Action::Kill, "node2".into(), kill)],
            &t,
            (0.0, 20.0),
            None,
        )[0];
        assert_eq!((r.detect_s, r.end_s, r.recover_s), (Some(0.0), None, None));
        assert!(r.render().contains("it lasted to the end"), "{}", r.render());
        assert_eq!(r.during.availability, Some(0.0));
        // A fault the client never noticed: detected never, recovered at once.
        let t = calm(20, 1000);
        let r = &assess(
            &[(
                "pause node3 at 8s for 2s".into(),
                Action::Pause,
                "node3".into(),
                happened(8.0, 10.0),
            )],
            &t,
            (0.0, 20.0),
            None,
        )[0];
        assert_eq!((r.detect_s, r.recover_s), (None, Some(0.0)));
        // Too little before it: no band, said why.
        let r = &assess(
            &[(
                "pause node3 at 1s for 2s".into(),
                Action::Pause,
                "node3".into(),
                happened(1.0, 3.0),
            )],
            &t,
            (0.0, 20.0),
            None,
        )[0];
        assert!(
            r.band.is_none() && r.note.as_ref().unwrap().contains("no baseline"),
            "{r:?}"
        );
        assert_eq!(availability(&t), Some(1.0));
    }
}
