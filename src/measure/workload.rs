//! The workload a step drives: chosen from the options before anything touches the cluster
//! (a built-in, a profile file, or a cassandra-stress profile), then prepared on the target
//! (schema created, statements prepared) and populated when its profile says so.

use anyhow::{Context, Result, bail};
use std::sync::Arc;

use super::about::About;
use super::result::{RunResult, WorkloadRecord};
use super::step::Step;
use super::target::{Site, Target};
use crate::console::{group, say};
use crate::engine::{EngineConfig, LoaderSlice, Stop};
use crate::readback::check_bank;
use crate::workload::bank::{BRANCH, Bank, BankOptions, INITIAL, OPS, Txn};
use crate::workload::builtin::Runner;
use crate::workload::compaction::Compaction;
use crate::workload::e1::{E1, E1Options, E1Workload};
use crate::workload::profile::Profile;
use crate::workload::profile_workload::ProfileWorkload;
use crate::workload::replay::{Replay, ReplayOptions, Trace};
use crate::workload::schema;
use crate::workload::spread;
use crate::workload::stress;
use crate::workload::{ann, builtin};

use super::workload_options::WorkloadOptions;

/// The workload a step drives, settled before anything touches the cluster.
pub enum Choice {
    E1(E1Options, Existing),
    Profile {
        profile: Box<Profile>,
        origin: String,
        /// What a cassandra-stress profile could not carry over exactly.
        notes: Vec<String>,
        existing: Existing,
    },
    Bank(BankOptions, Existing),
    /// A captured trace, read and checked before anything connects.
    Replay(Arc<Trace>, ReplayOptions),
}

/// What becomes of what an earlier run left.
#[derive(Debug, Clone, Copy, Default)]
pub struct Existing {
    /// A keyspace (or E1's table) with other settings is dropped and created again.
    pub recreate: bool,
    /// The workload's tables are emptied before the run.
    pub truncate: bool,
}

impl Existing {
    fn of(args: &WorkloadOptions) -> Existing {
        Existing {
            recreate: args.recreate,
            truncate: args.truncate,
        }
    }
}

impl Choice {
    pub fn name(&self) -> String {
        match self {
            Choice::E1(o, _) => o.kind.name().to_string(),
            Choice::Profile { profile, origin, .. } => profile.name.clone().unwrap_or_else(|| origin.clone()),
            Choice::Bank(o, _) => o.txn.workload().to_string(),
            Choice::Replay(..) => "replay".to_string(),
        }
    }

    /// Reads and checks the workload options (and profile file); prints what a
    /// cassandra-stress profile does differently.
    pub fn of(options: &WorkloadOptions) -> Result<Choice> {
        let choice = choose(options)?;
        if let Choice::Profile { origin, notes, .. } = &choice
            && !notes.is_empty()
        {
            say(&format!(
                "{origin} is a cassandra-stress profile; what caplab does differently (also in result.json):"
            ));
            for n in notes {
                say(&format!("  - {n}"));
            }
        }
        Ok(choice)
    }
}

fn choose(args: &WorkloadOptions) -> Result<Choice> {
    if let Some(path) = &args.replay {
        let (trace, options) = super::replay::choose(path, args)?;
        return Ok(Choice::Replay(trace, options));
    }
    let profile = |profile: Profile, origin: String, notes: Vec<String>| {
        let mut profile = Box::new(profile);
        if let Some(n) = args.partitions {
            profile.partitions = n;
        }
        if let Some(w) = &args.weights {
            profile.set_weights(w).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        }
        if let Some(seed) = args.seed {
            profile.seed = seed;
        }
        profile.place(args.keyspace.as_deref(), args.replication_factor);
        profile.compaction = args.compaction.clone();
        profile.validate().map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        if args.tables != 1 || args.table_select.is_some() {
            bail!(
                "--tables spreads the built-in insert and batch workloads over many tables; {origin} names its own tables: drop --tables, or use --workload insert"
            );
        }
        Ok(Choice::Profile {
            profile,
            origin,
            notes,
            existing: Existing::of(args),
        })
    };
    if let Some(path) = &args.profile {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read profile {}", path.display()))?;
        let origin = path.display().to_string();
        if stress::is_stress_profile(&text) {
            let imported = stress::import(&text, &origin)?;
            let mut notes = imported.notes;
            if args.weights.is_none() {
                notes.push(format!(
                    "no --ops: running insert only; choose operations with e.g. --ops 'insert=1,{}=1'",
                    imported
                        .profile
                        .op_names()
                        .into_iter()
                        .find(|n| n != "insert")
                        .unwrap_or_else(|| "query".into())
                ));
            }
            return profile(imported.profile, origin, notes);
        }
        return profile(Profile::parse(&text, &origin)?, origin, Vec::new());
    }
    let builtin = builtin::find(&args.workload)?;
    match builtin.runner {
        Runner::Profile => {
            return profile(
                builtin.profile()?,
                format!("workloads/{}.yaml", builtin.name),
                Vec::new(),
            );
        }
        Runner::Bank(txn, _) => return bank(txn, args),
        Runner::E1 => {}
    }
    if args.seed.is_some() {
        bail!(
            "--seed applies to profile workloads; '{}' writes E1's fixed data (use its profile: caplab workloads show {0} > {0}.yaml)",
            builtin.name
        );
    }
    if args.weights.is_some() {
        bail!(
            "--ops chooses among a profile's operations; '{}' has one operation type (use another workload or --profile)",
            builtin.name
        );
    }
    let kind = if builtin.name == "batch" {
        E1Workload::Batch
    } else {
        E1Workload::Insert
    };
    let opts = E1Options {
        kind,
        keyspace: args.keyspace.clone().unwrap_or_else(|| "caplab".into()),
        partitions: args.partitions.unwrap_or(100_000),
        value_columns: args.value_columns,
        value_size: args.value_size,
        batch_size: args.batch_size,
        replication_factor: args.replication_factor.unwrap_or(1),
        durable_writes: args.durable_writes,
        compaction: args.compaction.is_some(),
        // A bare --compaction stays as it was recorded before strategies (history series).
        strategy: args.compaction.clone().filter(|c| *c != Compaction::default()),
        tables: args.tables,
        table_select: args.table_select.unwrap_or_default(),
    };
    opts.validate()?;
    Ok(Choice::E1(opts, Existing::of(args)))
}

/// The bank's options from the workload options: `--partitions` accounts (default 1,000),
/// `--ops transfer=W,audit=W`, `--seed`, `--keyspace` (default bank), `--replication-factor`.
fn bank(txn: Txn, args: &WorkloadOptions) -> Result<Choice> {
    if args.tables != 1 || args.table_select.is_some() {
        bail!(
            "--tables spreads the built-in insert and batch workloads over many tables; the bank has one: drop --tables"
        );
    }
    let mut o = BankOptions {
        txn,
        keyspace: args.keyspace.clone().unwrap_or_else(|| "bank".into()),
        accounts: args.partitions.unwrap_or(1000),
        replication_factor: args.replication_factor.unwrap_or(1),
        transfer_weight: 19,
        audit_weight: 1,
        seed: args.seed.unwrap_or(0),
    };
    if let Some(w) = &args.weights {
        o.set_weights(w)?;
    }
    o.validate()?;
    Ok(Choice::Bank(o, Existing::of(args)))
}

/// A workload whose schema exists on the target, ready to drive.
pub enum Prepared {
    E1(Arc<E1>, About),
    /// The workload, and its populate operation with an optional row count and concurrency.
    Profile(Arc<ProfileWorkload>, About, Option<super::populate::Populating>),
    Bank(Arc<Bank>, About),
    Replay(Arc<Replay>, About),
}

impl Prepared {
    /// Creates the schema (a rejected profile leaves none behind).
    pub async fn new(target: &Target, choice: &Choice) -> Result<Prepared> {
        let session = target.session.clone();
        Ok(match choice {
            Choice::E1(opts, existing) => {
                let workload = Arc::new(E1::setup(session.clone(), opts.clone(), existing.recreate).await?);
                if existing.truncate {
                    schema::truncate(&session, &opts.keyspace, &opts.table_names()).await?;
                    say(&format!(
                        "Emptied {}.{} (--truncate)",
                        opts.keyspace,
                        opts.table_label()
                    ));
                }
                // With many tables, the server's description is cut to the keyspace and the first
                // table, as the statements asked are.
                let described = schema::describe(&session, &opts.keyspace)
                    .await
                    .map(|all| match opts.tables {
                        1 => all,
                        _ => spread::abridged(all, &opts.keyspace, &opts.table_names()),
                    });
                let about = About {
                    name: opts.kind.name().into(),
                    record: WorkloadRecord::E1(opts.clone()),
                    schema: described.unwrap_or_else(|| opts.ddl()),
                    schema_requested: opts.ddl(),
                    statements: vec![opts.insert_cql(&opts.table(0))],
                    tables: vec![opts.table_label()],
                    tables_made: workload.tables_made().cloned(),
                };
                Prepared::E1(workload, about)
            }
            Choice::Profile {
                profile,
                origin,
                notes,
                existing,
            } => {
                profile.check_release(target.site.release.as_deref())?;
                let workload = Arc::new(ProfileWorkload::setup(session.clone(), profile, existing.recreate).await?);
                if existing.truncate {
                    schema::truncate(&session, &profile.keyspace, &workload.op_tables()).await?;
                    say(&format!(
                        "Emptied the tables of keyspace {} its operations name (--truncate)",
                        profile.keyspace
                    ));
                }
                let about = About {
                    name: profile.name.clone().unwrap_or_else(|| origin.clone()),
                    record: WorkloadRecord::Profile {
                        profile: origin.clone(),
                        definition: profile.clone(),
                        not_mapped: notes.clone(),
                    },
                    schema: schema::describe(&session, &profile.keyspace)
                        .await
                        .unwrap_or_else(|| profile.schema.clone()),
                    schema_requested: profile.schema.clone(),
                    statements: profile.operations.values().map(|o| o.cql.clone()).collect(),
                    tables: workload.op_tables(),
                    tables_made: None,
                };
                Prepared::Profile(
                    workload,
                    about,
                    profile.populate.clone().map(|op| super::populate::Populating {
                        op,
                        rows: profile.populate_rows_per_partition,
                        concurrency: profile.populate_concurrency,
                    }),
                )
            }
            Choice::Bank(o, existing) => {
                if o.txn == Txn::Accord {
                    refuse_before_accord(target.site.release.as_deref())?;
                }
                say(&format!(
                    "Opening {} accounts in {} branches of {BRANCH} at {} each ({}.{})",
                    group(o.accounts as f64),
                    group(o.branches() as f64),
                    group(INITIAL as f64),
                    o.keyspace,
                    o.txn.table()
                ));
                let workload = Arc::new(Bank::setup(session.clone(), o.clone(), existing.recreate).await?);
                let about = About {
                    name: o.txn.workload().into(),
                    record: WorkloadRecord::Bank { bank: o.clone() },
                    schema: schema::describe(&session, &o.keyspace).await.unwrap_or_else(|| o.ddl()),
                    schema_requested: o.ddl(),
                    statements: o.statements(),
                    tables: vec![o.txn.table().to_string(); OPS.len()],
                    tables_made: None,
                };
                Prepared::Bank(workload, about)
            }
            Choice::Replay(trace, options) => {
                let (workload, about) = super::replay::prepare(&session, trace, options).await?;
                Prepared::Replay(workload, about)
            }
        })
    }

    /// Runs the profile's populate phase, if it has one; `stop` interrupts it.
    pub async fn populate(
        &self,
        base: &EngineConfig,
        loader: LoaderSlice,
        quiet: bool,
        stop: &Arc<Stop>,
    ) -> Result<()> {
        if let Prepared::Profile(workload, _, Some(how)) = self {
            super::populate::populate(workload, how, base, loader, quiet, stop.clone()).await?;
        }
        Ok(())
    }

    /// Runs `step` with this workload.
    pub async fn run(&self, step: &Step, site: &Site, stop: Arc<Stop>) -> Result<RunResult> {
        match self {
            Prepared::Replay(w, about) => super::replay::run(step, site, w, about, stop).await,
            Prepared::E1(w, about) => match step.validate {
                Some(v) => super::validated::run_validated_e1(step, site, w, about, v, stop).await,
                None => step.run(site, w.clone(), about.clone(), stop).await,
            },
            Prepared::Profile(w, about, _) => {
                let mut result = match step.validate {
                    Some(_) if !w.counts() && !w.claims_rows() && !w.writes_plainly() => bail!(
                        "--validate reads back the built-in insert and batch workloads, counter workloads (every write a counter increment, such as --workload counter), claims (every write conditional, some INSERT … IF NOT EXISTS, such as --workload lwt) and plain writes (INSERTs and UPDATEs without IF or TTL, and single-row DELETEs of whole rows, such as keyvalue or tombstones); {} cannot be read back: {}. Drop --validate",
                        about.name,
                        w.plain_refusal().unwrap_or_default()
                    ),
                    Some(v) => super::validated::run_validated_profile(step, site, w, about, v, stop.clone()).await?,
                    None => step.run(site, w.clone(), about.clone(), stop.clone()).await?,
                };
                if let WorkloadRecord::Profile { definition, .. } = &about.record
                    && ann::has_ann(definition)
                {
                    recall(&mut result, w, definition, &step.out, &stop).await?;
                }
                Ok(result)
            }
            Prepared::Bank(w, about) => {
                if step.validate.is_some() {
                    bail!(
                        "the bank checks its own invariant (audits during the run, every branch after it): drop --validate"
                    );
                }
                let mut result = step.run(site, w.clone(), about.clone(), stop.clone()).await?;
                say(&format!(
                    "Checking the bank: every branch's total at SERIAL ({} branches)",
                    group(w.options.branches() as f64)
                ));
                let mut found = check_bank(w, step.engine.concurrency.min(64), &stop).await?;
                found.stopped |= stop.is_requested();
                result.bank = Some(found);
                result.save(&step.out)?;
                Ok(result)
            }
        }
    }
}

/// Accord came with Cassandra 6.0: the bank's Accord transfers are refused on an older cluster
/// before anything is written (an unknown release passes: the server will say).
pub fn refuse_before_accord(release: Option<&str>) -> Result<()> {
    let major = release
        .and_then(|r| r.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    match (release, major) {
        (Some(r), Some(m)) if m < 6 => bail!(
            "bank-accord runs Accord transactions, which came with Cassandra 6.0; the cluster runs {r}: start one \
             with caplab node start --version 6.0-alpha2 --set accord.enabled=true, or run bank-paxos"
        ),
        _ => Ok(()),
    }
}

/// Measures the recall of the profile's ANN queries after its run (unless it was stopped) and
/// saves it in the step's result.json; a failure is recorded as incomplete, not fatal.
async fn recall(
    result: &mut RunResult,
    workload: &ProfileWorkload,
    profile: &Profile,
    out: &std::path::Path,
    stop: &Arc<Stop>,
) -> Result<()> {
    if stop.is_requested() {
        return Ok(());
    }
    say(&format!(
        "Recall: {} sample queries against the exact neighbours (one scan of the table)",
        ann::DEFAULT_QUERIES
    ));
    let consistency = result.config.client.consistency;
    match ann::measure(workload.session(), profile, ann::DEFAULT_QUERIES, consistency, || {
        stop.is_requested()
    })
    .await
    {
        Ok(r) => result.recall = r,
        Err(e) => result.incomplete.push(super::sinks::Incomplete {
            file: "recall".into(),
            reason: format!("{e:#}"),
        }),
    }
    result.save(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accord_transfers_are_refused_before_6_0_naming_the_release() {
        let e = refuse_before_accord(Some("5.0.9")).unwrap_err().to_string();
        assert!(
            e.contains("the cluster runs 5.0.9") && e.contains("--version 6.0-alpha2"),
            "{e}"
        );
        assert!(refuse_before_accord(Some("6.0-alpha2")).is_ok());
        assert!(
            refuse_before_accord(None).is_ok(),
            "unknown: the server says what it lacks"
        );
    }
}
