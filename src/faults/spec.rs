//! The fault schedule as written (`--fault 'pause node1 at 5s for 3s'`): one fault per spec,
//! `ACTION NODE at TIME [for LENGTH]`, times counted from the start of the measured window.
//!
//! - `pause NODE at T for D`: SIGSTOP, then SIGCONT after D (a GC storm or a stalled VM);
//! - `kill NODE at T [for D]`: SIGKILL, restarted after D (else at the end of the run);
//! - `stop NODE at T [for D]`: a graceful stop (SIGTERM), started again after D (else at the end);
//! - `drain NODE at T [for D]`: `nodetool drain` (the node stops taking writes), restarted after D
//!   (else at the end);
//! - `restart NODE at T`: a graceful stop and a start at once (the fault lasts as long as that);
//! - `upgrade NODE at T to VERSION`: `nodetool drain`, a graceful stop, and a start on Cassandra
//!   VERSION over the same data (a rolling upgrade is one per node, each after the last; a
//!   downgrade is the same with the older version, where the versions allow it);
//! - between the client and a node, through a proxy (`proxy`): `delay NODE at T for D by 50ms
//!   [jitter 10ms]` (each response waits), `bandwidth NODE at T for D to 100KB/s` (each
//!   direction), `blackhole NODE at T for D` (bytes dropped, connections hang), `reset NODE at
//!   T` (open connections cut).
//!
//! Checked before anything runs: the node must be one caplab runs here, the fault must end
//! inside the measured window, and two faults on one node must not overlap.

use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Pause,
    Kill,
    Stop,
    Drain,
    Restart,
    Delay,
    Bandwidth,
    Blackhole,
    Reset,
    Upgrade,
}

impl Action {
    const ALL: [(&'static str, Action); 10] = [
        ("pause", Action::Pause),
        ("kill", Action::Kill),
        ("stop", Action::Stop),
        ("drain", Action::Drain),
        ("restart", Action::Restart),
        ("delay", Action::Delay),
        ("bandwidth", Action::Bandwidth),
        ("blackhole", Action::Blackhole),
        ("reset", Action::Reset),
        ("upgrade", Action::Upgrade),
    ];

    /// Whether it acts on the network between the client and the node (through a proxy).
    pub fn is_network(self) -> bool {
        matches!(
            self,
            Action::Delay | Action::Bandwidth | Action::Blackhole | Action::Reset
        )
    }

    /// Whether it happens at once and has no length.
    fn is_instant(self) -> bool {
        matches!(self, Action::Restart | Action::Reset | Action::Upgrade)
    }

    pub fn name(self) -> &'static str {
        Action::ALL.iter().find(|(_, a)| *a == self).map_or("?", |(n, _)| n)
    }
}

/// One scheduled fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// As written.
    pub text: String,
    pub action: Action,
    pub node: String,
    /// From the start of the measured window.
    pub at: Duration,
    /// How long until it is undone (None: until the end of the run; a restart has none).
    pub length: Option<Duration>,
    /// A delay's latency and jitter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Duration>,
    /// A bandwidth limit, bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<u64>,
    /// The Cassandra version an upgrade starts the node on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

const GRAMMAR: &str = "write ACTION NODE at TIME [for LENGTH], e.g. 'pause node1 at 5s for 3s' or 'kill node2 at 10s for \
                       20s'; actions: pause (needs for), kill, stop, drain, restart (no for), and between client and \
                       node: delay ... by 50ms [jitter 10ms], bandwidth ... to 100KB/s, blackhole (all three need for), \
                       reset (no for); and 'upgrade node1 at 10s to 6.0-alpha2' (no for)";

impl FaultSpec {
    pub fn parse(s: &str) -> Result<FaultSpec, String> {
        let bad = |why: &str| format!("--fault '{s}': {why}; {GRAMMAR}");
        let words: Vec<&str> = s.split_whitespace().collect();
        let (action, node, rest) = match words.as_slice() {
            [action, node, rest @ ..] => (*action, *node, rest),
            _ => return Err(bad("too short")),
        };
        let action = Action::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(action))
            .map(|(_, a)| *a)
            .ok_or_else(|| bad(&format!("'{action}' is not an action")))?;
        let time = |w: &str, what: &str| {
            humantime::parse_duration(w).map_err(|_| bad(&format!("'{w}' is not a {what} (write 5s, 1m30s, 500ms)")))
        };
        let (at, length, tail) = match rest {
            ["at", t, "for", d, tail @ ..] => (time(t, "time")?, Some(time(d, "length")?), tail),
            ["at", t, tail @ ..] => (time(t, "time")?, None, tail),
            _ => return Err(bad("expected 'at TIME' and perhaps 'for LENGTH' after the node")),
        };
        let mut f = FaultSpec {
            text: words.join(" "),
            action,
            node: node.to_string(),
            at,
            length,
            latency: None,
            jitter: None,
            bytes_per_s: None,
            version: None,
        };
        match (action, tail) {
            (Action::Delay, ["by", l]) => f.latency = Some(time(l, "latency")?),
            (Action::Delay, ["by", l, "jitter", j]) => {
                f.latency = Some(time(l, "latency")?);
                f.jitter = Some(time(j, "jitter")?);
            }
            (Action::Delay, _) => return Err(bad("a delay says how much: 'by 50ms', perhaps 'jitter 10ms'")),
            (Action::Bandwidth, ["to", r]) => {
                f.bytes_per_s = Some(
                    parse_rate(r)
                        .ok_or_else(|| bad(&format!("'{r}' is not a rate (write 100KB/s, 1MB/s or 5000B/s)")))?,
                )
            }
            (Action::Bandwidth, _) => return Err(bad("a bandwidth limit says how much: 'to 100KB/s'")),
            (Action::Upgrade, ["to", v]) => {
                crate::cluster::maven::validate_version(v).map_err(|e| bad(&format!("{e:#}")))?;
                f.version = Some(v.to_string());
            }
            (Action::Upgrade, _) => return Err(bad("an upgrade names its version: 'to 6.0-alpha2'")),
            (_, []) => {}
            (_, extra) => return Err(bad(&format!("'{}' is not understood here", extra.join(" ")))),
        }
        let needs_length = matches!(
            action,
            Action::Pause | Action::Delay | Action::Bandwidth | Action::Blackhole
        );
        match (action, length) {
            (a, None) if needs_length => {
                return Err(bad(&format!("a {} needs its length ('for 3s')", a.name())));
            }
            (a, Some(_)) if a.is_instant() => {
                return Err(bad(&format!("a {} happens at once: drop 'for'", a.name())));
            }
            (_, Some(d)) if d.is_zero() => return Err(bad("a length of 0 is no fault")),
            _ => {}
        }
        Ok(f)
    }

    /// When it is undone, from the window's start (None: at the end of the run).
    pub fn until(&self) -> Option<Duration> {
        self.length.map(|d| self.at + d)
    }
}

/// `100KB/s`, `1MB/s`, `5000B/s` (KB = 1000 bytes) in bytes per second.
fn parse_rate(s: &str) -> Option<u64> {
    let n = s.strip_suffix("/s")?;
    let (digits, unit) = n.split_at(n.find(|c: char| !c.is_ascii_digit() && c != '.')?);
    let k = match unit.to_ascii_uppercase().as_str() {
        "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => return None,
    };
    let v = digits.parse::<f64>().ok()? * k;
    (v >= 1.0).then_some(v as u64)
}

/// Checks a schedule against the nodes caplab runs here (`local`, by name) and the measured
/// window's length (`window`, when it is fixed).
/// `window` is the measured window's length (None: a count of operations), `flag` the option
/// that sets it (`--duration`, or `--measure` for a capacity search's steps).
pub fn check(faults: &[FaultSpec], local: &[String], window: Option<Duration>, flag: &str) -> Result<(), String> {
    if faults.is_empty() {
        return Ok(());
    }
    if local.is_empty() {
        return Err(format!(
            "--fault '{}': faults act only on nodes caplab runs on this machine (caplab node start), and the target \
             has none of them; drop --fault, or run against local nodes",
            faults[0].text
        ));
    }
    let Some(window) = window else {
        return Err("--fault needs a measured window of known length: give --duration, not -n".into());
    };
    for f in faults {
        if !local.contains(&f.node) {
            return Err(format!(
                "--fault '{}': no node '{}' among the nodes caplab runs here ({})",
                f.text,
                f.node,
                local.join(", ")
            ));
        }
        let end = f.until().unwrap_or(f.at);
        if f.at >= window || end > window {
            return Err(format!(
                "--fault '{}': it {} after the measured window ({}): start it earlier, shorten it, or lengthen {flag}",
                f.text,
                if f.at >= window { "starts" } else { "ends" },
                humantime::format_duration(window)
            ));
        }
    }
    for (i, a) in faults.iter().enumerate() {
        for b in &faults[i + 1..] {
            // An instant fault (a restart, an upgrade) ends when it is done: another on its node later
            // (a downgrade after an upgrade) is not refused.
            let end = |f: &FaultSpec| match f.action.is_instant() {
                true => f.at + Duration::from_nanos(1),
                false => Duration::MAX,
            };
            let span = |f: &FaultSpec| (f.at, f.until().unwrap_or_else(|| end(f)));
            let ((a0, a1), (b0, b1)) = (span(a), span(b));
            if a.node == b.node && a0 < b1 && b0 < a1 {
                return Err(format!(
                    "--fault '{}' and '{}' overlap on {}: one fault at a time per node (a fault without 'for' lasts \
                     to the end)",
                    a.text, b.text, a.node
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn an_upgrade_names_its_version_and_a_downgrade_may_follow_it() {
        let f = FaultSpec::parse("upgrade node2 at 30s to 6.0-alpha2").unwrap();
        assert_eq!((f.action, f.at, f.length), (Action::Upgrade, s(30), None));
        assert_eq!(f.version.as_deref(), Some("6.0-alpha2"));
        for (bad, why) in [
            ("upgrade node2 at 30s", "names its version"),
            ("upgrade node2 at 30s for 5s to 6.0-alpha2", "happens at once"),
            ("upgrade node2 at 30s to six", "not a Cassandra version"),
        ] {
            let e = FaultSpec::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let nodes = ["node1".to_string(), "node2".to_string()];
        let both = [
            FaultSpec::parse("upgrade node2 at 10s to 6.0-alpha2").unwrap(),
            FaultSpec::parse("upgrade node2 at 50s to 5.0.9").unwrap(),
        ];
        assert_eq!(check(&both, &nodes, Some(s(90)), "--duration"), Ok(()));
        let kill = FaultSpec::parse("kill node2 at 5s").unwrap();
        assert!(check(&[kill, both[0].clone()], &nodes, Some(s(90)), "--duration").is_err());
    }

    #[test]
    fn specs_parse_or_are_refused_naming_the_fix() {
        let f = FaultSpec::parse("pause node1 at 5s for 3s").unwrap();
        assert_eq!(
            (f.action, f.node.as_str(), f.at, f.length),
            (Action::Pause, "node1", s(5), Some(s(3)))
        );
        assert_eq!(f.until(), Some(s(8)));
        let k = FaultSpec::parse(" kill  node2 at 1m ").unwrap();
        assert_eq!(
            (k.action, k.at, k.length, k.text.as_str()),
            (Action::Kill, s(60), None, "kill node2 at 1m")
        );
        let d = FaultSpec::parse("delay node2 at 5s for 10s by 50ms jitter 5ms").unwrap();
        assert_eq!(
            (d.latency, d.jitter),
            (Some(Duration::from_millis(50)), Some(Duration::from_millis(5)))
        );
        assert!(d.action.is_network() && !f.action.is_network());
        let b = FaultSpec::parse("bandwidth node2 at 5s for 10s to 100KB/s").unwrap();
        assert_eq!(b.bytes_per_s, Some(100_000));
        assert_eq!(FaultSpec::parse("reset node3 at 2s").unwrap().length, None);
        for (bad, why) in [
            ("pause node1 at 5s", "needs its length"),
            ("restart node1 at 5s for 3s", "drop 'for'"),
            ("reset node1 at 5s for 3s", "drop 'for'"),
            ("delay node1 at 5s for 3s", "'by 50ms'"),
            ("blackhole node1 at 5s", "needs its length"),
            ("bandwidth node1 at 5s for 3s to fast", "'fast' is not a rate"),
            ("pause node1 at 5s for 3s by 1ms", "'by 1ms' is not understood"),
            ("freeze node1 at 5s for 3s", "'freeze' is not an action"),
            ("pause node1 in 5s for 3s", "expected 'at TIME'"),
            ("pause node1 at soon for 3s", "'soon' is not a time"),
            ("kill node1 at 5s for 0s", "length of 0"),
            ("kill", "too short"),
        ] {
            let e = FaultSpec::parse(bad).unwrap_err();
            assert!(
                e.contains(why) && e.contains("e.g. 'pause node1 at 5s for 3s'"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn schedules_are_checked_against_the_nodes_and_the_window() {
        let parse = |v: &[&str]| v.iter().map(|f| FaultSpec::parse(f).unwrap()).collect::<Vec<_>>();
        let local = vec!["node1".to_string(), "node2".to_string()];
        let w = Some(s(30));
        assert!(
            check(
                &parse(&[
                    "pause node1 at 5s for 3s",
                    "kill node2 at 5s for 10s",
                    "pause node1 at 8s for 2s"
                ]),
                &local,
                w,
                "--duration"
            )
            .is_ok()
        );
        let e = |v: &[&str], local: &[String], w| check(&parse(v), local, w, "--duration").unwrap_err();
        assert!(e(&["pause node3 at 5s for 3s"], &local, w).contains("no node 'node3'"));
        assert!(e(&["pause node1 at 28s for 3s"], &local, w).contains("ends after the measured window (30s)"));
        let capacity = check(&parse(&["pause node1 at 28s for 3s"]), &local, w, "--measure").unwrap_err();
        assert!(capacity.contains("lengthen --measure"), "{capacity}");
        assert!(e(&["kill node1 at 30s"], &local, w).contains("starts after"));
        assert!(e(&["pause node1 at 5s for 3s", "kill node1 at 7s for 1s"], &local, w).contains("overlap on node1"));
        assert!(e(&["kill node1 at 5s", "pause node1 at 20s for 1s"], &local, w).contains("lasts to the end"));
        assert!(e(&["pause node1 at 5s for 3s"], &[], w).contains("only on nodes caplab runs"));
        assert!(e(&["pause node1 at 5s for 3s"], &local, None).contains("--duration"));
    }
}
