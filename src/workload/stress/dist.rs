//! cassandra-stress's distribution grammar: `[~]name(min..max[,params])`, `fixed(n)`, plain
//! numbers with k/m/b suffixes, and ratios (`fixed(1)/1000`), with the nearest caplab
//! distribution for each.

use anyhow::{Context, Result, bail};

use crate::workload::profile::Distribution;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Family {
    Fixed,
    Uniform,
    Gaussian,
    Exp,
    Extreme,
    QExtreme,
}

/// A cassandra-stress distribution: `[~]name(min..max[,params])` or `fixed(n)`.
#[derive(Debug, Clone, Copy)]
pub struct Dist {
    pub kind: Family,
    pub min: u64,
    pub max: u64,
    pub inverted: bool,
}

impl Dist {
    pub fn parse(text: &str) -> Result<Dist> {
        let t = text.trim();
        let (inverted, t) = match t.strip_prefix('~') {
            Some(rest) => (true, rest.trim()),
            None => (false, t),
        };
        if let Ok(n) = number(t) {
            return Ok(Dist {
                kind: Family::Fixed,
                min: n,
                max: n,
                inverted,
            });
        }
        let expected = "expected a distribution like fixed(10), uniform(1..100), gaussian(1..100), exp(1..100) or extreme(1..100,1.5)";
        let (name, args) = t.split_once('(').with_context(|| expected.to_string())?;
        let args = args.strip_suffix(')').with_context(|| expected.to_string())?;
        let kind = match name.trim().to_ascii_lowercase().as_str() {
            "fixed" => Family::Fixed,
            "uniform" => Family::Uniform,
            "gaussian" | "gauss" | "normal" | "norm" => Family::Gaussian,
            "exp" => Family::Exp,
            "extreme" | "extr" | "weibull" => Family::Extreme,
            "qextreme" => Family::QExtreme,
            other => bail!("unknown distribution '{other}': {expected}"),
        };
        let range = args.split(',').next().unwrap_or_default().trim();
        let (min, max) = match (kind, range.split_once("..")) {
            (Family::Fixed, None) => {
                let n = number(range)?;
                (n, n)
            }
            (_, Some((a, b))) => (number(a)?, number(b)?),
            _ => bail!("{expected}"),
        };
        if min > max {
            bail!("its minimum {min} is above its maximum {max}");
        }
        Ok(Dist {
            kind,
            min,
            max,
            inverted,
        })
    }

    /// `DIST/denominator`, as in `select: fixed(1)/1000`.
    pub fn parse_ratio(text: &str) -> Result<(Dist, f64)> {
        let (d, denominator) = text
            .rsplit_once('/')
            .context("expected a ratio like fixed(1)/1000 or uniform(1..10)/10")?;
        let denominator = number(denominator)? as f64;
        if denominator == 0.0 {
            bail!("the denominator is 0");
        }
        Ok((Dist::parse(d)?, denominator))
    }

    pub fn span(&self) -> u64 {
        self.max - self.min + 1
    }

    pub fn mean(&self) -> f64 {
        match self.kind {
            Family::Fixed => self.max as f64,
            _ => (self.min as f64 + self.max as f64) / 2.0,
        }
    }

    /// The nearest caplab distribution over a population, noting an approximation.
    pub fn distribution(&self, at: &str, notes: &mut Vec<String>) -> Distribution {
        self.note_inverted(at, notes);
        match self.kind {
            Family::Uniform | Family::Fixed => Distribution::Uniform,
            Family::Gaussian => {
                notes.push(format!("{at}: gaussian with caplab's spread (sd = range / 6)"));
                Distribution::Gaussian
            }
            Family::Exp => {
                notes.push(format!("{at}: exponential with caplab's mean (range / 8)"));
                Distribution::Exponential
            }
            Family::Extreme | Family::QExtreme => {
                notes.push(format!("{at}: approximated by zipf (exponent 1.1)"));
                Distribution::Zipf
            }
        }
    }

    pub fn note_inverted(&self, at: &str, notes: &mut Vec<String>) {
        if self.inverted {
            notes.push(format!(
                "{at}: '~' (inverted) is not mapped; the distribution is used as written"
            ));
        }
    }
}

/// A whole number with an optional k, m or b (billion) suffix.
pub fn number(s: &str) -> Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000),
        Some('m') => (&t[..t.len() - 1], 1_000_000),
        Some('b') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: f64 = digits.parse().map_err(|_| anyhow::anyhow!("'{s}' is not a number"))?;
    if n < 0.0 || !n.is_finite() {
        bail!("'{s}' is not a positive number");
    }
    Ok((n * mult as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_parse_like_cassandra_stress() {
        let d = Dist::parse("uniform(1..10M)").unwrap();
        assert_eq!((d.kind, d.min, d.max), (Family::Uniform, 1, 10_000_000));
        assert_eq!(Dist::parse("~exp(1..100B)").unwrap().max, 100_000_000_000);
        assert!(Dist::parse("~exp(1..100)").unwrap().inverted);
        assert_eq!(Dist::parse("gaussian(1..100,5)").unwrap().kind, Family::Gaussian);
        assert_eq!(Dist::parse("extr(1..100,1.5)").unwrap().kind, Family::Extreme);
        assert_eq!(Dist::parse("FIXED(7)").unwrap().mean(), 7.0);
        assert_eq!(Dist::parse("12").unwrap().kind, Family::Fixed);
        let (r, den) = Dist::parse_ratio("uniform(1..10)/10").unwrap();
        assert_eq!(r.mean() / den, 0.55);
        assert!(
            Dist::parse("pareto(1..3)")
                .unwrap_err()
                .to_string()
                .contains("unknown distribution 'pareto'")
        );
        assert!(Dist::parse("uniform(9..3)").is_err());
    }
}
