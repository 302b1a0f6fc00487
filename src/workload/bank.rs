//! The bank: transfers between accounts whose totals must not change, as Accord transactions
//! (`bank-accord`, Cassandra 6.0) or as lightweight transactions (`bank-paxos`, the Paxos way a
//! user writes an atomic transfer today). Accounts are grouped in branches of [`BRANCH`]; a
//! transfer moves 1-10 from one account to another of the same branch, so every branch keeps
//! `BRANCH × INITIAL` (the invariant), and an audit reads one branch at SERIAL and checks it.
//!
//! - Accord: one account per partition (`transactional_mode = 'full'`); a transfer is one
//!   transaction over two partitions that reads the source and moves the amount if it is there.
//! - Paxos: a branch is one partition, its accounts rows; a transfer reads both at SERIAL and
//!   writes both in one conditional batch (`IF balance = <as read>`), which another transfer
//!   in between makes not applied: a contended transfer, counted apart as the user would retry
//!   it. Two partitions cannot be written atomically with Paxos, hence the branch partition.
//!
//! Operation `i` is an audit or a transfer by weight (`--ops transfer=19,audit=1`, the default),
//! and its branch, accounts and amount are drawn from hashes of `i` (and `--seed`).

use anyhow::{Context, Result, bail};
use scylla::client::session::Session;
use scylla::statement::Consistency;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

mod options;

pub use options::{BankOptions, Txn};

use super::schema;
use super::values::mix;
use crate::client::classify;
use crate::engine::{Outcome, Workload};
use crate::metrics::ErrorKind;

/// Accounts per branch.
pub const BRANCH: u64 = 10;
/// Every account's balance before the run.
pub const INITIAL: i64 = 1_000;
/// Transfers move 1..=MAX_AMOUNT.
const MAX_AMOUNT: u64 = 10;
/// Tries of an opening write that timed out or found replicas unavailable.
const OPEN_TRIES: u32 = 10;
/// Audits kept as examples of a broken invariant.
const EXAMPLES: usize = 10;

/// The operation types, in this order for both kinds of transaction.
pub const OPS: [&str; 4] = ["transfer", "transfer_declined", "transfer_not_applied", "audit"];
const TRANSFER: usize = 0;
const DECLINED: usize = 1;
const NOT_APPLIED: usize = 2;
const AUDIT: usize = 3;

/// One transfer: a branch, two accounts in it (never the same) and an amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub branch: u64,
    pub from: u64,
    pub to: u64,
    pub amount: i64,
}

/// A branch whose total was not what it must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Broken {
    pub branch: u64,
    pub total: i64,
    /// An audit's: seconds since the accounts were opened (the warm-up and the opening's few
    /// seconds included); the closing check's: 0.
    pub at_s: f64,
}

/// What the audits during a run found.
#[derive(Debug, Default)]
pub struct Audits {
    pub done: AtomicU64,
    pub broken: AtomicU64,
    pub examples: Mutex<Vec<Broken>>,
}

/// The prepared bank, ready to drive.
pub struct Bank {
    session: Arc<Session>,
    pub options: BankOptions,
    transfer: PreparedStatement,
    /// Paxos: the read before the batch, and the batch of two conditional updates.
    batch: Option<Batch>,
    audit: PreparedStatement,
    pub audits: Audits,
    began: std::time::Instant,
    salt: u64,
}

/// Per worker: the accounts an Accord audit reads (reused).
pub struct Worker {
    ids: Vec<i32>,
}

async fn prepared(session: &Session, cql: &str, consistency: Consistency) -> Result<PreparedStatement> {
    let mut s = session
        .prepare(cql)
        .await
        .with_context(|| format!("the server rejected: {cql}"))?;
    s.set_consistency(consistency);
    s.set_serial_consistency(Some(scylla::statement::SerialConsistency::Serial));
    Ok(s)
}

impl Bank {
    /// Creates the keyspace and table and opens every account at [`INITIAL`] (at QUORUM), so a
    /// run starts from a bank that holds, whatever an earlier run left.
    pub async fn setup(session: Arc<Session>, options: BankOptions, recreate: bool) -> Result<Bank> {
        let ks = &options.keyspace;
        schema::ensure_keyspace(&session, ks, &options.replication(), true, recreate).await?;
        let ddl = &options.ddl()[1];
        if let Err(e) = session.query_unpaged(schema::ddl(ddl.as_str()), ()).await {
            let text = format!("{e}");
            if options.txn == Txn::Accord && (text.contains("transactional_mode") || text.contains("ccord")) {
                bail!(
                    "the server cannot make an Accord table ({text}): start the node with Accord on \
                     (caplab node start --version 6.0-alpha2 --set accord.enabled=true)"
                );
            }
            return Err(e).with_context(|| format!("the server rejected: {ddl}"));
        }
        let _ = session.await_schema_agreement().await;
        let cql = options.statements();
        let (transfer, batch, audit, open) = match options.txn {
            Txn::Accord => (
                prepared(&session, &cql[0], Consistency::Quorum).await?,
                None,
                prepared(&session, &cql[1], Consistency::Serial).await?,
                prepared(&session, &cql[2], Consistency::Quorum).await?,
            ),
            Txn::Paxos => {
                let update = prepared(&session, &cql[1], Consistency::Quorum).await?;
                let mut batch = Batch::new(BatchType::Logged);
                batch.append_statement(update.clone());
                batch.append_statement(update);
                batch.set_consistency(Consistency::Quorum);
                batch.set_serial_consistency(Some(scylla::statement::SerialConsistency::Serial));
                (
                    prepared(&session, &cql[0], Consistency::Serial).await?,
                    Some(batch),
                    prepared(&session, &cql[2], Consistency::Serial).await?,
                    prepared(&session, &cql[3], Consistency::Quorum).await?,
                )
            }
        };
        open_accounts(&session, &options, &open).await?;
        Ok(Bank {
            session,
            salt: mix(options.seed),
            options,
            transfer,
            batch,
            audit,
            audits: Audits::default(),
            began: std::time::Instant::now(),
        })
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Operation `i`'s transfer (what it would move if it is one).
    pub fn pick(&self, i: u64) -> Pick {
        pick(i, self.salt, self.options.branches())
    }

    fn is_audit(&self, i: u64) -> bool {
        let o = &self.options;
        mix(i ^ self.salt ^ 0x6175_6469_7473) % (o.transfer_weight + o.audit_weight) >= o.transfer_weight
    }

    /// Reads branch `b`'s total at SERIAL (`ids` is a reused buffer).
    pub async fn branch_total(&self, b: u64, ids: &mut Vec<i32>) -> Result<(i64, u64), ErrorKind> {
        let result = match self.options.txn {
            Txn::Accord => {
                ids.clear();
                ids.extend((0..BRANCH).map(|a| (b * BRANCH + a) as i32));
                self.session.execute_unpaged(&self.audit, (&*ids,)).await
            }
            Txn::Paxos => self.session.execute_unpaged(&self.audit, (b as i32,)).await,
        };
        let rows = result
            .map_err(|e| classify(&e))?
            .into_rows_result()
            .map_err(|_| ErrorKind::Other)?;
        let (mut total, mut n) = (0i64, 0u64);
        for row in rows.rows::<(Option<i64>,)>().map_err(|_| ErrorKind::Other)? {
            let (balance,) = row.map_err(|_| ErrorKind::Other)?;
            total += balance.unwrap_or(0);
            n += 1;
        }
        Ok((total, n))
    }

    async fn audit(&self, w: &mut Worker, i: u64) -> Outcome {
        let b = self.pick(i).branch;
        let result = self.branch_total(b, &mut w.ids).await;
        if let Ok((total, _)) = result {
            self.audits.done.fetch_add(1, Ordering::Relaxed);
            if total != BRANCH as i64 * INITIAL {
                self.audits.broken.fetch_add(1, Ordering::Relaxed);
                let mut ex = self.audits.examples.lock().expect("audit examples");
                if ex.len() < EXAMPLES {
                    ex.push(Broken {
                        branch: b,
                        total,
                        at_s: self.began.elapsed().as_secs_f64(),
                    });
                }
            }
        }
        Outcome {
            op: AUDIT,
            result: result.map(|(_, n)| (n, 1)),
        }
    }

    async fn transfer_accord(&self, p: Pick) -> Outcome {
        let (from, to) = ((p.branch * BRANCH + p.from) as i32, (p.branch * BRANCH + p.to) as i32);
        let values = (from, p.amount, p.amount, from, p.amount, to);
        let op = match self.session.execute_unpaged(&self.transfer, values).await {
            Err(e) => return failed(&e),
            Ok(r) => match r
                .into_rows_result()
                .ok()
                .and_then(|r| r.maybe_first_row::<(Option<i64>,)>().ok())
            {
                Some(Some((Some(balance),))) if balance >= p.amount => TRANSFER,
                _ => DECLINED,
            },
        };
        Outcome { op, result: Ok((2, 2)) }
    }

    async fn transfer_paxos(&self, p: Pick) -> Outcome {
        let (b, from, to) = (p.branch as i32, p.from as i32, p.to as i32);
        let read = match self.session.execute_unpaged(&self.transfer, (b, from, to)).await {
            Err(e) => return failed(&e),
            Ok(r) => r,
        };
        let (mut have_from, mut have_to) = (None, None);
        if let Ok(rows) = read.into_rows_result()
            && let Ok(iter) = rows.rows::<(i32, Option<i64>)>()
        {
            for (account, balance) in iter.flatten() {
                if account == from {
                    have_from = balance;
                } else if account == to {
                    have_to = balance;
                }
            }
        }
        let (f, t) = match (have_from, have_to) {
            (Some(f), Some(t)) if f >= p.amount => (f, t),
            _ => {
                return Outcome {
                    op: DECLINED,
                    result: Ok((0, 1)),
                };
            }
        };
        let batch = self.batch.as_ref().expect("a Paxos bank has its batch");
        let values = ((f - p.amount, b, from, f), (t + p.amount, b, to, t));
        match self.session.batch(batch, values).await {
            Err(e) => failed(&e),
            Ok(r) => match super::profile_workload::applied(r) {
                true => Outcome {
                    op: TRANSFER,
                    result: Ok((2, 1)),
                },
                false => Outcome {
                    op: NOT_APPLIED,
                    result: Ok((0, 1)),
                },
            },
        }
    }
}

fn failed(e: &scylla::errors::ExecutionError) -> Outcome {
    Outcome {
        op: TRANSFER,
        result: Err(classify(e)),
    }
}

/// Operation `i`'s transfer among `branches` branches: the accounts differ.
pub fn pick(i: u64, salt: u64, branches: u64) -> Pick {
    let h = mix(i ^ salt);
    let g = mix(h);
    let from = g % BRANCH;
    let to = (from + 1 + (g / BRANCH) % (BRANCH - 1)) % BRANCH;
    Pick {
        branch: h % branches,
        from,
        to,
        amount: 1 + ((g >> 32) % MAX_AMOUNT) as i64,
    }
}

/// Writes every account's opening balance, 64 at a time.
async fn open_accounts(session: &Arc<Session>, o: &BankOptions, open: &PreparedStatement) -> Result<()> {
    let mut writes: tokio::task::JoinSet<Result<_, scylla::errors::ExecutionError>> = tokio::task::JoinSet::new();
    let fail = || format!("cannot open the bank's {} accounts at {INITIAL} each", o.accounts);
    for a in 0..o.accounts {
        if writes.len() >= 64
            && let Some(done) = writes.join_next().await
        {
            done.context("an opening write's task failed")?.with_context(fail)?;
        }
        let (session, open, txn) = (session.clone(), open.clone(), o.txn);
        writes.spawn(async move {
            let (b, n) = ((a / BRANCH) as i32, (a % BRANCH) as i32);
            let mut tries = 0;
            loop {
                let r = match txn {
                    Txn::Accord => session.execute_unpaged(&open, (a as i32, INITIAL)).await,
                    Txn::Paxos => session.execute_unpaged(&open, (b, n, INITIAL)).await,
                };
                // A table just made on a fresh cluster times Accord's first writes out for some
                // seconds (three 6.0-alpha2 nodes): try again, for up to about 30 s.
                match r {
                    Err(e) if tries < OPEN_TRIES && classify(&e).is_transient() => {
                        tries += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(500 * u64::from(tries))).await;
                    }
                    r => return r,
                }
            }
        });
    }
    while let Some(done) = writes.join_next().await {
        done.context("an opening write's task failed")?.with_context(fail)?;
    }
    Ok(())
}

impl Workload for Bank {
    type Worker = Worker;

    fn op_names(&self) -> Vec<String> {
        OPS.iter().map(|s| s.to_string()).collect()
    }

    fn worker(&self, _id: usize) -> Worker {
        Worker {
            ids: Vec::with_capacity(BRANCH as usize),
        }
    }

    fn op_of(&self, i: u64) -> usize {
        if self.is_audit(i) { AUDIT } else { TRANSFER }
    }

    async fn execute(&self, w: &mut Worker, i: u64) -> Outcome {
        if self.is_audit(i) {
            return self.audit(w, i).await;
        }
        let p = self.pick(i);
        match self.options.txn {
            Txn::Accord => self.transfer_accord(p).await,
            Txn::Paxos => self.transfer_paxos(p).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_stays_in_its_branch_between_two_accounts() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..100_000 {
            let p = pick(i, 7, 100);
            assert!(p.branch < 100 && p.from < BRANCH && p.to < BRANCH);
            assert_ne!(p.from, p.to, "operation {i}");
            assert!((1..=MAX_AMOUNT as i64).contains(&p.amount));
            seen.insert((p.from, p.to));
        }
        assert_eq!(
            seen.len() as u64,
            BRANCH * (BRANCH - 1),
            "every ordered pair of accounts occurs"
        );
        assert_eq!(
            pick(5, 7, 100),
            pick(5, 7, 100),
            "operation i is the same transfer each run"
        );
        assert_ne!(pick(5, 7, 100), pick(5, 8, 100), "another seed, other transfers");
    }

    fn options() -> BankOptions {
        BankOptions {
            txn: Txn::Paxos,
            keyspace: "bank".into(),
            accounts: 1000,
            replication_factor: 1,
            transfer_weight: 19,
            audit_weight: 1,
            seed: 0,
        }
    }

    #[test]
    fn accounts_come_in_branches_and_weights_name_the_two_operations() {
        assert!(options().validate().is_ok());
        let mut o = options();
        o.accounts = 1005;
        assert!(o.validate().unwrap_err().to_string().contains("multiple of 10"));
        o.accounts = 5;
        assert!(o.validate().is_err());
        let mut o = options();
        o.set_weights("transfer=3, audit=1").unwrap();
        assert_eq!((o.transfer_weight, o.audit_weight), (3, 1));
        o.set_weights("audit=1").unwrap();
        assert_eq!((o.transfer_weight, o.audit_weight), (0, 1));
        assert!(
            o.set_weights("read=1")
                .unwrap_err()
                .to_string()
                .contains("transfer and audit")
        );
        assert!(o.set_weights("transfer=x").is_err());
        o.set_weights("transfer=0").unwrap();
        assert!(o.validate().is_err());
    }

    #[test]
    fn the_statements_a_user_reads_are_the_ones_run() {
        let mut o = options();
        let shown = include_str!("../../workloads/bank-paxos.cql");
        for s in o.ddl().iter().skip(1).chain(&o.statements()) {
            assert!(shown.contains(&s.replace("bank.", "")), "bank-paxos.cql lacks: {s}");
        }
        o.txn = Txn::Accord;
        let shown = include_str!("../../workloads/bank-accord.cql");
        for s in o.ddl().iter().skip(1).chain(&o.statements()) {
            let s = s.replace("bank.", "");
            let squeezed = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(squeezed(shown).contains(&squeezed(&s)), "bank-accord.cql lacks: {s}");
        }
    }
}
