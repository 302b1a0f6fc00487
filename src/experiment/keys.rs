//! A file's option keys read as the commands' flags: `key: value` becomes `--key value`, and
//! clap parses the result exactly as `caplab node start`, `run` and `capacity` would, so an
//! experiment takes every flag they take and refuses what they refuse, naming the key.

use anyhow::{Result, bail};
use clap::Parser;
use serde_norway::Value;
use std::collections::BTreeMap;

use crate::capacity::CapacityOptions;
use crate::cluster::options::NodeOptions;
use crate::measure::options::RunOptions;

/// Option keys as in a file: `key: value` for `--key value`, `key: true` for a flag, a list
/// for a flag given several times.
pub type Options = BTreeMap<String, Value>;

/// Keys the experiment sets itself.
const RESERVED: &[&str] = &["out", "force", "hosts", "quiet"];

/// Later maps override earlier ones key by key.
pub fn merged(maps: &[&Options]) -> Options {
    let mut out = Options::new();
    for m in maps {
        for (k, v) in m.iter() {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// `--key value` arguments for option keys.
pub fn to_args(opts: &Options) -> Result<Vec<String>> {
    let mut args = Vec::new();
    for (k, v) in opts {
        if RESERVED.contains(&k.as_str()) {
            bail!("'{k}' is set by the experiment itself; leave it out");
        }
        let flag = format!("--{}", k.replace('_', "-"));
        let mut one = |v: &Value| -> Result<()> {
            match v {
                Value::Bool(true) => args.push(flag.clone()),
                Value::Bool(false) | Value::Null => {}
                Value::Number(n) => args.extend([flag.clone(), n.to_string()]),
                Value::String(s) => args.extend([flag.clone(), s.clone()]),
                other => bail!("{k}: {other:?} is not a value: write a number, a string or true/false"),
            }
            Ok(())
        };
        match v {
            Value::Sequence(items) => items.iter().try_for_each(&mut one)?,
            v => one(v)?,
        }
    }
    Ok(args)
}

#[derive(Parser)]
#[command(name = "node", no_binary_name = true)]
struct NodeArgs {
    #[command(flatten)]
    o: NodeOptions,
}

#[derive(Parser)]
#[command(name = "run", no_binary_name = true)]
struct RunArgs {
    #[command(flatten)]
    o: RunOptions,
}

#[derive(Parser)]
#[command(name = "capacity", no_binary_name = true)]
struct CapacityArgs {
    #[command(flatten)]
    o: CapacityOptions,
}

/// The long flags of `caplab run` (or `capacity`), as keys (`batch_size`).
fn keys_of(capacity: bool) -> Vec<String> {
    use clap::CommandFactory;
    let cmd = if capacity {
        CapacityArgs::command()
    } else {
        RunArgs::command()
    };
    cmd.get_arguments()
        .filter_map(|a| a.get_long())
        .map(|f| f.replace('-', "_"))
        .collect()
}

/// The keys of `opts` that `caplab run` (or `capacity`) takes.
pub fn known(capacity: bool, opts: &Options) -> Options {
    let keys = keys_of(capacity);
    opts.iter()
        .filter(|(k, _)| keys.contains(&k.replace('-', "_")))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Refuses a key of a shared `run:` block (the file's or a variant's) that no measurement
/// takes: a key neither command has, named with the nearest one, or a key only the command no
/// measurement uses has. Each measurement takes the shared keys its command has, so without
/// this a typo would be left out for all of them, and variants compared with nothing changed.
pub fn check_shared(block: &str, opts: &Options, runs: bool, searches: bool) -> Result<()> {
    let (run, capacity) = (keys_of(false), keys_of(true));
    for key in opts.keys() {
        let k = key.replace('-', "_");
        let (in_run, in_capacity) = (run.contains(&k), capacity.contains(&k));
        if (in_run && runs) || (in_capacity && searches) {
            continue;
        }
        if in_run || in_capacity {
            let (command, measurement) = if in_run {
                ("caplab run", "a run")
            } else {
                ("caplab capacity", "a capacity search")
            };
            bail!("{block}: '{key}' is an option of {command}, and no measurement here is {measurement}: leave it out");
        }
        let all = run.iter().chain(&capacity).map(String::as_str);
        bail!(
            "{block}: unknown key '{key}'{} (the keys are the long flags of caplab run and caplab capacity)",
            crate::console::did_you_mean(&k, all)
        );
    }
    Ok(())
}

/// clap's first line names the flag (`--heap`); keys are written without dashes, and an
/// unknown one is named with clap's suggestion as a key.
fn clap_error(e: clap::Error) -> anyhow::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let as_key = |flag: &str| {
        flag.split('=')
            .next()
            .unwrap_or(flag)
            .trim_start_matches('-')
            .replace('-', "_")
    };
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg)
    {
        let hint = match e.get(ContextKind::SuggestedArg) {
            Some(ContextValue::String(s)) => format!(": did you mean '{}'?", as_key(s)),
            _ => String::new(),
        };
        return anyhow::anyhow!("unknown key '{}'{hint}", as_key(flag));
    }
    let text = e.to_string();
    let first = text
        .lines()
        .next()
        .unwrap_or(&text)
        .trim_start_matches("error: ")
        .to_string();
    anyhow::anyhow!("{first}")
}

pub fn parse_node(opts: &Options) -> Result<NodeOptions> {
    let o = NodeArgs::try_parse_from(to_args(opts)?).map_err(clap_error)?.o;
    o.check()?;
    Ok(o)
}

/// A run's own local node options have no place in an experiment: its nodes are the variants'.
fn refuse_local_node(node: &crate::cluster::options::LocalNode) -> Result<()> {
    anyhow::ensure!(
        !node.given(),
        "version, jars, set, restart and wipe choose a single run's local node; an experiment's steps run on their \
         variant's fresh nodes: put version, jars and set under node: (of the file or a variant)"
    );
    Ok(())
}

/// A run's options (`caplab run`'s flags).
pub fn parse_run(opts: &Options) -> Result<RunOptions> {
    let o = RunArgs::try_parse_from(to_args(opts)?).map_err(clap_error)?.o;
    crate::measure::options::resolve_warmup(o.warmup, o.warmup_max)?;
    refuse_local_node(&o.common.node)?;
    Ok(o)
}

/// A capacity search's options (`caplab capacity`'s flags), with its service level.
pub fn parse_capacity(opts: &Options) -> Result<CapacityOptions> {
    let o = CapacityArgs::try_parse_from(to_args(opts)?).map_err(clap_error)?.o;
    if o.common.sla.sla.is_none() {
        bail!("a capacity search needs a service level: add sla: 'p99.9<100ms/10s'");
    }
    crate::measure::options::resolve_warmup(o.warmup, o.warmup_max)?;
    refuse_local_node(&o.common.node)?;
    Ok(o)
}
