//! A figure's verdict for one look planned in advance, as an enum written to JSON as a tagged
//! value beside the figure's numbers (`{"verdict": "better", "p": 0.01, …}`,
//! `{"verdict": "negligible", "floor": 0.05, "bounded": true}`); the words people read
//! (`significant, better`, `negligible (within ±5%)`) are its `Display`, never read back. Records
//! written before verdicts were tagged kept the words: `from_words` reads those, and only those.

use serde::{Deserialize, Serialize};

/// What one planned look says of a variant's figure against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Not decided yet: a cell whose verdict comes after the correction.
    Pending,
    /// The baseline's own cell (with why its figure is short, if it is).
    Baseline {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// Not tested: this variant's figure is short (why, e.g. too few steady repeats).
    Short {
        why: String,
    },
    /// Not tested: the baseline's figure is short (why).
    BaselineShort {
        why: String,
    },
    /// Both sides the same constant: nothing to test.
    NoDifference,
    /// Not among the experiment's `metrics`.
    NotTested,
    /// Fewer than two repeats on a side.
    TooFew,
    /// The ratio's whole interval within ±floor (`bounded`), or the ratio within it though
    /// significant.
    Negligible {
        floor: f64,
        bounded: bool,
    },
    NotSignificant,
    Better,
    Worse,
    /// Significant with no direction to give (neither a ratio nor different means).
    Significant,
}

impl Verdict {
    /// Significant, better or worse (in the metric's direction), for colouring.
    pub fn better(&self) -> bool {
        *self == Verdict::Better
    }

    pub fn worse(&self) -> bool {
        *self == Verdict::Worse
    }

    /// Whether the look found a significant difference.
    pub fn significant(&self) -> bool {
        matches!(self, Verdict::Better | Verdict::Worse | Verdict::Significant)
    }

    /// A verdict as records before tagged verdicts wrote it (their words); words no verdict
    /// had were a short figure's reason.
    pub fn from_words(text: &str) -> Verdict {
        let floor = |rest: &str| {
            rest.trim_end_matches("%)")
                .trim()
                .parse::<f64>()
                .ok()
                .map(|p| p / 100.0)
        };
        match text {
            "" => return Verdict::Pending,
            "baseline" => return Verdict::Baseline { why: None },
            "no difference (every value the same)" => return Verdict::NoDifference,
            "not tested (not in the experiment's metrics)" => return Verdict::NotTested,
            "too few repeats to test" => return Verdict::TooFew,
            "not significant" => return Verdict::NotSignificant,
            "significant, better" => return Verdict::Better,
            "significant, worse" => return Verdict::Worse,
            "significant" => return Verdict::Significant,
            _ => {}
        }
        if let Some(why) = text.strip_prefix("baseline: ") {
            return Verdict::Baseline {
                why: Some(why.to_string()),
            };
        }
        if let Some(why) = text.strip_prefix("baseline has ") {
            return Verdict::BaselineShort { why: why.to_string() };
        }
        if let Some(floor) = text.strip_prefix("negligible (within ±").and_then(floor) {
            return Verdict::Negligible { floor, bounded: true };
        }
        if let Some(floor) = text.strip_prefix("negligible (< ").and_then(floor) {
            return Verdict::Negligible { floor, bounded: false };
        }
        Verdict::Short { why: text.to_string() }
    }

    /// A comparison's JSON (`Comparison` as serde writes it) from a record before tagged
    /// verdicts: every cell's `"verdict": "words"` becomes the tagged fields.
    pub fn upgrade_words(comparison: &mut serde_json::Value) {
        let cells = comparison
            .as_array_mut()
            .into_iter()
            .flatten()
            .flat_map(|c| c["rows"].as_array_mut().into_iter().flatten())
            .flat_map(|r| r["cells"].as_array_mut().into_iter().flatten());
        for cell in cells {
            let (Some(words), Some(map)) = (cell["verdict"].as_str().map(str::to_string), cell.as_object_mut()) else {
                continue;
            };
            if let Ok(serde_json::Value::Object(tagged)) = serde_json::to_value(Verdict::from_words(&words)) {
                map.extend(tagged);
            }
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Pending => Ok(()),
            Verdict::Baseline { why: None } => write!(f, "baseline"),
            Verdict::Baseline { why: Some(why) } => write!(f, "baseline: {why}"),
            Verdict::Short { why } => write!(f, "{why}"),
            Verdict::BaselineShort { why } => write!(f, "baseline has {why}"),
            Verdict::NoDifference => write!(f, "no difference (every value the same)"),
            Verdict::NotTested => write!(f, "not tested (not in the experiment's metrics)"),
            Verdict::TooFew => write!(f, "too few repeats to test"),
            Verdict::Negligible { floor, bounded: true } => write!(f, "negligible (within ±{:.0}%)", floor * 100.0),
            Verdict::Negligible { floor, bounded: false } => write!(f, "negligible (< {:.0}%)", floor * 100.0),
            Verdict::NotSignificant => write!(f, "not significant"),
            Verdict::Better => write!(f, "significant, better"),
            Verdict::Worse => write!(f, "significant, worse"),
            Verdict::Significant => write!(f, "significant"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Verdict> {
        let why = "too few steady repeats (1 of 3 steady)".to_string();
        vec![
            Verdict::Pending,
            Verdict::Baseline { why: None },
            Verdict::Baseline { why: Some(why.clone()) },
            Verdict::Short { why: why.clone() },
            Verdict::BaselineShort { why },
            Verdict::NoDifference,
            Verdict::NotTested,
            Verdict::TooFew,
            Verdict::Negligible {
                floor: 0.05,
                bounded: true,
            },
            Verdict::Negligible {
                floor: 0.02,
                bounded: false,
            },
            Verdict::NotSignificant,
            Verdict::Better,
            Verdict::Worse,
            Verdict::Significant,
        ]
    }

    #[test]
    fn a_verdict_is_written_as_a_tag_with_its_numbers() {
        for v in all() {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v, "{json}");
        }
        assert_eq!(
            serde_json::to_string(&Verdict::Better).unwrap(),
            r#"{"verdict":"better"}"#
        );
        let negligible = Verdict::Negligible {
            floor: 0.05,
            bounded: true,
        };
        assert_eq!(
            serde_json::to_string(&negligible).unwrap(),
            r#"{"verdict":"negligible","floor":0.05,"bounded":true}"#
        );
        assert_eq!(negligible.to_string(), "negligible (within ±5%)");
    }

    #[test]
    fn the_words_of_earlier_records_read_as_the_verdict_they_said() {
        for v in all() {
            assert_eq!(Verdict::from_words(&v.to_string()), v);
        }
        let mut old = serde_json::json!([{"rows": [{"cells": [
            {"variant": "a", "verdict": "baseline"},
            {"variant": "b", "p": 0.01, "verdict": "significant, better"},
            {"variant": "c", "verdict": "negligible (within ±2%)"}
        ]}]}]);
        Verdict::upgrade_words(&mut old);
        let cells = &old[0]["rows"][0]["cells"];
        assert_eq!(cells[0]["verdict"], "baseline");
        assert_eq!(
            (cells[1]["verdict"].as_str(), cells[1]["p"].as_f64()),
            (Some("better"), Some(0.01))
        );
        assert_eq!(
            (cells[2]["verdict"].as_str(), cells[2]["floor"].as_f64()),
            (Some("negligible"), Some(0.02))
        );
    }
}
