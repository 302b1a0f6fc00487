//! A figure's verdict for one look planned in advance, as an enum (pages and JSON keep its
//! words: `significant, better`, `not significant`, `negligible (within ±5%)`, …).

use serde::{Deserialize, Serialize};

/// What one planned look says of a variant's figure against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Verdict {
    /// Not decided yet: a cell whose verdict comes after the correction (never written out).
    Pending,
    /// The baseline's own cell (with why its figure is short, if it is).
    Baseline(Option<String>),
    /// Not tested: this variant's figure is short (why, e.g. too few steady repeats).
    Short(String),
    /// Not tested: the baseline's figure is short (why).
    BaselineShort(String),
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
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Pending => Ok(()),
            Verdict::Baseline(None) => write!(f, "baseline"),
            Verdict::Baseline(Some(why)) => write!(f, "baseline: {why}"),
            Verdict::Short(why) => write!(f, "{why}"),
            Verdict::BaselineShort(why) => write!(f, "baseline has {why}"),
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

impl From<Verdict> for String {
    fn from(v: Verdict) -> String {
        v.to_string()
    }
}

impl From<String> for Verdict {
    /// Reads the words back (a record written by any caplab since verdicts were words).
    fn from(text: String) -> Verdict {
        let floor = |rest: &str| {
            rest.trim_end_matches("%)")
                .trim()
                .parse::<f64>()
                .ok()
                .map(|p| p / 100.0)
        };
        match text.as_str() {
            "" => return Verdict::Pending,
            "baseline" => return Verdict::Baseline(None),
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
            return Verdict::Baseline(Some(why.to_string()));
        }
        if let Some(why) = text.strip_prefix("baseline has ") {
            return Verdict::BaselineShort(why.to_string());
        }
        if let Some(floor) = text.strip_prefix("negligible (within ±").and_then(floor) {
            return Verdict::Negligible { floor, bounded: true };
        }
        if let Some(floor) = text.strip_prefix("negligible (< ").and_then(floor) {
            return Verdict::Negligible { floor, bounded: false };
        }
        Verdict::Short(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verdict_keeps_its_words_through_json() {
        let all = [
            Verdict::Pending,
            Verdict::Baseline(None),
            Verdict::Baseline(Some("too few steady repeats (1 of 3 steady)".into())),
            Verdict::Short("too few steady repeats (1 of 3 steady)".into()),
            Verdict::BaselineShort("too few steady repeats (0 of 3 steady)".into()),
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
        ];
        for v in all {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v, "{json}");
        }
        assert_eq!(
            serde_json::to_string(&Verdict::Better).unwrap(),
            "\"significant, better\""
        );
        assert_eq!(
            Verdict::Negligible {
                floor: 0.05,
                bounded: true
            }
            .to_string(),
            "negligible (within ±5%)"
        );
    }
}
