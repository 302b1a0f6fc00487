//! An answer as people read it (`Answer::line`, `Answer::lines`): its decision, the ratio with
//! its interval and that interval's level, what it covers, and for a pooled answer the interval
//! a new machine of this kind will see, at its own level, with which to plan by.

use super::answer::Answer;
use crate::stats::sequential::Decision;

/// `95 %`, `99.88 %`: a confidence level as people read it (as many digits as it has, up to
/// two decimals).
pub fn level_text(level: f64) -> String {
    let pct = level * 100.0;
    let text = format!("{pct:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} %")
}

impl Answer {
    /// `throughput of b: BETTER ×1.481 [1.402–1.565] (±5 %, 4 rounds paired, this sitting only)`.
    pub fn line(&self) -> String {
        let level = |l: Option<f64>| l.map(|l| format!(" at {}", level_text(l))).unwrap_or_default();
        let mean = if self.sittings.is_empty() {
            ""
        } else {
            " for the mean machine"
        };
        let ratio = match (self.ratio, self.ci) {
            (Some(r), Some((lo, hi))) if lo.is_finite() => {
                format!(" ×{r:.3} [{lo:.3}–{hi:.3}]{}{mean}", level(self.level))
            }
            (Some(r), _) => format!(" ×{r:.3}"),
            _ => String::new(),
        };
        let more = match (self.decision, self.more) {
            (Decision::Open, Some(n)) => format!("; about {n} repeats per variant would decide it (80 %)"),
            (Decision::Open, None) if self.note.is_none() && self.sittings.is_empty() => {
                "; more than 100 repeats per variant would".into()
            }
            _ => String::new(),
        };
        let band = if self.within_band {
            format!(", within the ±{:.0} % band", self.effect * 100.0)
        } else {
            String::new()
        };
        let behind = if self.sittings.is_empty() {
            format!("{} and {} repeats", self.repeats.0, self.repeats.1)
        } else {
            self.tau
                .map(|t| format!("between-machine SD {:.1} %", t * 100.0))
                .unwrap_or_else(|| "one machine".into())
        };
        let covers = if self.covers.is_empty() {
            String::new()
        } else {
            format!("; {}", self.covers)
        };
        let prediction = self
            .prediction
            .map(|(lo, hi)| {
                format!(
                    "; a new machine of this kind: [{lo:.3}–{hi:.3}]{} (plan by this)",
                    level(self.prediction_level)
                )
            })
            .unwrap_or_default();
        format!(
            "{} of {}: {}{band}{ratio} (±{:.0} %, {behind}{covers}{}){prediction}{more}",
            self.metric,
            self.variant,
            self.decision.name().to_uppercase(),
            self.effect * 100.0,
            self.note.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
        )
    }

    /// The answer's line, then what stands behind it: how it was pooled (the prior on τ, the
    /// look's level) and each sitting's own ratio and answer (pooled answers), and the
    /// steady-only analysis where some window was not steady.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![self.line()];
        if !self.sittings.is_empty() && !self.variance.is_empty() {
            out.push(format!("  how: {}", self.variance));
        }
        for p in &self.sittings {
            out.push(format!(
                "  sitting {}: ×{:.3} [{:.3}–{:.3}] at 95 % (fixed-sample) over {} rounds, its own answer {}",
                p.sitting,
                p.ratio,
                p.ci.0,
                p.ci.1,
                p.rounds,
                p.decision.map_or("not looked at".into(), |d| d.name().to_uppercase())
            ));
        }
        if let Some(c) = &self.steady_check {
            out.push(format!(
                "  steady windows only: ×{:.3} [{:.3}–{:.3}] at 95 % over {} rounds ({} window(s) left out)",
                c.ratio, c.ci.0, c.ci.1, c.rounds, c.left_out
            ));
        }
        out
    }
}
