//! A service level as data: latency objectives (`p99.9<100ms/10s`: a percentile of response
//! time, a bound, a window every instance of which must pass), plus the share of the target
//! rate each window must achieve and the share of operations that may fail in a window.

use anyhow::{Result, bail};
use serde::{Deserialize, Deserializer, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// As written: `p99.9`, `p50`, `max`.
    pub label: String,
    /// In (0, 1]; 1 is the maximum.
    pub quantile: f64,
    /// In milliseconds in JSON.
    #[serde(serialize_with = "ms", deserialize_with = "from_ms")]
    pub bound: Duration,
    /// In seconds in JSON.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    pub window: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sla {
    pub objectives: Vec<Objective>,
    /// Each window must achieve at least this share of the target rate (runs with a rate).
    pub min_rate_share: f64,
    /// Each window may have at most this share of its operations fail.
    pub error_budget: f64,
}

fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn from_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_nanos(
        (f64::deserialize(d)?.max(0.0) * 1e6).round() as u64
    ))
}

fn from_secs<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_nanos(
        (f64::deserialize(d)?.max(0.0) * 1e9).round() as u64
    ))
}

const FORM: &str = "write objectives like 'p99.9<100ms/10s' or 'p99<20ms/10s,p50<5ms/10s' (a percentile or max, a bound \
                    in us, ms or s, and a window of whole seconds)";

impl Sla {
    /// Parses `objectives` (comma-separated); `min_rate_share` and `error_budget` as fractions.
    pub fn parse(objectives: &str, min_rate_share: f64, error_budget: f64) -> Result<Sla> {
        let mut out = Vec::new();
        for part in objectives.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            out.push(Objective::parse(part)?);
        }
        if out.is_empty() {
            bail!("--sla is empty: {FORM}");
        }
        if !(0.0..=1.0).contains(&min_rate_share) || !(0.0..=1.0).contains(&error_budget) {
            bail!("the achieved-rate share and error budget are fractions between 0 and 1 (or percentages)");
        }
        Ok(Sla {
            objectives: out,
            min_rate_share,
            error_budget,
        })
    }

    /// The window lengths the objectives use, shortest first, without repeats.
    pub fn windows(&self) -> Vec<Duration> {
        let mut w: Vec<Duration> = self.objectives.iter().map(|o| o.window).collect();
        w.sort();
        w.dedup();
        w
    }

    /// The objectives as written.
    pub fn text(&self) -> String {
        self.objectives
            .iter()
            .map(Objective::text)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Objective {
    fn parse(s: &str) -> Result<Objective> {
        let bad = || anyhow::anyhow!("'{s}' is not a latency objective: {FORM}");
        let (stat, rest) = s.split_once('<').ok_or_else(bad)?;
        let rest = rest.strip_prefix('=').unwrap_or(rest);
        let (bound, window) = rest.split_once('/').ok_or_else(bad)?;
        let stat = stat.trim().to_ascii_lowercase();
        let quantile = match stat.as_str() {
            "max" | "p100" => 1.0,
            p => {
                let pct: f64 = p.strip_prefix('p').and_then(|n| n.parse().ok()).ok_or_else(bad)?;
                if !(pct > 0.0 && pct <= 100.0) {
                    bail!("'{s}': the percentile must be above 0 and at most 100");
                }
                // Rounded so that p99.9 is exactly 0.999.
                (pct * 1e6).round() / 1e8
            }
        };
        let bound = latency(bound.trim()).ok_or_else(bad)?;
        let window = humantime::parse_duration(window.trim()).map_err(|_| bad())?;
        if window.is_zero() || window.subsec_nanos() != 0 {
            bail!("'{s}': the window must be a whole number of seconds (results are kept per second)");
        }
        if bound.is_zero() {
            bail!("'{s}': the bound must be above 0");
        }
        Ok(Objective {
            label: stat,
            quantile,
            bound,
            window,
        })
    }

    pub fn text(&self) -> String {
        let b = self.bound.as_secs_f64() * 1e3;
        format!("{}<{}ms/{}s", self.label, trim_float(b), self.window.as_secs())
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `100ms`, `1.5ms`, `250us`, `2s`.
fn latency(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let secs = match unit.trim() {
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// A share as a fraction: `97%` or `0.97`.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a share: write a percentage (97%) or a fraction (0.97)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_print_back() {
        let sla = Sla::parse("p99.9<100ms/10s, p50<=5ms/10s,max<1.5s/30s,p99<250us/1s", 0.97, 0.001).unwrap();
        let o = &sla.objectives;
        assert_eq!(
            (o[0].quantile, o[0].bound, o[0].window),
            (0.999, Duration::from_millis(100), Duration::from_secs(10))
        );
        assert_eq!(o[1].quantile, 0.5);
        assert_eq!((o[2].quantile, o[2].bound), (1.0, Duration::from_millis(1500)));
        assert_eq!(o[3].bound, Duration::from_micros(250));
        assert_eq!(sla.text(), "p99.9<100ms/10s,p50<5ms/10s,max<1500ms/30s,p99<0.25ms/1s");
        assert_eq!(
            sla.windows(),
            vec![Duration::from_secs(1), Duration::from_secs(10), Duration::from_secs(30)]
        );
        // As result.json records it (bound in ms, window in s), and back.
        let json = serde_json::to_value(&sla).unwrap();
        assert_eq!(json["objectives"][3]["bound"], 0.25);
        assert_eq!(serde_json::from_value::<Sla>(json).unwrap(), sla);
    }

    #[test]
    fn mistakes_say_what_to_write() {
        for bad in [
            "p99.9<100/10s",
            "p99.9 100ms/10s",
            "q99<1ms/1s",
            "p99<1ms",
            "p0<1ms/1s",
            "p99<1ms/1.5s",
            "",
        ] {
            let err = Sla::parse(bad, 0.97, 0.001).unwrap_err().to_string();
            assert!(
                err.contains("p99.9<100ms/10s") || err.contains("whole number") || err.contains("above 0"),
                "{bad}: {err}"
            );
        }
        assert_eq!(parse_share("97%").unwrap(), 0.97);
        assert_eq!(parse_share("0.001").unwrap(), 0.001);
        assert!(parse_share("120%").is_err());
    }
}
