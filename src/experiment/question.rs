//! What an experiment asks and how long it may take to answer: which metrics are the question
//! (`primary`), the smallest difference that matters for each (`effect`), how many repeats
//! (`repeats`: a number, `auto`, or `{min, max}`) and a wall-clock `budget`.
//!
//! With a number of repeats, every repeat runs and the primary comparisons are decided once, at
//! the end. With `auto` (3 to 12) or `{min, max}`, rounds of repeats run until every primary
//! comparison is decided (better, worse or equivalent within ±effect), the maximum is reached,
//! or the budget would be overrun by another round.

use serde::{Deserialize, Serialize};
use serde_norway::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The rounds of `repeats: auto`.
pub const AUTO_MIN: u32 = 3;
pub const AUTO_MAX: u32 = 12;

/// The question of a run measurement, unless `primary` says otherwise.
pub const PRIMARY_RUN: [&str; 2] = ["throughput", "p99"];
/// The question of a capacity measurement, unless `primary` says otherwise.
pub const PRIMARY_CAPACITY: [&str; 1] = ["capacity"];

/// The smallest difference that matters, unless `effect` says otherwise: 5 % for throughput
/// (single runs on two shared cores differ by about ±12 %, so smaller is rarely reachable), 10 % for
/// latency percentiles and everything else.
pub fn default_effect(metric: &str) -> f64 {
    match metric {
        "throughput" | "row_rate" => 0.05,
        _ => 0.10,
    }
}

/// How many repeats of every variant run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Repeats {
    Fixed(u32),
    /// Rounds until the question is answered, at least `min`, at most `max`.
    Auto {
        min: u32,
        max: u32,
    },
}

impl Default for Repeats {
    fn default() -> Self {
        Repeats::Fixed(3)
    }
}

impl Repeats {
    pub fn min(self) -> u32 {
        match self {
            Repeats::Fixed(n) => n,
            Repeats::Auto { min, .. } => min,
        }
    }

    pub fn max(self) -> u32 {
        match self {
            Repeats::Fixed(n) => n,
            Repeats::Auto { max, .. } => max,
        }
    }

    pub fn is_auto(self) -> bool {
        matches!(self, Repeats::Auto { .. })
    }

    /// `3`, `3 to 12 (until answered)`.
    pub fn describe(self) -> String {
        match self {
            Repeats::Fixed(n) => n.to_string(),
            Repeats::Auto { min, max } => format!("{min} to {max} (until answered)"),
        }
    }

    pub fn check(self) -> Result<(), String> {
        match self {
            Repeats::Fixed(0) => Err("repeats must be at least 1".into()),
            Repeats::Auto { min, max } if min < 3 || max < min => Err(format!(
                "repeats: {{min: {min}, max: {max}}}: min must be at least 3 (a decision needs a spread on each \
                 side) and max at least min"
            )),
            _ => Ok(()),
        }
    }
}

impl<'de> Deserialize<'de> for Repeats {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Repeats, D::Error> {
        let bad = |v: &Value| {
            serde::de::Error::custom(format!(
                "repeats: {v:?} is not a number of repeats: write a number (3), auto (3 to 12 rounds, until the \
                 question is answered) or {{min: 3, max: 12}}"
            ))
        };
        let v = Value::deserialize(d)?;
        match &v {
            Value::Number(n) => n.as_u64().map(|n| Repeats::Fixed(n as u32)).ok_or_else(|| bad(&v)),
            Value::String(s) if s == "auto" => Ok(Repeats::Auto {
                min: AUTO_MIN,
                max: AUTO_MAX,
            }),
            Value::Mapping(m) => {
                let get = |k: &str, default: u32| match m.get(k) {
                    None => Ok(default),
                    Some(Value::Number(n)) => n.as_u64().map(|n| n as u32).ok_or_else(|| bad(&v)),
                    Some(_) => Err(bad(&v)),
                };
                if m.keys().any(|k| !matches!(k.as_str(), Some("min" | "max"))) {
                    return Err(bad(&v));
                }
                Ok(Repeats::Auto {
                    min: get("min", AUTO_MIN)?,
                    max: get("max", AUTO_MAX)?,
                })
            }
            _ => Err(bad(&v)),
        }
    }
}

/// `budget: 1h` (humantime).
pub fn budget<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    text.map(|t| {
        humantime::parse_duration(&t)
            .map_err(|_| serde::de::Error::custom(format!("budget: '{t}' is not a duration: write 45m, 1h or 1h30m")))
    })
    .transpose()
}

/// `effect: {throughput: 5%, p99: 10%}`: shares as `5%` or 0.05.
pub fn effects<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    let raw: BTreeMap<String, Value> = BTreeMap::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            let text = match &v {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "effect: {k}: {other:?} is not a share"
                    )));
                }
            };
            let share = crate::sla::parse_share(&text).map_err(serde::de::Error::custom)?;
            if !(share > 0.0 && share < 1.0) {
                return Err(serde::de::Error::custom(format!(
                    "effect: {k}: {text} must be above 0 and below 100 %"
                )));
            }
            Ok((k, share))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct F {
        repeats: Repeats,
        #[serde(default, deserialize_with = "budget")]
        budget: Option<Duration>,
        #[serde(default, deserialize_with = "effects")]
        effect: BTreeMap<String, f64>,
    }

    fn parse(text: &str) -> Result<F, String> {
        serde_norway::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn repeats_are_a_number_auto_or_a_range() {
        assert_eq!(parse("repeats: 4").unwrap().repeats, Repeats::Fixed(4));
        assert_eq!(
            parse("repeats: auto").unwrap().repeats,
            Repeats::Auto { min: 3, max: 12 }
        );
        assert_eq!(
            parse("repeats: {max: 6}").unwrap().repeats,
            Repeats::Auto { min: 3, max: 6 }
        );
        assert!(parse("repeats: lots").unwrap_err().contains("auto"));
        assert!(parse("repeats: {min: 3, most: 5}").is_err());
        assert!(
            Repeats::Auto { min: 2, max: 6 }
                .check()
                .unwrap_err()
                .contains("at least 3")
        );
        let f = parse("repeats: auto\nbudget: 1h30m\neffect: {throughput: 5%, p99: 0.1}").unwrap();
        assert_eq!(f.budget, Some(Duration::from_secs(5400)));
        assert_eq!(f.effect["throughput"], 0.05);
        assert_eq!(f.effect["p99"], 0.1);
        assert!(
            parse("repeats: 3\nbudget: soon")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse("repeats: 3\neffect: {p99: 150%}")
                .unwrap_err()
                .contains("not a share")
        );
        assert!(parse("repeats: 3\neffect: {p99: 0%}").unwrap_err().contains("above 0"));
    }
}
