//! The bank's invariant, checked: during the run by its audits (`workload::bank`), and after
//! it by reading every branch at SERIAL (with the one read-back loop) — each branch must hold
//! `BRANCH × INITIAL`, whatever transfers were applied, declined, contended or left unanswered.
//! result.json `bank`; a broken branch fails the run (exit 1).

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::readers::{Reader, again, read_all};
use crate::console::group;
use crate::engine::Stop;
use crate::workload::bank::{BRANCH, Bank, Broken, INITIAL};

/// What the audits and the closing check found (result.json `bank`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BankCheck {
    /// What every branch must hold.
    pub branch_total: i64,
    pub branches: u64,
    /// Audits answered during the run, and those that found a branch off its total.
    pub audits: u64,
    pub audits_broken: u64,
    /// Branches read after the run, those off their total, and those no read answered.
    pub checked: u64,
    pub broken: u64,
    pub unreadable: u64,
    /// The sum over the branches read after the run, and what they must hold.
    pub total: i64,
    pub expected: i64,
    /// The first broken branches the audits saw, then the first the closing check found.
    pub audit_examples: Vec<Broken>,
    pub examples: Vec<Broken>,
    /// A stop (Ctrl-C) cut the closing check short (or it did not run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    pub elapsed_s: f64,
}

impl BankCheck {
    /// Whether the invariant was seen broken (by an audit or the closing check), or a branch
    /// could not be read to tell: the run then fails (exit 1).
    pub fn fails(&self) -> bool {
        self.audits_broken > 0 || self.broken > 0 || self.unreadable > 0
    }

    /// One line for the summary.
    pub fn line(&self) -> String {
        let after = if self.stopped {
            format!(
                "closing check stopped after {} of {} branches",
                group(self.checked as f64),
                group(self.branches as f64)
            )
        } else if self.broken == 0 {
            format!(
                "all {} branches read hold {} after the run (SERIAL){}",
                group(self.checked as f64),
                group(self.branch_total as f64),
                unreadable(self.unreadable)
            )
        } else {
            format!(
                "BROKEN: {} of {} branches off {} after the run (SERIAL), total {} against {} ({:+}){}",
                group(self.broken as f64),
                group(self.checked as f64),
                group(self.branch_total as f64),
                group(self.total as f64),
                group(self.expected as f64),
                self.total - self.expected,
                unreadable(self.unreadable)
            )
        };
        format!(
            "{after}; {} audits during it, {} broken",
            group(self.audits as f64),
            group(self.audits_broken as f64)
        )
    }
}

fn unreadable(n: u64) -> String {
    match n {
        0 => String::new(),
        n => format!(", {n} unreadable (no answer in {} tries)", super::readers::TRIES),
    }
}

struct Checker {
    bank: Arc<Bank>,
    ids: Vec<i32>,
    found: BankCheck,
}

impl Reader for Checker {
    type Tally = BankCheck;

    async fn read(&mut self, n: u64) -> bool {
        if n >= self.bank.options.branches() {
            return false;
        }
        let mut tries = 0;
        loop {
            match self.bank.branch_total(n, &mut self.ids).await {
                Ok((total, _)) => {
                    self.found.checked += 1;
                    self.found.total += total;
                    self.found.expected += self.found.branch_total;
                    if total != self.found.branch_total {
                        self.found.broken += 1;
                        self.found.examples.push(Broken {
                            branch: n,
                            total,
                            at_s: 0.0,
                        });
                    }
                    return true;
                }
                Err(kind) if again(kind, &mut tries).await => continue,
                Err(_) => {
                    self.found.unreadable += 1;
                    return true;
                }
            }
        }
    }

    fn tally(self) -> BankCheck {
        self.found
    }
}

/// The audits' findings and every branch read at SERIAL (`in_flight` at a time).
pub async fn check_bank(bank: &Arc<Bank>, in_flight: usize, stop: &Arc<Stop>) -> Result<BankCheck> {
    let began = Instant::now();
    let branch_total = BRANCH as i64 * INITIAL;
    let blank = BankCheck {
        branch_total,
        ..BankCheck::default()
    };
    let tallies = read_all(in_flight, stop, || Checker {
        bank: bank.clone(),
        ids: Vec::with_capacity(BRANCH as usize),
        found: blank.clone(),
    })
    .await?;
    let mut all = blank;
    all.branches = bank.options.branches();
    all.audits = bank.audits.done.load(Ordering::Relaxed);
    all.audits_broken = bank.audits.broken.load(Ordering::Relaxed);
    all.audit_examples = bank.audits.examples.lock().expect("audit examples").clone();
    for t in tallies {
        all.checked += t.checked;
        all.broken += t.broken;
        all.unreadable += t.unreadable;
        all.total += t.total;
        all.expected += t.expected;
        all.examples.extend(t.examples);
    }
    all.examples.sort_by_key(|b| b.branch);
    all.examples.truncate(10);
    all.stopped = stop.is_requested();
    all.elapsed_s = began.elapsed().as_secs_f64();
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_held_and_what_broke() {
        let mut c = BankCheck {
            branch_total: 10_000,
            branches: 100,
            audits: 1_234,
            checked: 100,
            total: 1_000_000,
            expected: 1_000_000,
            ..BankCheck::default()
        };
        assert_eq!(
            c.line(),
            "all 100 branches read hold 10,000 after the run (SERIAL); 1,234 audits during it, 0 broken"
        );
        assert!(!c.fails());
        (c.broken, c.total, c.audits_broken) = (1, 1_000_007, 3);
        assert!(c.fails());
        assert_eq!(
            c.line(),
            "BROKEN: 1 of 100 branches off 10,000 after the run (SERIAL), total 1,000,007 against 1,000,000 (+7); 1,234 audits during it, 3 broken"
        );
    }
}
