//! An answer's narrowing, drawn: the ratio (variant / baseline) and its interval at every look,
//! round by round, against the ±effect band, on a log scale centred on no change, so the reader
//! sees when the interval left "no change" (better or worse) or fell inside the band
//! (equivalent).

use super::html::esc;
use crate::experiment::compare::Answer;

const W: f64 = 300.0;
const H: f64 = 160.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 24.0;

/// The SVG of `a`'s looks (None before the first look).
pub fn narrowing(a: &Answer) -> Option<String> {
    if a.history.is_empty() {
        return None;
    }
    let band = (1.0 + a.effect).ln();
    let (mut lo, mut hi) = (-band * 1.5, band * 1.5);
    for &(_, r, l, h) in &a.history {
        for v in [r, l, h] {
            if v > 0.0 && v.is_finite() {
                lo = lo.min(v.ln());
                hi = hi.max(v.ln());
            }
        }
    }
    let rounds = a.history.iter().map(|h| h.0).max().unwrap_or(1).max(2) as f64;
    let x = |round: usize| LEFT + (W - LEFT - RIGHT) * (round as f64 - 0.5) / rounds;
    let y = |ln: f64| TOP + (H - TOP - BOTTOM) * (hi - ln) / (hi - lo);
    let mut svg = format!(
        "<svg class=\"narrowing\" data-metric=\"{}\" data-variant=\"{}\" width=\"{W}\" height=\"{H}\" \
         viewBox=\"0 0 {W} {H}\" role=\"img\"><text x=\"8\" y=\"16\" font-weight=\"600\">{} of {}: {}</text>",
        esc(&a.metric),
        esc(&a.variant),
        esc(&a.metric),
        esc(&a.variant),
        a.decision.name()
    );
    // The ±effect band and the line of no change.
    svg += &format!(
        "<rect x=\"{LEFT}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#e3efe6\"><title>within ±{:.0} %</title></rect>\
         <line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"3 3\"/>",
        y(band),
        W - LEFT - RIGHT,
        y(-band) - y(band),
        a.effect * 100.0,
        W - RIGHT,
        y(0.0),
        y(0.0)
    );
    for (ln, label) in [
        (band, format!("×{:.2}", 1.0 + a.effect)),
        (0.0, "×1".into()),
        (-band, format!("×{:.2}", (-band).exp())),
    ] {
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            LEFT - 4.0,
            y(ln) + 4.0
        );
    }
    for &(round, r, l, h) in &a.history {
        let cx = x(round);
        svg += &format!(
            "<path d=\"M{cx:.1} {:.1}V{:.1}\" stroke=\"#222\"/><circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#3b6ea5\">\
             <title>round {round}: ×{r:.3} [{l:.3}–{h:.3}]</title></circle>\
             <text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{round}</text>",
            y(l.ln()),
            y(h.ln()),
            y(r.ln()),
            H - 8.0
        );
    }
    svg += "</svg>";
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sequential::Decision;

    #[test]
    fn every_look_is_drawn_against_the_band() {
        let mut a = Answer {
            decision: Decision::Better,
            ratio: Some(1.4),
            ci: Some((1.2, 1.6)),
            repeats: (4, 4),
            history: vec![(3, 1.5, 0.9, 2.4), (4, 1.4, 1.2, 1.6)],
            ..Answer::open("throughput", "b", 0.05, 4)
        };
        let svg = narrowing(&a).unwrap();
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert!(
            svg.contains("round 4: ×1.400 [1.200–1.600]") && svg.contains("within ±5 %"),
            "{svg}"
        );
        assert!(svg.contains("throughput of b: better"));
        a.history.clear();
        assert!(narrowing(&a).is_none(), "nothing to draw before the first look");
    }
}
