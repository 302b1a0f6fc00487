//! A comparison as the terminal shows it: a header naming the runs compared and left out, then
//! one line per metric and variant (mean and interval, ratio and interval, verdict, adjusted p).

use super::Comparison;
use crate::console::group;

fn number(v: f64) -> String {
    if v.abs() >= 1_000.0 {
        group(v)
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

impl Comparison {
    /// The table for the terminal.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{}: baseline {}, runs compared: {} ({}{}), floor {:.0}%\n",
            self.measurement,
            self.baseline,
            self.rows.first().map_or_else(String::new, |r| r
                .cells
                .iter()
                .zip(&self.repeats)
                .map(|(c, n)| format!("{} {n}", c.variant))
                .collect::<Vec<_>>()
                .join(", ")),
            self.evidence,
            if self.steady_only {
                ", steady runs only"
            } else {
                ", steady or not"
            },
            self.floor * 100.0
        );
        let (unreadable, unsteady): (Vec<_>, Vec<_>) = self.excluded.iter().partition(|e| e.unreadable);
        if !unsteady.is_empty() {
            s.push_str(&format!(
                "Left out, not steady ({} run(s); without --steady-only they are compared):\n",
                unsteady.len()
            ));
            for e in &unsteady {
                s.push_str(&format!("  {} {}: {}\n", e.variant, e.dir, e.why));
            }
        }
        if !unreadable.is_empty() {
            s.push_str(&format!("Left out, unreadable ({} run(s)):\n", unreadable.len()));
            for e in &unreadable {
                s.push_str(&format!("  {} {}: {}\n", e.variant, e.dir, e.why));
            }
        }
        if !self.answers.is_empty() {
            s.push_str("Answers (the primary questions; decisions stay valid across rounds):\n");
            for line in self.answers.iter().flat_map(|a| a.lines()) {
                s.push_str(&format!("  {line}\n"));
            }
        }
        s.push_str(&format!(
            "{:<22} {:<14} {:>24} {:>22}  {}\n",
            "metric", "variant", "mean [95% CI]", "ratio [95% CI]", "verdict (adjusted p)"
        ));
        for row in &self.rows {
            let label = if row.unit.is_empty() {
                row.label.clone()
            } else {
                format!("{} ({})", row.label, row.unit)
            };
            for (i, c) in row.cells.iter().enumerate() {
                let mean = match (c.mean, c.ci) {
                    (Some(m), Some((lo, hi))) => format!("{} [{}–{}]", number(m), number(lo), number(hi)),
                    (Some(m), None) => number(m),
                    _ => "-".into(),
                };
                let ratio = match (c.ratio, c.ratio_ci) {
                    (Some(r), Some((lo, hi))) => format!("×{r:.3} [{lo:.3}–{hi:.3}]"),
                    (Some(r), None) => format!("×{r:.3}"),
                    _ => String::new(),
                };
                let p = c.p_adjusted.map(|p| format!(" (p {p:.3})")).unwrap_or_default();
                let p = match &c.ratio_note {
                    Some(note) => format!("{p}; {note}"),
                    None => p,
                };
                let pooled = c.pooled.map(|v| format!("; pooled {}", number(v))).unwrap_or_default();
                let verdict = c.verdict_text();
                s.push_str(&format!(
                    "{:<22} {:<14} {:>24} {:>22}  {verdict}{p}{pooled}\n",
                    if i == 0 { label.as_str() } else { "" },
                    c.variant,
                    mean,
                    ratio,
                ));
            }
        }
        s
    }
}
