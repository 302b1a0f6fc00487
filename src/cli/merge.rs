//! `caplab merge DIR... --out DIR`: one results directory from several loaders' (see `merge`).

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The loaders' results directories (each written by caplab run --loader i/n).
    #[arg(required = true, num_args = 2..)]
    pub dirs: Vec<PathBuf>,
    /// The merged results directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the results already in --out (caplab's files only).
    #[arg(long)]
    pub force: bool,
    /// A label for the merged result and its history record (repeatable), besides the
    /// loaders' own: --label commit=abc123.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::measure::options::parse_label)]
    pub labels: Vec<(String, String)>,
    #[command(flatten)]
    pub history: crate::history::HistoryArgs,
}

/// Exit codes: the merged status's (0 completed, 130 interrupted, 1 failed); 1 also when some
/// seconds were not reported by every loader (the merge is written all the same).
pub fn run(home: &crate::cluster::Home, args: MergeArgs) -> Result<u8> {
    let labels = args.labels.iter().cloned().collect();
    let result = crate::merge::merge(&args.dirs, &args.out, args.force, &labels)?;
    println!("{}", result.render());
    println!("Results: {}", args.out.display());
    super::say_operations(&result);
    super::page_of(&args.out);
    crate::history::record_finished(
        args.history.location(&home.data).as_ref(),
        &args.out,
        &Default::default(),
    );
    let partial = result.merged.as_ref().is_some_and(|m| !m.partial.is_empty());
    Ok(if partial {
        result.exit_code().max(1)
    } else {
        result.exit_code()
    })
}
