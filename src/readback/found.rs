//! What `--validate` asks and what it found (result.json `validation`).

use scylla::statement::Consistency;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `--validate` asks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValidateOptions {
    /// The share of acknowledged operations read back (1: all).
    pub fraction: f64,
    /// None: the write's when it overlaps itself, else ALL.
    pub consistency: Option<Consistency>,
}

/// Parses `--validate`'s value: `all`, a fraction (`0.1`) or a share (`10%`).
pub fn parse_fraction(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    let v = if t.eq_ignore_ascii_case("all") {
        Some(1.0)
    } else if let Some(p) = t.strip_suffix('%') {
        p.trim().parse::<f64>().ok().map(|p| p / 100.0)
    } else {
        t.parse::<f64>().ok()
    };
    match v {
        Some(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!(
            "'{text}' is not a share of the writes to read back: give all, a fraction in (0, 1] such as 0.1, or a percentage such as 10%"
        )),
    }
}

/// The read consistency that sees every acknowledged write: the write's own when two of it
/// overlap (R + W > RF), else ALL.
pub fn read_consistency(write: Consistency, rf: u32) -> Consistency {
    let needs = |c: Consistency| -> Option<u32> {
        match c {
            Consistency::One | Consistency::LocalOne => Some(1),
            Consistency::Two => Some(2),
            Consistency::Three => Some(3),
            Consistency::Quorum | Consistency::LocalQuorum | Consistency::EachQuorum => Some(rf / 2 + 1),
            Consistency::All => Some(rf),
            _ => None,
        }
    };
    match needs(write) {
        Some(w) if 2 * w > rf => write,
        _ => Consistency::All,
    }
}

/// What reading back found (result.json `validation`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Validation {
    /// As read (`Quorum`).
    pub consistency: String,
    pub fraction: f64,
    /// Acknowledged operations read back, and their rows.
    pub operations: u64,
    pub rows: u64,
    pub found: u64,
    pub missing: u64,
    /// Rows read back with values other than those written.
    pub wrong: u64,
    /// Operations whose read failed, by error kind (their rows are in none of the counts).
    pub unreadable: BTreeMap<String, u64>,
    /// Reads tried again after a timeout or an unavailable or overloaded coordinator (each
    /// read at most `readers::TRIES` times; one that never answered is unreadable).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u64,
    /// Operations sent and never acknowledged (failed, timed out, or cut off by the end): may
    /// or may not have been applied; not read back.
    pub unknown: u64,
    /// The first operations (by index) with a missing or wrong row.
    pub examples: Vec<u64>,
    /// The table held rows before the run: an earlier run's identical rows can hide a lost
    /// write of this one (`--truncate` starts from an empty table).
    #[serde(default)]
    pub table_had_rows: bool,
    pub elapsed_s: f64,
    /// A stop (Ctrl-C) cut the read-back short: the counts cover only what was read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// A counter workload's totals: then `rows` are counter rows, `found` those within their
    /// bounds, `missing` those below (acknowledged increments lost), `wrong` those above (an
    /// increment counted twice), `operations` the acknowledged increments and `unknown` those
    /// sent without an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterTotals>,
    /// A claims workload's (`INSERT … IF NOT EXISTS`): then `rows` are the rows a claim won,
    /// `found` those there with one winner, `missing` those absent, `wrong` those won twice,
    /// `operations` the claims applied and `unknown` those sent without an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<ClaimTotals>,
    /// A profile of plain writes and deletes: then `rows` are the rows the run left in a known
    /// state, `found` those as it left them (written values there, deleted rows absent),
    /// `missing` written rows absent, `wrong` rows with other values or back after a delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain: Option<PlainTotals>,
}

/// A plain-writes profile's rows beyond the counts: those a delete removed (judged absent),
/// those not judged (written and deleted in the run, or touched only by unanswered
/// operations), and the columns compared (those the writes bind).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PlainTotals {
    pub deleted: u64,
    pub not_judged: u64,
    pub columns: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A claims workload's claims: applied (each the winner of its row), and answered as not
/// applied (the row was taken).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct ClaimTotals {
    pub applied: u64,
    pub not_applied: u64,
}

/// The sums over every counter row checked: what the acknowledged increments add up to, that
/// plus the unknown ones, and what was read.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct CounterTotals {
    pub low: i64,
    pub high: i64,
    pub read: i64,
}

impl Validation {
    /// A read-back's tally before its rows: read at `consistency`, a `fraction` of them, for
    /// `operations` acknowledged and `unknown` unanswered operations.
    pub fn begun(consistency: Consistency, fraction: f64, operations: u64, unknown: u64) -> Validation {
        Validation {
            consistency: format!("{consistency:?}"),
            fraction,
            operations,
            unknown,
            ..Validation::default()
        }
    }

    /// Records how long the read-back took since `began`, and whether `stop` cut it short.
    pub fn finish(&mut self, began: std::time::Instant, stop: &crate::engine::Stop) {
        self.elapsed_s = began.elapsed().as_secs_f64();
        self.stopped = stop.is_requested();
    }

    /// Adds `other`'s counts (another reader's, or one operation's) to these; examples too.
    pub fn add(&mut self, other: Validation) {
        self.operations += other.operations;
        self.rows += other.rows;
        self.found += other.found;
        self.missing += other.missing;
        self.wrong += other.wrong;
        self.unknown += other.unknown;
        self.retried += other.retried;
        for (k, n) in other.unreadable {
            *self.unreadable.entry(k).or_default() += n;
        }
        self.examples.extend(other.examples);
    }

    /// One read that failed with `kind` after its tries.
    pub fn count_unreadable(&mut self, kind: crate::metrics::ErrorKind) {
        *self.unreadable.entry(kind.name().to_string()).or_default() += 1;
    }

    /// Acknowledged rows not read back as written.
    pub fn lost(&self) -> u64 {
        self.missing + self.wrong
    }

    /// One line for the summary.
    pub fn line(&self) -> String {
        let unreadable: u64 = self.unreadable.values().sum();
        if let Some(c) = &self.claims {
            return format!(
                "{}; {} claims applied, {} not applied, {} unknown (not checked)  {}",
                self.head("rows claimed hold their one winner", "missing", "won twice", unreadable),
                c.applied,
                c.not_applied,
                self.unknown,
                self.verdict(unreadable)
            );
        }
        if let Some(t) = &self.plain {
            return format!(
                "{}; {} deleted and absent, {} not judged (written and deleted in the run, or never answered); columns compared: {}; {} operations unknown{}  {}",
                self.head(
                    "rows as the run left them",
                    "missing",
                    "wrong (other values, or back after a delete)",
                    unreadable
                ),
                t.deleted,
                t.not_judged,
                t.columns.join(", "),
                self.unknown,
                if self.table_had_rows {
                    "; the tables held rows before the run (a populate phase's or an earlier run's), which can hide a lost write of the same row"
                } else {
                    ""
                },
                self.verdict(unreadable)
            );
        }
        if let Some(c) = &self.counters {
            return format!(
                "{}; totals read {} for {} acknowledged increments (at most {} with the {} unknown){}  {}",
                self.head(
                    "counter rows within their bounds",
                    "below (acknowledged increments lost)",
                    "above (counted twice)",
                    unreadable
                ),
                c.read,
                c.low,
                c.high,
                self.unknown,
                if self.table_had_rows {
                    "; the table held counts before the run, so rows above their bounds are not judged"
                } else {
                    ""
                },
                self.verdict(unreadable)
            );
        }
        format!(
            "{} of {} acknowledged rows read back as written at {}{}: {} missing, {} wrong{}; {} operations unknown (not acknowledged, not checked){}  {}",
            crate::console::group(self.found as f64),
            crate::console::group(self.rows as f64),
            self.consistency,
            if self.fraction < 1.0 {
                format!(" ({:.1} % of operations)", self.fraction * 100.0)
            } else {
                String::new()
            },
            self.missing,
            self.wrong,
            self.unanswered(unreadable, "operations"),
            self.unknown,
            if self.table_had_rows {
                "; the table held rows before the run, which can hide a lost write (--truncate empties it first)"
            } else {
                ""
            },
            self.verdict(unreadable)
        )
    }

    /// "found of rows `what` at consistency: missing `missing`, wrong `wrong`", and the rows
    /// unreadable.
    fn head(&self, what: &str, missing: &str, wrong: &str, unreadable: u64) -> String {
        format!(
            "{} of {} {what} at {}: {} {missing}, {} {wrong}{}",
            crate::console::group(self.found as f64),
            crate::console::group(self.rows as f64),
            self.consistency,
            self.missing,
            self.wrong,
            self.unanswered(unreadable, "rows")
        )
    }

    /// ", N `what` unreadable" and ", M reads tried again", where there are any.
    fn unanswered(&self, unreadable: u64, what: &str) -> String {
        let mut out = String::new();
        if unreadable > 0 {
            out += &format!(", {unreadable} {what} unreadable");
        }
        if self.retried > 0 {
            out += &format!(", {} reads tried again after a timeout", self.retried);
        }
        out
    }

    fn verdict(&self, unreadable: u64) -> &'static str {
        if self.lost() > 0 {
            "LOST WRITES"
        } else if self.stopped {
            "STOPPED (only part read back)"
        } else if unreadable > 0 {
            "INCOMPLETE"
        } else {
            "OK"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_and_consistencies() {
        assert_eq!(parse_fraction("all"), Ok(1.0));
        assert_eq!(parse_fraction("10%"), Ok(0.1));
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        for bad in ["0", "1.5", "x", "-1%"] {
            assert!(parse_fraction(bad).unwrap_err().contains("10%"), "{bad}");
        }
        // Two of the write overlap: RF 1 at ONE, QUORUM at any RF.
        assert_eq!(read_consistency(Consistency::LocalOne, 1), Consistency::LocalOne);
        assert_eq!(read_consistency(Consistency::Quorum, 3), Consistency::Quorum);
        assert_eq!(read_consistency(Consistency::One, 3), Consistency::All);
        assert_eq!(read_consistency(Consistency::Any, 1), Consistency::All);
        assert_eq!(read_consistency(Consistency::Two, 3), Consistency::Two);
    }

    #[test]
    fn counters_and_claims_say_what_their_counts_mean() {
        let mut v = Validation {
            consistency: "Serial".into(),
            rows: 50,
            found: 47,
            missing: 2,
            wrong: 1,
            claims: Some(ClaimTotals {
                applied: 51,
                not_applied: 949,
            }),
            ..Validation::default()
        };
        let line = v.line();
        assert!(
            line.starts_with("47 of 50 rows claimed hold their one winner at Serial: 2 missing, 1 won twice"),
            "{line}"
        );
        assert!(
            line.contains("51 claims applied, 949 not applied") && line.ends_with("LOST WRITES"),
            "{line}"
        );
        v.claims = None;
        v.counters = Some(CounterTotals {
            low: 10,
            high: 12,
            read: 11,
        });
        v.missing = 0;
        v.wrong = 0;
        v.found = 50;
        let line = v.line();
        assert!(
            line.contains("0 below (acknowledged increments lost), 0 above") && line.ends_with("OK"),
            "{line}"
        );
        assert!(
            line.contains("totals read 11 for 10 acknowledged increments (at most 12"),
            "{line}"
        );
    }
}
