//! Reading back what the cluster acknowledged (`--validate`, `caplab validate DIR`): after the
//! measured window (and after any fault has been undone), the writes the cluster acknowledged
//! are read back at a consistency that overlaps theirs and judged. Nothing is kept during the
//! run but 2 bits per operation (`engine::acks`: acknowledged, not applied, unknown, never
//! sent), saved beside the results (`fates`), so a run can be checked again later: after a
//! repair, a node replacement, an upgrade.
//!
//! What each workload's writes imply, and how to read one of them, is the workload's own
//! knowledge (`workload::e1`'s `read_back`, `workload::profile_workload`'s expected counts and claims);
//! this folder owns the rest, once:
//! - `readers`: the one concurrent loop (`in_flight` readers over the items, stopped by Ctrl-C
//!   with what was read kept);
//! - `e1`: E1's rows, recomputed from each acknowledged operation's index;
//! - `counters`: counter rows against their bounds and rows claimed by lightweight transactions
//!   (one winner, there);
//! - `plain`: rows of profiles whose writes are plain writes and whole-row deletes (written
//!   values there, deleted rows absent);
//! - `bank`: the bank's invariant, every branch's total read at SERIAL after the run (with its
//!   audits' findings during it);
//! - `found`: what `--validate` asks and what it found (result.json `validation`);
//! - `fates`: the operations' fates on disk and the sample a fraction picks.
//!
//! Writes that failed or timed out are *unknown* (they may or may not have been applied) and
//! counted apart; never-sent ones are not writes. Running the measured step with its fates
//! tracked is `measure::validated`'s.

mod bank;
mod counters;
mod e1;
mod fates;
mod found;
mod plain;
mod readers;

pub use bank::{BankCheck, check_bank};
pub use counters::read_back_profile;
pub use e1::read_back_e1;
pub use fates::{ACKS_FILE, load_acks, sampled, save_acks};
pub use found::{
    ClaimTotals, CounterTotals, PlainTotals, ValidateOptions, Validation, parse_fraction, read_consistency,
};
