//! What a bank run is: how its transfers are made atomic (`Txn`), its accounts and weights
//! (`BankOptions`, recorded in result.json), and the statements it runs, shown to users as run.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::BRANCH;

/// How a transfer is made atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Txn {
    Accord,
    Paxos,
}

impl Txn {
    pub fn workload(self) -> &'static str {
        match self {
            Txn::Accord => "bank-accord",
            Txn::Paxos => "bank-paxos",
        }
    }

    /// The table the accounts live in.
    pub fn table(self) -> &'static str {
        match self {
            Txn::Accord => "accounts",
            Txn::Paxos => "branches",
        }
    }
}

/// What result.json records of a bank run (`config.workload.bank`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankOptions {
    pub txn: Txn,
    pub keyspace: String,
    pub accounts: u64,
    pub replication_factor: u32,
    /// Weights of transfers and audits.
    pub transfer_weight: u64,
    pub audit_weight: u64,
    pub seed: u64,
}

impl BankOptions {
    pub fn validate(&self) -> Result<()> {
        if self.accounts < BRANCH || !self.accounts.is_multiple_of(BRANCH) {
            bail!(
                "--partitions {}: the bank's accounts come in branches of {BRANCH}; give a multiple of {BRANCH} (default 1000)",
                self.accounts
            );
        }
        if self.accounts / BRANCH > i32::MAX as u64 / BRANCH {
            bail!("--partitions {}: at most {} accounts", self.accounts, i32::MAX);
        }
        if self.transfer_weight + self.audit_weight == 0 {
            bail!("--ops: give transfer or audit a weight above 0 (e.g. transfer=19,audit=1)");
        }
        Ok(())
    }

    /// Reads `--ops transfer=W,audit=W` (an operation not named does not run).
    pub fn set_weights(&mut self, text: &str) -> Result<()> {
        let (mut transfer, mut audit) = (0, 0);
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, w)) = part.split_once('=') else {
                bail!("--ops {text}: write NAME=WEIGHT, e.g. transfer=19,audit=1");
            };
            let w: u64 = w
                .trim()
                .parse()
                .with_context(|| format!("--ops {text}: '{w}' is not a whole weight"))?;
            match name.trim() {
                "transfer" => transfer = w,
                "audit" => audit = w,
                other => bail!("--ops {text}: the bank's operations are transfer and audit, not '{other}'"),
            }
        }
        (self.transfer_weight, self.audit_weight) = (transfer, audit);
        Ok(())
    }

    pub fn branches(&self) -> u64 {
        self.accounts / BRANCH
    }

    pub fn replication(&self) -> String {
        format!(
            "{{'class': 'SimpleStrategy', 'replication_factor': {}}}",
            self.replication_factor
        )
    }

    /// The schema statements, as run.
    pub fn ddl(&self) -> Vec<String> {
        let ks = &self.keyspace;
        let table = match self.txn {
            Txn::Accord => format!(
                "CREATE TABLE IF NOT EXISTS {ks}.accounts (id int PRIMARY KEY, balance bigint) WITH transactional_mode = 'full'"
            ),
            Txn::Paxos => format!(
                "CREATE TABLE IF NOT EXISTS {ks}.branches (branch int, account int, balance bigint, PRIMARY KEY (branch, account))"
            ),
        };
        vec![
            format!(
                "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {}",
                self.replication()
            ),
            table,
        ]
    }

    /// The statements a run prepares: its transfer (for Paxos: the read, then the batch's
    /// conditional update), the audit, and the write of an opening balance.
    pub fn statements(&self) -> Vec<String> {
        let ks = &self.keyspace;
        match self.txn {
            Txn::Accord => vec![
                format!(
                    "BEGIN TRANSACTION \
                       LET source = (SELECT balance FROM {ks}.accounts WHERE id = ?); \
                       SELECT source.balance; \
                       IF source.balance >= ? THEN \
                         UPDATE {ks}.accounts SET balance = balance - ? WHERE id = ?; \
                         UPDATE {ks}.accounts SET balance = balance + ? WHERE id = ?; \
                       END IF \
                     COMMIT TRANSACTION"
                ),
                format!("SELECT balance FROM {ks}.accounts WHERE id IN ?"),
                format!("INSERT INTO {ks}.accounts (id, balance) VALUES (?, ?)"),
            ],
            Txn::Paxos => vec![
                format!("SELECT account, balance FROM {ks}.branches WHERE branch = ? AND account IN (?, ?)"),
                format!("UPDATE {ks}.branches SET balance = ? WHERE branch = ? AND account = ? IF balance = ?"),
                format!("SELECT balance FROM {ks}.branches WHERE branch = ?"),
                format!("INSERT INTO {ks}.branches (branch, account, balance) VALUES (?, ?, ?)"),
            ],
        }
    }
}
