//! Rate shapes as written: `--rate` (a rate, or `ramp:`, `steps:`, `sine:`, `burst:`) and
//! `--rate-file` (one rate a second).

use super::{Curve, Shape};

/// Operations per second as written on the command line: `2000`, `50k`, `1.5M`, `0` (flat out).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match t.strip_suffix('m') {
            Some(n) => (n, 1e6),
            None => (t.as_str(), 1.0),
        },
    };
    match num.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!(
            "'{s}' is not a rate: write operations per second, like 2000, 50k or 0 for flat out"
        )),
    }
}

/// The forms `--rate` takes, for errors.
pub(super) const FORMS: &str = "write a rate (2000, 50k, or 0 for flat out), ramp:1k..40k/5m, steps:5k,10k,20k/2m, sine:20k±10k/60s \
                     or burst:10k,+30k for 5s every 60s (or give --rate-file FILE, one rate a second)";

impl Shape {
    /// `--rate` as written: a rate or a shape.
    pub fn parse(s: &str) -> Result<Shape, String> {
        let text = s.trim().to_string();
        let Some((kind, rest)) = text.split_once(':') else {
            return parse_rate(&text)
                .map(Shape::constant)
                .map_err(|_| format!("'{text}': {FORMS}"));
        };
        let bad = || format!("'{text}' is not a rate shape: {FORMS}");
        let rate = |r: &str| parse_rate(r).map_err(|_| bad());
        let secs = |d: &str| {
            humantime::parse_duration(d.trim())
                .map(|d| d.as_secs_f64())
                .map_err(|_| bad())
        };
        let rest = rest.trim();
        match kind.trim() {
            "ramp" => {
                let (rates, length) = rest.split_once('/').ok_or_else(bad)?;
                let (from, to) = rates.split_once("..").ok_or_else(bad)?;
                let (from, to) = (rate(from)?, rate(to)?);
                Shape::new(vec![(Curve::Linear { from, to }, secs(length)?)], false, text)
            }
            "steps" => {
                let (rates, length) = rest.split_once('/').ok_or_else(bad)?;
                let length = secs(length)?;
                let parts = rates
                    .split(',')
                    .map(|r| Ok((Curve::Const(rate(r)?), length)))
                    .collect::<Result<Vec<_>, String>>()?;
                Shape::new(parts, false, text)
            }
            "sine" => {
                let (rates, length) = rest.split_once('/').ok_or_else(bad)?;
                let (mean, amplitude) = rates
                    .split_once('±')
                    .or_else(|| rates.split_once("+-"))
                    .ok_or_else(bad)?;
                let (mean, amplitude) = (rate(mean)?, rate(amplitude)?);
                if amplitude > mean {
                    return Err(format!(
                        "'{text}': a sine's swing ({amplitude}) cannot exceed its mean ({mean}), or the rate would go below 0"
                    ));
                }
                Shape::new(vec![(Curve::Sine { mean, amplitude }, secs(length)?)], true, text)
            }
            "burst" => {
                // base,+extra for D every P
                let (base, rest) = rest.split_once(',').ok_or_else(bad)?;
                let (extra, rest) = rest.trim().split_once(" for ").ok_or_else(bad)?;
                let (length, period) = rest.split_once(" every ").ok_or_else(bad)?;
                let extra = extra.trim().strip_prefix('+').ok_or_else(bad)?;
                let (base, extra, length, period) = (rate(base)?, rate(extra)?, secs(length)?, secs(period)?);
                if length >= period {
                    return Err(format!(
                        "'{text}': a burst must be shorter than its period ({length} s every {period} s)"
                    ));
                }
                Shape::new(
                    vec![
                        (Curve::Const(base), period - length),
                        (Curve::Const(base + extra), length),
                    ],
                    true,
                    text,
                )
            }
            _ => Err(bad()),
        }
    }

    /// A trace of per-second rates (`--rate-file`): one rate a line, or the last field of a
    /// comma- or space-separated line (`second,rate` as a dashboard exports it); a first line
    /// that is not a number is a header, `#` starts a comment, blank lines are skipped. The
    /// last rate holds after the trace.
    pub fn from_trace(text: &str, name: &str) -> Result<Shape, String> {
        let mut parts: Vec<(Curve, f64)> = Vec::new();
        let mut first = true;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let field = line.rsplit([',', ' ', '\t', ';']).next().unwrap_or(line);
            let rate = match parse_rate(field) {
                Ok(r) => r,
                Err(_) if first => {
                    first = false;
                    continue;
                }
                Err(_) => {
                    return Err(format!(
                        "{name} line {}: '{line}' is not a rate (one rate a second a line, or `second,rate`)",
                        n + 1
                    ));
                }
            };
            first = false;
            match parts.last_mut() {
                Some((Curve::Const(r), length)) if *r == rate => *length += 1.0,
                _ => parts.push((Curve::Const(rate), 1.0)),
            }
        }
        if parts.is_empty() {
            return Err(format!("{name} holds no rates (one rate a second a line)"));
        }
        Shape::new(parts, false, format!("trace {name}"))
    }
}
